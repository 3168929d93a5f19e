"""The shell examples of README.md and docs/, as the pages show them.

Every fenced block whose language is ``sh``, ``bash`` or ``console`` is an example, and the
line before it says what the tests do with it: ``<!-- example: run -->`` or ``<!-- example:
not run: <why> -->``.  A run example may be followed by a block marked ``<!-- output -->``:
the output the page shows, compared with what the example printed (ids, numbers, names and
layouts taken as any).  In a ``console`` block the lines that start with ``$ `` are the
commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHELLS = ("sh", "bash", "console")
_MARK = re.compile(r"^<!-- example: (run|not run: (?P<why>.+?)) -->$")


@dataclass(frozen=True)
class Example:
    page: str  # relative to the repository
    line: int  # of the opening fence
    language: str
    text: str
    run: bool
    why: str  # why not run ("" when run, or unmarked)
    marked: bool
    output: str | None  # the page's output, when it shows one

    @property
    def ident(self) -> str:
        return f"{self.page}:{self.line}"

    def commands(self) -> str:
        """The script to run: a console block's ``$`` lines, a shell block whole."""
        if self.language != "console":
            return self.text
        return "\n".join(line[2:] for line in self.text.splitlines() if line.startswith("$ "))


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples(page: Path) -> list[Example]:
    lines = page.read_text().splitlines()
    out: list[Example] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("```"):
            i += 1
            continue
        language = line[3:].strip()
        end = i + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        body = "\n".join(lines[i + 1 : end]) + "\n"
        if language in SHELLS:
            before = _previous(lines, i)
            mark = _MARK.match(before)
            output = _output_after(lines, end + 1)
            out.append(
                Example(
                    page=str(page.relative_to(ROOT)),
                    line=i + 1,
                    language=language,
                    text=body,
                    run=bool(mark and mark.group(1) == "run"),
                    why=(mark.group("why") or "") if mark else "",
                    marked=mark is not None,
                    output=output,
                )
            )
        i = end + 1
    return out


def _previous(lines: list[str], i: int) -> str:
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    return lines[j].strip() if j >= 0 else ""


def _output_after(lines: list[str], j: int) -> str | None:
    while j < len(lines) and not lines[j].strip():
        j += 1
    if j >= len(lines) or lines[j].strip() != "<!-- output -->":
        return None
    j += 1
    while j < len(lines) and not lines[j].strip():
        j += 1
    if j >= len(lines) or not lines[j].startswith("```"):
        return None
    end = j + 1
    while end < len(lines) and not lines[end].startswith("```"):
        end += 1
    return "\n".join(lines[j + 1 : end]) + "\n"


# What may differ between the page's output and a run: ids, numbers, names, layouts.
_WILD = [
    (re.compile(r"\b[0-9a-f]{4},\d+x\d+,\d+,\d+\S*"), "<layout>"),
    (re.compile(r'"[^"]*"'), '"<name>"'),
    (re.compile(r"(session) \S+,"), r"\1 <name>,"),
    (re.compile(r"[%@$]\d+"), "<id>"),
    (re.compile(r"\d+"), "<n>"),
]


def shape(text: str) -> list[str]:
    """``text`` with what may differ replaced, line by line, trailing blanks dropped."""
    out = []
    for line in text.rstrip("\n").splitlines():
        for pattern, repl in _WILD:
            line = pattern.sub(repl, line)
        out.append(line.rstrip())
    return out


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def links(page: Path) -> list[tuple[int, str]]:
    """The relative links of a page (outside code blocks), with their line numbers."""
    found = []
    fence = False
    for n, line in enumerate(page.read_text().splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        for m in _LINK.finditer(line):
            target = m.group(1)
            if not target.startswith(("http://", "https://", "mailto:")):
                found.append((n, target))
    return found


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings."""
    out = set()
    fence = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        title = line.lstrip("#").strip().lower()
        title = re.sub(r"[^\w\- ]", "", title)
        out.add(title.replace(" ", "-"))
    return out
