"""``python -m bench.context`` rewrites its tables and keeps the end-to-end sections."""

from __future__ import annotations

from bench.context import with_end_to_end


def test_the_end_to_end_sections_are_kept() -> None:
    before = "# old\n\n| a |\n\n## End to end: Codex\n\n| x |\n\n## End to end: more\n"
    assert with_end_to_end("# new\n\n| b |\n", before) == (
        "# new\n\n| b |\n\n## End to end: Codex\n\n| x |\n\n## End to end: more\n"
    )


def test_without_them_the_new_tables_alone() -> None:
    assert with_end_to_end("# new\n", "# old\n\n## 10 panes\n") == "# new\n"
    assert with_end_to_end("# new\n", "") == "# new\n"
