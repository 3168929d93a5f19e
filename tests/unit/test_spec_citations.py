"""The code's citations of the spec point at docs/spec.md.

``SPEC §N`` in a docstring or comment of the package, the tests or the benchmarks means
section N of ``docs/spec.md`` (the project's own copy of the contract, kept current).  Each
cited section must exist there, so a renumbered or removed section shows up here.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "docs" / "spec.md"
CITATION = re.compile(r"SPEC (§\d+(?:\s*,\s*§\d+)*)")


def sections() -> set[int]:
    return {int(m[1]) for m in re.finditer(r"^## (\d+)\. ", SPEC.read_text(), re.MULTILINE)}


def test_the_spec_has_its_sections() -> None:
    assert sections() >= set(range(1, 11))


def test_every_citation_names_a_section_of_the_spec() -> None:
    known = sections()
    cited: list[tuple[str, int]] = []
    for d in ("tmuxlocd", "tests", "bench"):
        for path in sorted((ROOT / d).rglob("*.py")):
            for m in CITATION.finditer(path.read_text()):
                cited += [(str(path.relative_to(ROOT)), int(n)) for n in re.findall(r"\d+", m[1])]
    assert len(cited) > 20  # the package cites it throughout
    assert [c for c in cited if c[1] not in known] == []


def test_the_package_says_where_the_spec_is() -> None:
    import tmuxlocd

    assert tmuxlocd.__doc__ is not None and "docs/spec.md" in tmuxlocd.__doc__
