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
_TRUE = ("1", "true", "yes", "on", "")
_FALSE = ("0", "false", "no", "off")
FLAG_VALUES = _TRUE + _FALSE  # what a flag may be, exactly (the document lists them)

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


def _types(name: str, value: str) -> frozenset[str]:
    # A comma list (OpenAPI's form style, not exploded): no empty item, none twice.
    names = value.split(",") if value else []
    for each in names:
        if each not in STREAM_TYPES:
            bad(name, each, "a comma list of " + ", ".join(sorted(STREAM_TYPES)))
    if len(set(names)) != len(names):
        bad(name, value, "a comma list naming each type once")
    return frozenset(names)


# A JSON number, as a client generated from the document writes one (1, 0.5, 1e-3, 2.5E+1);
# not float()'s other readings ("nan", "inf", "1_000", other scripts' digits).
_NUMBER_RE = re.compile(r"-?(?:0|[1-9][0-9]{0,19})(?:\.[0-9]{1,20})?(?:[eE][-+]?[0-9]{1,3})?")


def _seconds(name: str, value: str) -> float:
    if _NUMBER_RE.fullmatch(value) is None or not 0 <= float(value) <= WAIT_MAX_S:
        bad(name, value, f"a number of seconds from 0 to {WAIT_MAX_S:g}")
    return abs(float(value))  # -0 is 0


def _pane_id(_name: str, value: str) -> str:
    return parse_id(value, "pane")


def _window_id(_name: str, value: str) -> str:
    return parse_id(value, "window")


def _session_id(_name: str, value: str) -> str:
    return parse_id(value, "session")


_IN_URL = "(in a URL % is written %25)"
# In a path, %N is documented as N only: a client's URL library leaves a % that looks like an
# escape (%28) as it is, and the pane id arrives as "(".  The daemon still reads %25N there.
PanePath = Annotated[
    str,
    Meta(
        pattern=r"^self$|^[0-9]{1,9}$",
        description="a pane id: N or self (%N, written %25N, is read too)",
        extra={"decode": _pane_id},
    ),
]
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
# Strings are checked against their Meta (pattern, lengths) by the decoder itself, so what the
# document says of them is what is accepted.
_NO_NUL = r"^[^\x00]+$"
Server = Annotated[
    str,
    Meta(
        min_length=1,
        pattern=_NO_NUL,
        description="a watched server: its socket path, its -L name, or self",
    ),
]
NotifyServer = Annotated[
    str, Meta(min_length=1, pattern=_NO_NUL, description="a socket path or a -L name")
]
Target = Annotated[
    str,
    Meta(
        pattern=r"^([%@$]?[0-9]{1,9})?$",
        description="the hook's pane, window or session id (empty: none)",
    ),
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
    bool, Meta(description="fill in each pane's command and busy, read now (the process table)")
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
    pane: PanePath
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
    pane: PanePath
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
    """Also the JSON body's fields (SPEC §4): both are checked, the body's win."""

    hook: ShortText | None = None
    target: Target | None = None
    server: NotifyServer | None = None


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
    pane: PanePath
    server: Server | None = None


ShortText = Annotated[
    str,
    Meta(
        max_length=512,
        pattern=r"^[^\x00\n]*$",
        description="one line, at most 512 characters",
    ),
]
SessionText = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=512,
        pattern=r"^[^\x00\n]*$",
        description="the harness's session id: one line of 1 to 512 characters",
    ),
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
    """SPEC §13: the report is in the query (what a hook sends without a body to write)."""

    harness: Harness
    session_id: SessionText
    event: ShortText | None = None
    state: Literal["working", "waiting", "idle", "gone"]
    reason: ShortText | None = None


# ----------------------------------------------------------------------------------------------
# Decoding.

Q = TypeVar("Q", bound=Query)


def _flag(name: str, value: str) -> bool:
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    bad(name, value, "one of 1, true, yes, on, (empty), 0, false, no, off")


def _reader(hint: Any) -> Decode:
    """How a URL string becomes a value of the field type ``hint`` (choices in their order)."""
    meta = Meta()
    if get_origin(hint) is Annotated:
        hint, *extras = get_args(hint)
        meta = next((m for m in extras if isinstance(m, Meta)), meta)
        custom = (meta.extra or {}).get("decode")
        if custom is not None:
            return cast(Decode, custom)
        if hint is str and (meta.pattern or meta.min_length or meta.max_length):
            return _checked(meta)
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


def _checked(meta: Meta) -> Decode:
    """A string as its Meta says: its length, then its pattern (``fullmatch``: the pattern is
    anchored with ``^…$``, and a trailing newline must not pass as the end)."""
    low, high = meta.min_length or 0, meta.max_length
    pattern = re.compile(meta.pattern) if meta.pattern else None
    what = meta.description or "a string"

    def checked(name: str, value: str) -> str:
        if len(value) < low or (high is not None and len(value) > high):
            bad(name, value, what)
        if pattern is not None and pattern.fullmatch(value) is None:
            bad(name, value, what)
        return value

    return checked


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
        # A query field without a default is a required parameter (the document says so).
        self.required = tuple(
            f.name
            for f in msgspec.structs.fields(cls)
            if f.required and f.name not in cls.path_params
        )

    def decode(self, path: Mapping[str, str], query: Mapping[str, str]) -> Q:
        values: dict[str, Any] = {}
        for name, read, in_path in self.plan:
            raw = (path if in_path else query).get(name)
            if raw is not None:
                values[name] = read(name, raw)
        for name in self.required:
            if name not in values:
                raise ApiError(400, f"bad_{name}", f"{name} is required (in the query)")
        return self.cls(**values)


__all__ = [
    "EventsQuery",
    "HealthQuery",
    "NeighborsQuery",
    "NoQuery",
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
