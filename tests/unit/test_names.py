"""Tests of unvis(): fixed cases, a model of tmux's encoder (checked against real tmux in
tests/integration/test_names_live.py) for round-trip properties, and names captured from a
control client."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core.names import output_escapes_dollars, undo_output_dollars, unvis
from tmuxlocd.core.protocol import ControlParser, Reply, SessionRenamed, WindowRenamed

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "data" / "transcripts"

_CSTYLE = {
    0x07: "\\a",
    0x08: "\\b",
    0x09: "\\t",
    0x0A: "\\n",
    0x0B: "\\v",
    0x0C: "\\f",
    0x0D: "\\r",
}


def tmux_vis(raw: bytes, *, dollar_rule: bool = True, escape_utf8: bool = False) -> str:
    """A model of tmux's utf8_strvis(VIS_OCTAL | VIS_CSTYLE | VIS_TAB | VIS_NL).

    ``dollar_rule``: 3.3a and 3.4 write ``\\$`` before a letter, ``_`` or ``{``.  ``escape_utf8``
    escapes every non-ASCII byte, as tmux does for bytes that are not valid UTF-8 (and for
    characters its wcwidth() rejects).  Names hold no NUL, so the model has no ``\\0``.
    """
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c >= 0x80 and not escape_utf8:
            for size in (2, 3, 4):
                try:
                    out.append(raw[i : i + size].decode("utf-8"))
                except UnicodeDecodeError:
                    continue
                i += size
                break
            else:
                out.append(f"\\{c:03o}")
                i += 1
            continue
        if c == 0x24 and i + 1 < len(raw):
            after = raw[i + 1 : i + 2]
            escaped = dollar_rule and (after.isalpha() or after in (b"_", b"{"))
            out.append("\\$" if escaped else "$")
        elif c == 0x5C:
            out.append("\\\\")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        elif c in _CSTYLE:
            out.append(_CSTYLE[c])
        else:
            out.append(f"\\{c:03o}")
        i += 1
    return "".join(out)


@pytest.mark.parametrize(
    ("stored", "name"),
    [
        ("plain", "plain"),
        ("", ""),
        ("tab\\there", "tab\there"),
        ("nl\\nhere", "nl\nhere"),
        ("\\r\\b\\a\\v\\f\\s", "\r\b\a\v\f "),
        ("esc\\033x del\\177x", "esc\x1bx del\x7fx"),
        ("back\\\\slash", "back\\slash"),
        ("\\\\t is not a tab", "\\t is not a tab"),
        ("\\$HOME \\${x} \\$_y $1 $", "$HOME ${x} $_y $1 $"),
        ("\\\\\\$x", "\\$x"),
        ("ü日本 'sq' \"dq\" ; %p", "ü日本 'sq' \"dq\" ; %p"),
        ("\\303\\274", "ü"),  # a character written as the octal escapes of its bytes
        ("\\344日", "\ufffd日"),  # a lone lead byte
        ("bad\\377byte", "bad\ufffdbyte"),
        ("\\0", "\0"),
        ("\\012", "\n"),  # three octal digits win over \0
        ("\\0x", "\0x"),
        ("\\400 \\q \\", "\\400 \\q \\"),  # not written by tmux: kept as they are
        ("trailing space ", "trailing space "),
    ],
)
def test_unvis(stored: str, name: str) -> None:
    assert unvis(stored) == name


def test_unvis_without_escapes_is_the_same_object() -> None:
    name = "no escapes here, 日本"
    assert unvis(name) is name


def test_unvis_result_is_always_encodable() -> None:
    # A str that did not come from our parser may hold lone surrogates.
    assert unvis("a\udcffb") == "a\ufffd\ufffd\ufffdb"
    assert unvis("a\\tb\ud800") == "a\tb\ufffd\ufffd\ufffd"


_NAME_CHARS = st.characters(codec="utf-8", exclude_characters="\0")


@given(st.text(_NAME_CHARS, max_size=60), st.booleans(), st.booleans())
def test_unvis_inverts_tmux_vis(name: str, dollar_rule: bool, escape_utf8: bool) -> None:
    stored = tmux_vis(name.encode(), dollar_rule=dollar_rule, escape_utf8=escape_utf8)
    assert not re.search(r"[\x00-\x1f\x7f]", stored)
    assert unvis(stored) == name


@pytest.mark.parametrize(
    ("version", "adds"),
    [
        ("tmux 3.4", True),
        ("3.4", True),
        ("tmux 3.3a", False),
        ("3.5a", False),
        ("3.5", False),
        ("tmux 3.2", False),
        ("next-3.6", False),
        ("", False),
    ],
)
def test_output_escapes_dollars(version: str, adds: bool) -> None:
    assert output_escapes_dollars(version) is adds


@pytest.mark.parametrize(
    ("printed", "line"),
    [
        ("\\\\$HOME \\\\${x} \\\\$_y $1 $", "\\$HOME \\${x} \\$_y $1 $"),
        ("a\\\\\\\\$b", "a\\\\\\$b"),  # a name `a\$b`: stored `a\\\$b`
        ("W\t$3\t@4\t0\tx\\\\$y", "W\t$3\t@4\t0\tx\\$y"),  # ids keep their `$`
        ("no dollar \\\\ here", "no dollar \\\\ here"),
        ("$", "$"),
        ("\\\\$1", "\\\\$1"),  # not a `$` the rule escapes
    ],
)
def test_undo_output_dollars(printed: str, line: str) -> None:
    assert undo_output_dollars(printed) == line


@given(st.text(_NAME_CHARS, max_size=60), st.booleans())
def test_names_printed_by_tmux_3_4_decode(name: str, escape_utf8: bool) -> None:
    stored = tmux_vis(name.encode(), dollar_rule=True, escape_utf8=escape_utf8)
    assert decoded(as_printed(stored, "3.4"), "3.4") == name


@given(st.binary(max_size=60).map(lambda b: b.replace(b"\0", b"")))
def test_unvis_of_any_bytes_is_their_utf8_with_replacement(raw: bytes) -> None:
    assert unvis(tmux_vis(raw)) == raw.decode("utf-8", "replace")


@given(st.text(max_size=60))
def test_unvis_never_fails_and_always_encodes(text: str) -> None:
    msgspec.json.encode(unvis(text))


# --- names from a real control client ---------------------------------------------------------


def test_names_transcript() -> None:
    expected = json.loads((TRANSCRIPTS / "names.expected.json").read_text())
    window_names: list[str] = expected["window_names"]
    session_names = [n.replace(".", "_").replace(":", "_") for n in expected["session_names"]]
    parser = ControlParser()
    parser.receive_data((TRANSCRIPTS / "names.bin").read_bytes())
    parser.receive_data(b"")
    events = parser.events()

    renamed = [e for e in events if isinstance(e, WindowRenamed)]
    assert [unvis(e.name) for e in renamed if e.window_id == "@0"] == window_names
    assert [(e.unlinked, unvis(e.name)) for e in renamed if e.window_id == "@1"] == [
        (True, window_names[0])
    ]
    sessions = [unvis(e.name) for e in events if isinstance(e, SessionRenamed)]
    assert sessions == session_names

    rows = [row.split("\t") for e in events if isinstance(e, Reply) for row in e.lines]
    decoded = {key: unvis(value) for key, value in rows}
    assert decoded == {
        "@0": window_names[-1],
        "@1": window_names[0],
        "$0": "A",
        "$1": session_names[-1],
    }


# --- against real tmux ------------------------------------------------------------------------

HOSTILE_NAMES = [
    "tab\there",
    "nl\nhere",
    "cr\rbs\bbel\avt\vff\f",
    "esc\x1bx del\x7fx c1\x01\x1f",
    "back\\slash \\t \\033 \\\\",
    "quotes 'sq' \"dq\" `bq`",
    "$HOME ${x} $_y $1 $ end$",
    "CJK 日本語 中文 한국어 ü",
    "trailing space ",
    " leading space",
    "semi ; colon : dot .",
    "bad\udcffbyte",  # surrogateescape: a raw 0xff byte in argv
    ("block\t\\$x日本 " * 700)[:10000],
]


def as_printed(stored: str, version: str) -> str:
    """A stored name as a command prints it.  3.4 passes output through vis() again, which
    leaves backslashes alone but writes ``\\$`` before a letter, ``_`` or ``{`` once more."""
    if output_escapes_dollars(version):
        return re.sub(r"\$(?=[A-Za-z_{])", r"\\$", stored)
    return stored


def decoded(printed: str, version: str) -> str:
    """What the daemon makes of a printed name."""
    return unvis(undo_output_dollars(printed) if output_escapes_dollars(version) else printed)
