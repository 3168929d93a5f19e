"""``tmuxlocd --help`` and docs/cli.md agree: the page's synopsis is the parser's own usage of
each subcommand, written by this test (``TMUXLOCD_WRITE_DOCS=1 pytest tests/docs``) and
compared on every run, so a flag added, renamed or dropped shows here first."""

from __future__ import annotations

import argparse
import os
import re

from tests.docs.markdown import ROOT
from tmuxlocd.clients.cli import build_parser

PAGE = ROOT / "docs" / "cli.md"
BEGIN = "<!-- synopsis: written from the parser by tests/docs/test_cli_synopsis.py -->"
END = "<!-- end of synopsis -->"


def synopsis() -> str:
    """Each subcommand's usage line, as ``tmuxlocd <command> --help`` prints it (the
    terminal's width fixed, so that the text is the same everywhere)."""
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parser = build_parser()
        lines = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    usage = sub.format_usage().removeprefix("usage: ").rstrip()
                    lines.append(re.sub(r"\n\s+", "\n    ", usage))
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before
    return "```\n" + "\n".join(lines) + "\n```"


def test_the_pages_synopsis_is_the_parsers() -> None:
    text = PAGE.read_text()
    assert BEGIN in text and END in text, f"{PAGE} has no synopsis markers"
    head, _, rest = text.partition(BEGIN)
    current, _, tail = rest.partition(END)
    want = "\n" + synopsis() + "\n"
    if os.environ.get("TMUXLOCD_WRITE_DOCS") == "1":
        PAGE.write_text(head + BEGIN + want + END + tail)
        return
    assert current == want, (
        "docs/cli.md's synopsis differs from the parser's: "
        "TMUXLOCD_WRITE_DOCS=1 pytest tests/docs/test_cli_synopsis.py writes it"
    )


def test_every_subcommand_has_its_help_on_the_page() -> None:
    parser = build_parser()
    names = [
        name
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for name in action.choices
    ]
    assert len(names) > 10
    text = PAGE.read_text()
    assert all(f"tmuxlocd {name}" in text for name in names)
