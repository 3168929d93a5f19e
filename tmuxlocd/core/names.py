"""Decoding of the names tmux keeps for windows and sessions.

tmux stores every window name (``window_set_name``) and session name (``session_check_name``)
through ``utf8_stravis(..., VIS_OCTAL | VIS_CSTYLE | VIS_TAB | VIS_NL)``, so the names in its
output and notifications never hold a raw control character.  The encoder, ``utf8_strvis``
with the OpenBSD ``vis()`` tmux bundles, writes:

* valid UTF-8 sequences and printable ASCII (space included) unchanged;
* ``\\`` as ``\\\\``;
* TAB, LF, CR, BS, BEL, VT, FF as ``\\t \\n \\r \\b \\a \\v \\f`` (and NUL as ``\\0``, though a C
  string cannot hold one);
* every other byte (other control characters, DEL, bytes of invalid UTF-8) as ``\\ooo``;
* on tmux 3.3a only, ``$`` before a letter, ``_`` or ``{`` as ``\\$`` (3.4+ leaves ``$`` alone).

Two changes are not reversible and are not undone here: session names have ``.`` and ``:``
replaced by ``_``, and rename-window, rename-session and ``new-window -n`` format-expand the
name they are given (``#{...}``) before storing it.

tmux 3.4 and later also pass every line of command output through vis() once more, with
``VIS_OCTAL | VIS_CSTYLE | VIS_NOSLASH`` (``server_client_print``).  For a stored name that
changes nothing (it holds no control character, and backslashes are left alone) except on 3.4,
whose vis writes ``\\$`` before a letter, ``_`` or ``{`` whatever the flags: there the output
of a name stored as ``\\$HOME`` reads ``\\\\$HOME``.  ``undo_output_dollars`` removes that layer;
``output_escapes_dollars`` tells from ``#{version}`` whether a server adds it.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["output_escapes_dollars", "undo_output_dollars", "unvis"]

# One escape as tmux writes it.  Three octal digits are tried first so that \012 is a byte and
# not \0 followed by "12"; the first digit is at most 3 because a byte is at most \377.
_ESCAPE: Final = re.compile(rb"\\([0-3][0-7][0-7]|[ntrbavfs0\\$])")

_CSTYLE: Final = {
    b"n": b"\n",
    b"t": b"\t",
    b"r": b"\r",
    b"b": b"\b",
    b"a": b"\a",
    b"v": b"\v",
    b"f": b"\f",
    b"s": b" ",
    b"0": b"\0",
    b"\\": b"\\",
    b"$": b"$",
}


def _unescape(match: re.Match[bytes]) -> bytes:
    escape = match[1]
    plain = _CSTYLE.get(escape)
    return plain if plain is not None else bytes((int(escape, 8),))


def unvis(s: str) -> str:
    """The name a user gave, from the vis-encoded form tmux prints.

    Decoding works on bytes, because an octal escape may stand for one byte of a multi-byte
    character.  Bytes that do not form valid UTF-8 after decoding (tmux accepts any bytes in a
    name) become U+FFFD, so the result always encodes as UTF-8 and as JSON.  A backslash that
    starts no escape tmux writes is kept as it is.
    """
    if "\\" not in s:
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates, from a caller other than our parser
            pass
        else:
            return s
    # surrogatepass: a lone surrogate becomes three bytes that the final decode replaces.
    raw = _ESCAPE.sub(_unescape, s.encode("utf-8", "surrogatepass"))
    return raw.decode("utf-8", "replace")


# The backslash tmux 3.4 puts before `$` in output: the rule looks at the next byte with
# isalpha() (ASCII letters in a UTF-8 locale), or `_` or `{`.
_OUTPUT_DOLLAR: Final = re.compile(r"\\(?=\$[A-Za-z_{])")
_VERSION: Final = re.compile(r"([0-9]+)\.([0-9]+)")


def output_escapes_dollars(version: str) -> bool:
    """Does a tmux whose ``#{version}`` is ``version`` add ``\\`` before ``$`` in output?

    Only 3.4: 3.3 prints command output as it is, and from 3.5 on the rule applies only with
    ``VIS_DQ``, which output does not use.
    """
    match = _VERSION.search(version)
    return match is not None and (int(match[1]), int(match[2])) == (3, 4)


def undo_output_dollars(line: str) -> str:
    """A line of tmux 3.4 command output as tmux meant it, before ``unvis`` of its names.

    3.4 adds exactly one backslash before each ``$`` that precedes a letter, ``_`` or ``{``,
    and leaves every other backslash as it is (``VIS_NOSLASH``), so the backslash just before
    such a ``$`` is always the added one.  Ids (``$3``), numbers and layouts hold no such ``$``.
    """
    if "$" not in line:
        return line
    return _OUTPUT_DOLLAR.sub("", line)
