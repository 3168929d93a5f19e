"""The parameters of each endpoint: one Struct per endpoint, decoded once per request.

A query Struct's fields are the endpoint's parameters, in the order they are checked; their
types say how a string of the URL is read: ``bool`` is a flag (``1``/``true``/``yes``/``on``,
empty, or ``0``/``false``/``no``/``off``), ``int`` with ``Meta(ge=, le=)`` a decimal in that
range, a ``Literal`` one of its values, and a ``Meta(extra={"decode": f})`` its own reading.
A bad value is a 400 whose code names the field (``bad_limit``; ``bad_pane_id`` for ids), and
the same Structs give the OpenAPI document its parameters.  Fields named in ``path_params``
come from the path, every other from the query string; unknown parameters are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import UnionType
from typing import (
    Annotated,
    Any,
    ClassVar,
    Generic,
    Literal,
    NoReturn,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

import msgspec
from msgspec import Meta

from tmuxlocd.core.activity import WAIT_DEFAULT_S, WAIT_MAX_S
from tmuxlocd.core.agent_view import Harness
from tmuxlocd.core.events import STREAM_TYPES, ActivityType, ChangeType
from tmuxlocd.core.layout import Direction
from tmuxlocd.daemon.api.errors import ApiError, clip

LIMIT_DEFAULT = 100
LIMIT_MAX = 1000
_BIG = 10**9

_NUMBER = r"[0-9]{1,9}"
_ID_RES = {
    "pane": (re.compile(rf"%?({_NUMBER})"), "%"),
    "window": (re.compile(rf"@?({_NUMBER})"), "@"),
    "session": (re.compile(rf"\$?({_NUMBER})"), "$"),
}
_TARGET_RE = re.compile(rf"[%@$]?{_NUMBER}")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")

Decode = Callable[[str, str], Any]  # (field name, the URL's string) -> value, or ApiError


def bad(param: str, value: str, expected: str) -> NoReturn:
    raise ApiError(400, f"bad_{param}", f"bad {param} {clip(value)!r}: expected {expected}")


def parse_id(value: str, kind: Literal["pane", "window", "session"]) -> str:
    """``3``/``%3`` -> ``%3`` (and ``@``/``$`` likewise); ``self`` stays ``self``."""
    if value == "self":
        return value
    pattern, sigil = _ID_RES[kind]
    m = pattern.fullmatch(value)
    if m is None:
        raise ApiError(
            400,
            f"bad_{kind}_id",
            f"bad {kind} id {clip(value)!r}: expected a number, {sigil}N or self",
        )
    return f"{sigil}{int(m.group(1))}"


# ----------------------------------------------------------------------------------------------
# Values with a reading of their own.


def _server(name: str, value: str) -> str:
    if not value or "\0" in value:
        bad(name, value, "a socket path, a -L name or self")
    return value


def _notify_server(name: str, value: str) -> str:
    if not value or "\0" in value:
        bad(name, value, "a socket path or a -L name")
    return value


def _target(name: str, value: str) -> str:
    if value and _TARGET_RE.fullmatch(value) is None:
        bad(name, value, "a pane, window or session id")
    return value


def _types(name: str, value: str) -> frozenset[str]:
    names = [t.strip() for t in value.split(",") if t.strip()]
    for each in names:
        if each not in STREAM_TYPES:
            bad(name, each, "a comma list of " + ", ".join(sorted(STREAM_TYPES)))
    return frozenset(names)


def _seconds(name: str, value: str) -> float:
    # Decimal ASCII only (float() would take "nan", "1e3" and other scripts' digits).
    head, _, tail = value.partition(".")
    if not (
        value.isascii() and head.isdigit() and (not tail or tail.isdigit()) and len(value) < 16
    ):
        bad(name, value, f"a number of seconds from 0 to {WAIT_MAX_S:g}")
    seconds = float(value)
    if seconds > WAIT_MAX_S:
        bad(name, value, f"a number of seconds from 0 to {WAIT_MAX_S:g}")
    return seconds


def _pane_id(_name: str, value: str) -> str:
    return parse_id(value, "pane")


def _window_id(_name: str, value: str) -> str:
    return parse_id(value, "window")


def _session_id(_name: str, value: str) -> str:
    return parse_id(value, "session")


_IN_URL = "(in a URL % is written %25)"
PaneId = Annotated[
    str,
    Meta(
        pattern=r"^(self|%?[0-9]{1,9})$",
        description=f"a pane id: N, %N or self {_IN_URL}",
        extra={"decode": _pane_id},
    ),
]
WindowId = Annotated[
    str,
    Meta(
        pattern=r"^(self|@?[0-9]{1,9})$",
        description="a window id: N, @N or self",
        extra={"decode": _window_id},
    ),
]
SessionId = Annotated[
    str,
    Meta(
        pattern=r"^(self|\$?[0-9]{1,9})$",
        description="a session id: N, $N or self",
        extra={"decode": _session_id},
    ),
]
Server = Annotated[
    str,
    Meta(
        description="a watched server: its socket path, its -L name, or self",
        extra={"decode": _server},
    ),
]
NotifyServer = Annotated[
    str, Meta(description="a socket path or a -L name", extra={"decode": _notify_server})
]
Target = Annotated[
    str, Meta(description="the hook's pane, window or session id", extra={"decode": _target})
]
ChangeTypes = Annotated[
    frozenset[ChangeType | ActivityType],
    Meta(
        description="comma list of the event types to send (default: every type but "
        "pane.activity and agent.state, which a stream gets only when it names them)",
        extra={"decode": _types},
    ),
]
Turn = Annotated[
    int, Meta(ge=0, le=_BIG, description="text form: label the first line with this turn")
]
Flag = Annotated[bool, Meta(description="1, true, yes, on (or empty); 0, false, no, off")]
Fresh = Annotated[bool, Meta(description="re-sync first, as POST /v1/sync")]
WithActivity = Annotated[
    bool, Meta(description="fill in each pane's command and busy, read now (/proc)")
]
Accept = Annotated[
    Literal["ancestor"],
    Meta(description="ancestor: take the pane of the nearest ancestor with a tty as self"),
]
JsonOnly = Literal["json"]
JsonOrText = Literal["json", "text"]


# ----------------------------------------------------------------------------------------------
# The queries, one per endpoint.


class Query(msgspec.Struct, frozen=True, kw_only=True):
    """Base of the query Structs: fields named here come from the path."""

    path_params: ClassVar[tuple[str, ...]] = ()


class NoQuery(Query, frozen=True, kw_only=True):
    pass


SessionKey = Annotated[
    str,
    Meta(
        min_length=3,
        max_length=256,
        pattern=r"^[a-z][a-z0-9-]*:[\x21-\x7e]+$",
        description="<harness>:<session id>, printable ASCII",
    ),
]


class SelfQuery(Query, frozen=True, kw_only=True):
    accept: Accept | None = None
    format: JsonOrText | None = None
    turn: Turn | None = None
    neighbors: Flag = False
    fresh: Fresh = False
    # A harness session (``<harness>:<session id>``) the caller asks for: below a shared
    # server, placed by the one client that session is bound to (spec §2); ``bind`` at the
    # session's start binds it anew.
    session: SessionKey | None = None
    bind: Flag = False


class PaneQuery(Query, frozen=True, kw_only=True):
    path_params = ("pane",)
    accept: Accept | None = None
    format: JsonOrText | None = None
    turn: Turn | None = None
    neighbors: Flag = False
    fresh: Fresh = False
    pane: PaneId
    server: Server | None = None


class PanesQuery(Query, frozen=True, kw_only=True):
    accept: Accept | None = None
    format: JsonOnly | None = None
    limit: Annotated[int, Meta(ge=0, le=LIMIT_MAX)] = LIMIT_DEFAULT
    offset: Annotated[int, Meta(ge=0, le=_BIG)] = 0
    detail: Literal["full", "summary"] | None = None
    activity: WithActivity = False
    fresh: Fresh = False
    server: Server | None = None
    window: WindowId | None = None
    session: SessionId | None = None


class NeighborsQuery(Query, frozen=True, kw_only=True):
    path_params = ("pane", "direction")
    accept: Accept | None = None
    format: JsonOnly | None = None
    direction: Direction | None = None
    fresh: Fresh = False
    pane: PaneId
    server: Server | None = None


class TreeQuery(Query, frozen=True, kw_only=True):
    accept: Accept | None = None
    format: JsonOnly | None = None
    activity: WithActivity = False
    fresh: Fresh = False
    server: Server | None = None


class HealthQuery(Query, frozen=True, kw_only=True):
    format: JsonOnly | None = None


class SyncQuery(Query, frozen=True, kw_only=True):
    accept: Accept | None = None
    server: Server | None = None


class NotifyQuery(Query, frozen=True, kw_only=True):
    """Also the JSON body's fields (SPEC §4): the body's win over the query's."""

    hook: str | None = None
    target: Target | None = None
    server: NotifyServer | None = None


class NotifyBody(msgspec.Struct, frozen=True, kw_only=True):
    hook: str | None = None
    server: str | None = None
    target: str | None = None


class EventsQuery(Query, frozen=True, kw_only=True):
    accept: Accept | None = None
    format: Literal["sse", "ndjson", "text"] | None = None
    types: ChangeTypes | None = None
    min_interval_ms: Annotated[int, Meta(ge=0, le=3_600_000)] | None = None
    turn: Turn | None = None
    neighbors: Flag = False
    server: Server | None = None
    pane: PaneId | None = None
    window: WindowId | None = None
    session: SessionId | None = None
    since: Annotated[str, Meta(description="resume after this event id (or Last-Event-ID)")] | (
        None
    ) = None


# The pane's activity (``activity.Until``), or its agent's state (SPEC §13).
WaitUntil = Literal["idle", "busy", "exit", "change", "agent-idle", "agent-waiting"]


class WaitQuery(Query, frozen=True, kw_only=True):
    path_params = ("pane",)
    accept: Accept | None = None
    until: WaitUntil = "idle"
    timeout_s: Annotated[
        float,
        Meta(
            ge=0,
            le=WAIT_MAX_S,
            description=f"give up after this many seconds (default {WAIT_DEFAULT_S:g})",
            extra={"decode": _seconds},
        ),
    ] = WAIT_DEFAULT_S
    pane: PaneId
    server: Server | None = None


def _short(name: str, value: str) -> str:
    if len(value) > 512 or "\0" in value or "\n" in value:
        bad(name, value, "one line of at most 512 characters")
    return value


ShortText = Annotated[
    str, Meta(description="one line, at most 512 characters", extra={"decode": _short})
]
AgentStateName = Literal["working", "waiting", "idle"]


class AgentsQuery(Query, frozen=True, kw_only=True):
    accept: Accept | None = None
    format: JsonOnly | None = None
    state: AgentStateName | None = None
    server: Server | None = None
    window: WindowId | None = None
    session: SessionId | None = None
    pane: PaneId | None = None


class AgentReportQuery(Query, frozen=True, kw_only=True):
    """Also the JSON body's fields (SPEC §13): the body's win over the query's."""

    harness: Harness | None = None
    session_id: ShortText | None = None
    event: ShortText | None = None
    state: Literal["working", "waiting", "idle", "gone"] | None = None
    reason: ShortText | None = None


class AgentReportBody(msgspec.Struct, frozen=True, kw_only=True):
    harness: str | None = None
    session_id: str | None = None
    event: str | None = None
    state: str | None = None
    reason: str | None = None


# ----------------------------------------------------------------------------------------------
# Decoding.

Q = TypeVar("Q", bound=Query)


def _flag(name: str, value: str) -> bool:
    if value.lower() in _TRUE or value == "":
        return True
    if value.lower() in _FALSE:
        return False
    bad(name, value, "0 or 1")


def _reader(hint: Any) -> Decode:
    """How a URL string becomes a value of the field type ``hint`` (choices in their order)."""
    meta = Meta()
    if get_origin(hint) is Annotated:
        hint, *extras = get_args(hint)
        meta = next((m for m in extras if isinstance(m, Meta)), meta)
        custom = (meta.extra or {}).get("decode")
        if custom is not None:
            return cast(Decode, custom)
    if get_origin(hint) in (Union, UnionType):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        return _reader(inner)
    if hint is bool:
        return _flag
    if hint is int:
        low = 0 if meta.ge is None else int(meta.ge)
        return _integer(low, _BIG if meta.le is None else int(meta.le))
    if get_origin(hint) is Literal:
        return _choice(tuple(str(v) for v in get_args(hint)))
    if hint is str:
        return lambda _name, value: value
    raise TypeError(f"no reading of a URL string as {hint!r}")


def _integer(low: int, high: int) -> Decode:
    def integer(name: str, value: str) -> int:
        # Decimal ASCII only: int() would also take "+5", " 5" and other scripts' digits.
        if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
            bad(name, value, f"an integer from {low} to {high}")
        return int(value)

    return integer


def _choice(choices: tuple[str, ...]) -> Decode:
    def choice(name: str, value: str) -> str:
        if value not in choices:
            bad(name, value, " or ".join(choices))
        return value

    return choice


class QueryDecoder(Generic[Q]):
    """Reads one query Struct from a request; its plan is made once, when the route is."""

    def __init__(self, cls: type[Q]) -> None:
        self.cls = cls
        hints = get_type_hints(cls, include_extras=True)
        self.plan = tuple(
            (name, _reader(hints[name]), name in cls.path_params) for name in cls.__struct_fields__
        )

    def decode(self, path: Mapping[str, str], query: Mapping[str, str]) -> Q:
        values: dict[str, Any] = {}
        for name, read, in_path in self.plan:
            raw = (path if in_path else query).get(name)
            if raw is not None:
                values[name] = read(name, raw)
        return self.cls(**values)


__all__ = [
    "EventsQuery",
    "HealthQuery",
    "NeighborsQuery",
    "NoQuery",
    "NotifyBody",
    "NotifyQuery",
    "PaneQuery",
    "PanesQuery",
    "Query",
    "QueryDecoder",
    "SelfQuery",
    "SyncQuery",
    "TreeQuery",
    "WaitQuery",
    "bad",
    "parse_id",
]
