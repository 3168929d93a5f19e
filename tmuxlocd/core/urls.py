"""The spelling of the daemon's URLs (SPEC §4): ids, query strings, the fast paths' targets.

Pure and standard library only, with nothing imported at load time: ``tmuxlocd notify`` runs
from tmux hooks and ``tmuxlocd context`` from harness hooks, both started with as little as
possible; the typed clients' core (``tmuxlocd.core.client_core``) spells its requests here too.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a hook started with python -S pays for every import
if TYPE_CHECKING:
    from collections.abc import Mapping

_SIGILS = {"pane": "%", "window": "@", "session": "$"}


def url_id(value: str, kind: str) -> str:
    """``self``, or the bare number of a ``kind`` id written ``%3`` or ``3`` (``@``/``$`` for
    windows and sessions): what a URL carries, since a literal ``%`` there would have to be
    written ``%25``.  Raises ValueError for anything else."""
    if value == "self":
        return value
    sigil = _SIGILS[kind]
    number = value.removeprefix(sigil)
    # str.isdigit() accepts other scripts' digits; the daemon's ids are ASCII.
    # At most 9 digits, as the daemon reads (a longer one is no id of tmux's).
    if not (number.isascii() and number.isdigit() and len(number) <= 9):
        shown = value if len(value) <= 40 else f"{value[:40]}... ({len(value)} characters)"
        raise ValueError(f"not a {kind} id: {shown!r} (expected self, {sigil}N or N)")
    return number


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_UNRESERVED_OR_COMMA = _UNRESERVED | {ord(",")}


def percent_encode(value: str, *, comma: bool = False) -> str:
    """A query value, percent-encoded byte by byte (urllib.parse costs more to import).
    ``comma`` keeps commas as they are, for lists such as ``types=a,b``."""
    keep = _UNRESERVED_OR_COMMA if comma else _UNRESERVED
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in value.encode("utf-8", "replace"))


def query_string(params: Mapping[str, str | None], *, comma: bool = False) -> str:
    pairs = [f"{k}={percent_encode(v, comma=comma)}" for k, v in params.items() if v is not None]
    return "?" + "&".join(pairs) if pairs else ""


def self_target(
    *,
    text: bool = False,
    turn: int | None = None,
    neighbors: bool = False,
    fresh: bool = False,
    accept_ancestor: bool = False,
    session: str = "",
    bind: bool = False,
) -> str:
    """The target of ``GET /v1/self``: the question the fast paths ask most, spelt here once
    for them and for the typed clients."""
    return "/v1/self" + query_string(
        {
            "format": "text" if text else None,
            "turn": str(turn) if turn is not None else None,
            "neighbors": "1" if neighbors else None,
            "fresh": "1" if fresh else None,
            "accept": "ancestor" if accept_ancestor else None,
            "session": session or None,
            "bind": "1" if bind and session else None,
        }
    )


def notify_target(hook: str | None, server: str | None, target: str | None) -> str:
    """The target of ``POST /v1/notify``, its fields in the query so that a hook job needs no
    JSON encoder.  An empty value is left out: it names nothing."""
    return "/v1/notify" + query_string(
        {"hook": hook or None, "server": server or None, "target": target or None}
    )


SESSION_KEY_MAX = 256


def session_key(harness: str, session: str) -> str:
    """``<harness>:<session id>``, the ``session`` of ``GET /v1/self`` (spec §2), or "" when
    it cannot be spelt so (an id of other than printable ASCII, or too long): the question is
    then asked without it."""
    key = f"{harness}:{session}"
    if not session or len(key) > SESSION_KEY_MAX:
        return ""
    if not all("\x21" <= c <= "\x7e" for c in session):
        return ""
    return key
