"""The client of the daemon's HTTP API without any I/O (SPEC §4, §5, §8).

Everything a client decides is here, once: how each endpoint's request is spelled, how an
answer is decoded into the Structs of ``tmuxlocd.core.answers``, how an error answer becomes a
``ClientError``, which ETag to revalidate with and what a 304 returns, and when the change
stream is resumed, from which id and after how long.  The transports of ``tmuxlocd.clients.client``
(blocking ``http.client``, asyncio ``aiohttp``) only move bytes: they take a ``Call`` from
``ClientCore``, send ``call.request`` with ``core.headers(call)``, and hand status, headers and
body back to ``core.answer(call, ...)``.  For the stream they feed an ``EventStream`` with
lines and with what happened to the connection, and do what its ``Step`` says.

Nothing here opens a socket, sleeps or reads a clock, so all of it is tested with tables
(tests/unit/test_client_core.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, Literal, NamedTuple, TypeVar, cast, overload

import msgspec

from tmuxlocd.core.activity import UNTILS, WAIT_DEFAULT_S, WAIT_MAX_S, Until
from tmuxlocd.core.agent_view import AGENT_UNTILS, AgentList, AgentUntil
from tmuxlocd.core.answers import (
    DirectionNeighbors,
    Health,
    PaneList,
    PaneNeighbors,
    PaneSummaryList,
    SelfAnswer,
    ServerFailure,
    SyncAnswer,
    Tree,
    WaitAnswer,
)
from tmuxlocd.core.errors import TmuxlocdError
from tmuxlocd.core.events import (
    EVENT_TYPES,
    Event,
    EventFormat,
    Lagged,
    Reset,
    SnapshotEvent,
    event_decoder,
)
from tmuxlocd.core.layout import DIRECTIONS, Direction
from tmuxlocd.core.location import Location
from tmuxlocd.core.queries import Scope
from tmuxlocd.core.urls import notify_target, query_string, self_target, url_id

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

# Longer than the daemon's barrier deadline (10 s), so that a barrier that fails is heard as
# the daemon's 503 sync_failed, not mistaken for a daemon that does not answer.
REQUEST_TIMEOUT = 15.0
# Three missed 15 s heartbeats: the stream is dead even if the socket says nothing.
STREAM_TIMEOUT = 45.0

# The vocabulary is the daemon's own, imported: a client cannot name what the daemon lacks.
StreamFormat = EventFormat

# Answers are tmuxlocd.core.answers' Structs (shared with the daemon); SelfInfo is the client's name
# for the answer of GET /v1/self.
SelfInfo = SelfAnswer

# ----------------------------------------------------------------------------------------------
# Errors.


class ClientError(TmuxlocdError):
    """The daemon answered with an error (``status`` is its HTTP status, ``code`` its code)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.status = status
        self.code = code
        self.message = message


class DaemonUnavailable(ClientError):
    """No daemon answered on the socket (``status`` 0)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(0, "unavailable", f"no daemon answered on {path}: {reason}")
        self.path = path


class SyncFailedError(ClientError):
    """503 ``sync_failed``: the re-read a barrier or ``fresh=True`` asked for was not
    published.  ``servers`` maps each server that could not be re-read to why.  Never
    answered as data: what the daemon holds for those servers may be stale."""

    def __init__(self, status: int, code: str, message: str, servers: dict[str, str]) -> None:
        super().__init__(status, code, message)
        self.servers = servers


class _ErrorBody(msgspec.Struct):
    code: str = "error"
    message: str = ""
    servers: list[ServerFailure] = msgspec.field(default_factory=list)


class _ErrorEnvelope(msgspec.Struct):
    error: _ErrorBody


def _error_of(status: int, body: bytes) -> ClientError:
    """An error answer -> its ClientError; a body that is not the daemon's envelope (a proxy's
    page, a truncated answer) still gives one, named after the status."""
    try:
        err = msgspec.json.decode(body, type=_ErrorEnvelope).error
    except msgspec.DecodeError:
        text = body.decode("utf-8", "replace").strip()
        return ClientError(status, f"http_{status}", text[:200])
    if err.code == "sync_failed":
        servers = {f.socket_path: f.error for f in err.servers}
        return SyncFailedError(status, err.code, err.message, servers)
    return ClientError(status, err.code, err.message)


def reason_of(exc: BaseException) -> str:
    """Why a connection failed, in words for ``DaemonUnavailable``."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


# ----------------------------------------------------------------------------------------------
# Ids and URLs.


def pane_ref(pane: str) -> str:
    """A pane as a URL path segment: ``self``, or the bare number of ``%3`` / ``3``."""
    return url_id(pane, "pane")


def window_ref(window: str) -> str:
    return url_id(window, "window")


def session_ref(session: str) -> str:
    return url_id(session, "session")


def _url(path: str, params: Mapping[str, object | None]) -> str:
    # False and None both mean "leave it out": every flag of the API is off by default.
    query = {k: _param(v) for k, v in params.items() if v is not None and v is not False}
    return path + query_string(query, comma=True)


def _param(value: object) -> str:
    if value is True:
        return "1"
    return str(value)


def _self_params(accept_ancestor: bool, *values: str | None) -> dict[str, object | None]:
    # ?accept=ancestor matters only to requests that say "self"; elsewhere it is noise.
    if accept_ancestor and "self" in values:
        return {"accept": "ancestor"}
    return {}


class _Request(msgspec.Struct, frozen=True):
    method: str
    url: str
    body: bytes | None = None


Request = _Request


def _scope_params(scope: Scope) -> dict[str, object | None]:
    if scope == "all":
        return {}
    if scope not in ("window", "session", "server"):
        raise ValueError(f"unknown scope {scope!r} (window, session, server or all)")
    return {scope: "self"}


def _types_param(types: str | Iterable[str] | None) -> str | None:
    if types is None:
        return None
    if isinstance(types, str):
        return types or None
    return ",".join(types) or None


def _sync_request(server: str | None) -> _Request:
    return _Request("POST", _url("/v1/sync", {"server": server}), b"")


def _self_request(accept_ancestor: bool, fresh: bool) -> _Request:
    return _Request("GET", self_target(fresh=fresh, accept_ancestor=accept_ancestor))


def _text_request(pane: str, turn: int | None, neighbors: bool, accept_ancestor: bool) -> _Request:
    if pane == "self":
        target = self_target(
            text=True, turn=turn, neighbors=neighbors, accept_ancestor=accept_ancestor
        )
        return _Request("GET", target)
    params = {"format": "text", "turn": turn, "neighbors": neighbors}
    return _Request("GET", _url(f"/v1/panes/{pane_ref(pane)}", params))


def _location_request(
    pane: str, server: str | None, fresh: bool, accept_ancestor: bool
) -> _Request:
    params: dict[str, object | None] = {"server": server, "fresh": fresh}
    params.update(_self_params(accept_ancestor, pane))
    return _Request("GET", _url(f"/v1/panes/{pane_ref(pane)}", params))


def _neighbors_request(
    direction: Direction | None, pane: str, server: str | None, accept_ancestor: bool
) -> _Request:
    path = f"/v1/panes/{pane_ref(pane)}/neighbors"
    if direction is not None:
        if direction not in DIRECTIONS:
            raise ValueError(f"unknown direction {direction!r} (above, below, left or right)")
        path += f"/{direction}"
    params: dict[str, object | None] = {"server": server}
    params.update(_self_params(accept_ancestor, pane))
    return _Request("GET", _url(path, params))


def _panes_request(
    scope: Scope,
    detail: str,
    limit: int | None,
    offset: int | None,
    server: str | None,
    accept_ancestor: bool,
    activity: bool = False,
) -> _Request:
    params = _scope_params(scope)
    if server is not None:
        params["server"] = server
    if activity:
        params["activity"] = True
    params.update(
        {"detail": "summary" if detail == "summary" else None, "limit": limit, "offset": offset}
    )
    params.update(_self_params(accept_ancestor, *(str(v) for v in params.values())))
    return _Request("GET", _url("/v1/panes", params))


def _notify_request(hook: str | None, server: str | None, target: str | None) -> _Request:
    return _Request("POST", notify_target(hook, server, target), b"")


def _events_url(
    *,
    pane: str | None,
    window: str | None,
    session: str | None,
    server: str | None,
    types: str | Iterable[str] | None,
    fmt: StreamFormat,
    min_interval_ms: int | None,
    accept_ancestor: bool,
) -> str:
    params: dict[str, object | None] = {
        "pane": pane_ref(pane) if pane is not None else None,
        "window": window_ref(window) if window is not None else None,
        "session": session_ref(session) if session is not None else None,
        "server": server,
        "types": _types_param(types),
        "format": "ndjson" if fmt == "ndjson" else None,
        "min_interval_ms": min_interval_ms,
    }
    params.update(_self_params(accept_ancestor, pane, window, session))
    return _url("/v1/events", params)


# ----------------------------------------------------------------------------------------------
# Calls: a request and how its answer is read.


class _Accepted(msgspec.Struct, frozen=True):
    accepted: bool = True


WAIT_SLACK_S = 10.0  # the answer of a wait that timed out still has to arrive


def wait_read_timeout(timeout_s: float | None) -> float:
    """How long a transport waits for a wait's answer: the daemon's timeout, and then some."""
    return (WAIT_DEFAULT_S if timeout_s is None else timeout_s) + WAIT_SLACK_S


def _wait_params(until: str, timeout_s: float | None) -> dict[str, object | None]:
    """``until`` and ``timeout_s`` checked as the daemon would, so a bad one fails before any
    request; the seconds spelled as the daemon reads them (decimal, never ``1e-05``)."""
    if until not in UNTILS and until not in AGENT_UNTILS:
        raise ValueError(f"unknown until {until!r} ({', '.join(UNTILS + AGENT_UNTILS)})")
    params: dict[str, object | None] = {"until": until}
    if timeout_s is not None:
        if isinstance(timeout_s, bool) or not 0 <= timeout_s <= WAIT_MAX_S:  # NaN fails too
            raise ValueError(f"timeout_s must be from 0 to {WAIT_MAX_S:g} seconds")
        params["timeout_s"] = f"{timeout_s:.6f}".rstrip("0").rstrip(".")
    return params


def _json(type_: type[T]) -> Callable[[int, bytes], T]:
    decoder = msgspec.json.Decoder(type_)
    return lambda _status, body: decoder.decode(body)


def _text(status: int, body: bytes) -> str | None:
    return None if status == 204 else body.decode("utf-8")  # 204: self is in no pane


def _seq(status: int, body: bytes) -> str:
    return msgspec.json.decode(body, type=SyncAnswer).seq


def _nothing(status: int, body: bytes) -> None:
    msgspec.json.decode(body, type=_Accepted)


@dataclass(frozen=True, slots=True)
class Call(Generic[T_co]):
    """One request to an endpoint, and how a success answer becomes a ``T``.

    ``revalidate``: the answer is kept with its ETag and asked for again with
    ``If-None-Match``, so an unchanged answer costs the daemon no encoding and the client no
    decoding (a 304 hands back the very object of the first answer).  ``read_timeout``: see
    ``ClientCore.wait``."""

    request: _Request
    decode: Callable[[int, bytes], T_co]
    accept: str = "application/json"
    revalidate: bool = False
    # None: the transport's request timeout.  A long poll says how long its answer may take.
    read_timeout: float | None = None


class ETagCache:
    """The last answer of each revalidated URL, with its ETag.  Keyed by URL: the URL names
    the endpoint, and so the type of what is kept."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, object]] = {}

    def __contains__(self, url: object) -> bool:
        return url in self._entries

    def if_none_match(self, url: str) -> str | None:
        entry = self._entries.get(url)
        return entry[0] if entry is not None else None

    def not_modified(self, url: str) -> object | None:
        entry = self._entries.get(url)
        return entry[1] if entry is not None else None

    def keep(self, url: str, etag: str | None, value: object) -> None:
        if etag:
            self._entries[url] = (etag, value)
        else:
            self._entries.pop(url, None)  # an answer without an ETag cannot be revalidated


class ClientCore:
    """The endpoints as ``Call``s, and the reading of their answers (one per client: it holds
    that client's ``accept_ancestor`` and ETag cache)."""

    def __init__(self, accept_ancestor: bool = False) -> None:
        self.accept_ancestor = accept_ancestor
        self.etags = ETagCache()

    # -- what to send

    def headers(self, call: Call[object]) -> dict[str, str]:
        headers = {"Accept": call.accept}
        if call.request.body is not None:
            headers["Content-Type"] = "application/json"
        etag = self.etags.if_none_match(call.request.url) if call.revalidate else None
        if etag is not None:
            headers["If-None-Match"] = etag
        return headers

    # -- what came back

    def answer(self, call: Call[T], status: int, etag: str | None, body: bytes) -> T:
        """Status, the ETag header and the body -> the answer, or the error."""
        url = call.request.url
        if status == 304 and call.revalidate and url in self.etags:
            # Only ever asked with If-None-Match for a URL in the cache, whose kept value is
            # what this call decoded the first time.
            return cast(T, self.etags.not_modified(url))
        if status >= 300:
            raise _error_of(status, body)
        value = call.decode(status, body)
        if call.revalidate:
            self.etags.keep(url, etag, value)
        return value

    # -- the endpoints

    def where_am_i(self, fresh: bool = False) -> Call[SelfInfo]:
        return Call(_self_request(self.accept_ancestor, fresh), _json(SelfInfo), revalidate=True)

    def text(self, pane: str, turn: int | None, neighbors: bool) -> Call[str | None]:
        req = _text_request(pane, turn, neighbors, self.accept_ancestor)
        return Call(req, _text, accept="text/plain")

    def location(self, pane: str, server: str | None, fresh: bool) -> Call[Location]:
        req = _location_request(pane, server, fresh, self.accept_ancestor)
        return Call(req, _json(Location), revalidate=True)

    @overload
    def neighbors(self, direction: None, pane: str, server: str | None) -> Call[PaneNeighbors]: ...
    @overload
    def neighbors(
        self, direction: Direction, pane: str, server: str | None
    ) -> Call[DirectionNeighbors]: ...
    @overload  # what a transport's own implementation passes on
    def neighbors(
        self, direction: Direction | None, pane: str, server: str | None
    ) -> Call[PaneNeighbors | DirectionNeighbors]: ...
    def neighbors(
        self, direction: Direction | None, pane: str, server: str | None
    ) -> Call[PaneNeighbors | DirectionNeighbors]:
        req = _neighbors_request(direction, pane, server, self.accept_ancestor)
        if direction is None:
            return Call(req, _json(PaneNeighbors), revalidate=True)
        return Call(req, _json(DirectionNeighbors), revalidate=True)

    @overload
    def panes(
        self,
        scope: Scope,
        detail: Literal["full"],
        limit: int | None,
        offset: int | None,
        server: str | None,
        activity: bool = False,
    ) -> Call[PaneList]: ...
    @overload
    def panes(
        self,
        scope: Scope,
        detail: Literal["summary"],
        limit: int | None,
        offset: int | None,
        server: str | None,
        activity: bool = False,
    ) -> Call[PaneSummaryList]: ...
    @overload
    def panes(
        self,
        scope: Scope,
        detail: Literal["full", "summary"],
        limit: int | None,
        offset: int | None,
        server: str | None,
        activity: bool = False,
    ) -> Call[PaneList | PaneSummaryList]: ...
    def panes(
        self,
        scope: Scope,
        detail: Literal["full", "summary"],
        limit: int | None,
        offset: int | None,
        server: str | None,
        activity: bool = False,
    ) -> Call[PaneList | PaneSummaryList]:
        req = _panes_request(scope, detail, limit, offset, server, self.accept_ancestor, activity)
        if detail == "summary":
            return Call(req, _json(PaneSummaryList), revalidate=True)
        return Call(req, _json(PaneList), revalidate=True)

    def agents(self, scope: Scope, state: str | None = None) -> Call[AgentList]:
        """``GET /v1/agents`` in a scope of the caller's (SPEC §13)."""
        params = {**_scope_params(scope), "state": state}
        params.update(_self_params(self.accept_ancestor, "self" if scope != "all" else None))
        return Call(_Request("GET", _url("/v1/agents", params)), _json(AgentList))

    def tree(self, activity: bool = False) -> Call[Tree]:
        url = _url("/v1/tree", {"activity": activity})
        return Call(_Request("GET", url), _json(Tree), revalidate=not activity)

    def wait(
        self, pane: str, until: Until | AgentUntil, timeout_s: float | None, server: str | None
    ) -> Call[WaitAnswer]:
        """``GET /v1/panes/{pane}/wait``: a long poll, so its ``read_timeout`` outlasts
        ``timeout_s`` (the daemon's default when None); every outcome, a timeout included,
        is a 200 ``WaitAnswer``, and a bad pane or server the error the daemon names."""
        params = _wait_params(until, timeout_s)
        params["server"] = server
        params.update(_self_params(self.accept_ancestor, pane))
        url = _url(f"/v1/panes/{pane_ref(pane)}/wait", params)
        return Call(
            _Request("GET", url), _json(WaitAnswer), read_timeout=wait_read_timeout(timeout_s)
        )

    def health(self) -> Call[Health]:
        return Call(_Request("GET", "/v1/health"), _json(Health), revalidate=True)

    def sync(self, server: str | None) -> Call[str]:
        return Call(_sync_request(server), _seq)

    def notify(self, hook: str | None, server: str | None, target: str | None) -> Call[None]:
        return Call(_notify_request(hook, server, target), _nothing)

    def events(
        self,
        path: str,
        *,
        pane: str | None,
        window: str | None,
        session: str | None,
        server: str | None,
        types: str | Iterable[str] | None,
        format: StreamFormat,
        min_interval_ms: int | None,
        last_event_id: str | None,
        reconnect: bool,
    ) -> EventStream:
        url = _events_url(
            pane=pane,
            window=window,
            session=session,
            server=server,
            types=types,
            fmt=format,
            min_interval_ms=min_interval_ms,
            accept_ancestor=self.accept_ancestor,
        )
        return EventStream(path, url, format, last_event_id=last_event_id, reconnect=reconnect)


# ----------------------------------------------------------------------------------------------
# Stream decoding: NDJSON lines or SSE fields in, Events out.


class _TypeOnly(msgspec.Struct):
    type: str = ""


def decode_event_line(line: bytes) -> Event | None:
    """One NDJSON line -> an Event; None for a blank line, a heartbeat or an unknown type
    (a newer daemon's), which a consumer can do nothing with."""
    line = line.strip()
    if not line:
        return None
    try:
        return event_decoder.decode(line)
    except msgspec.ValidationError:
        kind = msgspec.json.decode(line, type=_TypeOnly).type
        if kind == "heartbeat" or kind not in EVENT_TYPES:
            return None
        raise


class SSEDecoder:
    """Server-Sent Events, line by line (the subset the daemon writes: ``id``, ``event``,
    ``data``, comments).  ``feed`` returns an Event when a blank line ends one."""

    def __init__(self) -> None:
        self._data: list[bytes] = []

    def feed(self, raw: bytes) -> Event | None:
        line = raw.rstrip(b"\r\n")
        if not line:
            data, self._data = self._data, []
            return decode_event_line(b"\n".join(data)) if data else None
        if line.startswith(b":"):
            return None  # heartbeat comment
        name, _, value = line.partition(b":")
        if value.startswith(b" "):
            value = value[1:]
        if name == b"data":
            self._data.append(value)
        # id and event repeat what the JSON in data carries.
        return None


class _LineDecoder:
    def __init__(self, fmt: StreamFormat) -> None:
        self._sse = SSEDecoder() if fmt == "sse" else None

    def feed(self, line: bytes) -> Event | None:
        if self._sse is not None:
            return self._sse.feed(line)
        return decode_event_line(line)


class LineBuffer:
    """Bytes in, complete lines (with their ``\\n``) out."""

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, data: bytes) -> list[bytes]:
        data = self._partial + data
        cut = data.rfind(b"\n") + 1
        self._partial = data[cut:]
        return data[:cut].splitlines(keepends=True) if cut else []


# ----------------------------------------------------------------------------------------------
# The stream's resume state machine.


class _Backoff:
    """Delays between reconnection attempts: short at first, doubling, capped."""

    def __init__(self, first: float = 0.05, cap: float = 2.0) -> None:
        self.first = first
        self.cap = cap
        self.delay = first

    def next(self) -> float:
        delay = self.delay
        self.delay = min(self.delay * 2, self.cap)
        return delay

    def reset(self) -> None:
        self.delay = self.first


def _retry_after(value: str | None, default: float) -> float:
    try:
        return max(0.0, float(value)) if value else default
    except ValueError:
        return default


_STREAM_ACCEPT = {"ndjson": "application/x-ndjson", "sse": "text/event-stream"}


class Step(NamedTuple):
    """What a transport does next: ``read`` the answer's lines into ``EventStream.feed``,
    ``retry`` (connect again after ``delay`` seconds) or ``stop`` (end the iteration)."""

    action: Literal["read", "retry", "stop"]
    delay: float = 0.0


READ = Step("read")
STOP = Step("stop")


class EventStream:
    """``GET /v1/events`` that survives a dropped connection, as a pure state machine.

    A transport loops: connect with ``url`` and ``headers()``; then tells the machine what
    happened (``connect_failed``, ``answered``; while reading, each line to ``feed``; at the
    end ``ended`` or ``dropped``) and gets a ``Step``.  A failure that ends the iteration is
    raised as the ``ClientError`` the caller sees.

    Rules: the first connection must succeed (else ``DaemonUnavailable``: nothing is there to
    wait for); after that a lost connection is retried with a capped backoff.  503 (the
    daemon's stream limit, or a daemon on its way down) is retried after its Retry-After.
    Other error answers end the iteration.  Each reconnection carries ``Last-Event-ID``: the
    id of the last event handed out, so the daemon replays exactly what was missed, or says
    ``reset`` and sends a snapshot when it cannot.  A reset or lagged event promises a
    snapshot; until that snapshot has arrived the resume point stays where it was, so a
    connection lost in between asks again from a point the daemon must answer with a
    snapshot, instead of from one that would leave the consumer's map half rebuilt.
    """

    def __init__(
        self,
        path: str,
        url: str,
        fmt: StreamFormat = "ndjson",
        *,
        last_event_id: str | None = None,
        reconnect: bool = True,
        backoff: _Backoff | None = None,
    ) -> None:
        self.path = path
        self.url = url
        self.format: StreamFormat = fmt
        self.last_event_id = last_event_id
        self.reconnect = reconnect
        self.backoff = backoff or _Backoff()
        self.connected_once = False
        self.snapshot_owed = False
        self._decoder = _LineDecoder(fmt)

    def headers(self) -> dict[str, str]:
        headers = {"Accept": _STREAM_ACCEPT[self.format]}
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        return headers

    def connect_failed(self, reason: str) -> Step:
        """No answer at all: refused, reset, timed out before the status line."""
        if not self.connected_once or not self.reconnect:
            raise DaemonUnavailable(self.path, reason)
        return Step("retry", self.backoff.next())

    def answered(self, status: int, retry_after: str | None, body: bytes = b"") -> Step:
        """The status line came (``body`` is read only for an error status)."""
        if status == 503:
            return Step("retry", _retry_after(retry_after, self.backoff.next()))
        if status >= 400:
            raise _error_of(status, body)
        self.connected_once = True
        self.backoff.reset()
        self._decoder = _LineDecoder(self.format)  # a cut may have left half an SSE event
        return READ

    def feed(self, line: bytes) -> Event | None:
        """One line of the answer -> the Event it completes, if any."""
        event = self._decoder.feed(line)
        if event is None:
            return None
        if isinstance(event, (Reset, Lagged)):
            self.snapshot_owed = True
        elif isinstance(event, SnapshotEvent):
            self.snapshot_owed = False
        if event.id and not self.snapshot_owed:
            self.last_event_id = event.id
        return event

    def ended(self) -> Step:
        """The daemon closed the stream (it is stopping)."""
        return self.dropped()

    def dropped(self) -> Step:
        """The connection was cut mid-stream, or no line (not even a heartbeat) came within
        the transport's read timeout: the stream is dead even if the socket says nothing."""
        if not self.reconnect:
            return STOP
        return Step("retry", self.backoff.next())
