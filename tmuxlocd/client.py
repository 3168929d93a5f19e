"""Typed clients of the daemon's HTTP API (SPEC §4, §5, §8).

Two clients with one vocabulary: ``Client`` (blocking, stdlib ``http.client`` over the Unix
socket, so a short script pays no event-loop or aiohttp start-up) and ``AsyncClient``
(aiohttp's ``UnixConnector``).  Answers are decoded by msgspec into frozen Structs; the
Location Structs are the daemon's own (``tmuxlocd.location``), so a client and the daemon
can never disagree on a field.

``events()`` is an iterator over the change stream that survives a dropped connection: it
reconnects with ``Last-Event-ID`` set to the last id it handed out, so the daemon replays
exactly the missed events, or says ``reset`` (then ``snapshot``) when it cannot.  ``reset``,
``lagged`` and ``snapshot`` events are handed over like any other: a consumer that replays
events onto a map (``tmuxlocd.events.apply``) stays right through all of them.

aiohttp is imported only when an ``AsyncClient`` is made: the blocking client, and the CLI
built on it, start faster without it.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import AsyncGenerator, Generator, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar, overload
from urllib.parse import quote, urlencode

import msgspec

from tmuxlocd.answers import (
    Caller,
    DirectionNeighbors,
    Health,
    NeighborEntry,
    PaneList,
    PaneNeighbors,
    PaneSummary,
    PaneSummaryList,
    SelfAnswer,
    ServerFailure,
    ServerHealth,
    SyncAnswer,
    Tree,
    TreeServer,
    TreeSession,
    TreeWindow,
)
from tmuxlocd.errors import TmuxlocdError
from tmuxlocd.events import Event, event_decoder
from tmuxlocd.location import Location
from tmuxlocd.paths import client_socket_path as socket_path

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "AsyncClient",
    "Caller",
    "Client",
    "ClientError",
    "DaemonUnavailable",
    "DirectionNeighbors",
    "Health",
    "NeighborEntry",
    "PaneList",
    "PaneNeighbors",
    "PaneSummary",
    "PaneSummaryList",
    "SelfInfo",
    "ServerHealth",
    "SyncFailedError",
    "Tree",
    "TreeServer",
    "TreeSession",
    "TreeWindow",
    "socket_path",
]

# Longer than the daemon's barrier deadline (10 s), so that a barrier that fails is heard as
# the daemon's 503 sync_failed, not mistaken for a daemon that does not answer.
REQUEST_TIMEOUT = 15.0

Direction = Literal["above", "below", "left", "right"]
Scope = Literal["window", "session", "server", "all"]
StreamFormat = Literal["ndjson", "sse"]

DIRECTIONS: tuple[Direction, ...] = ("above", "below", "left", "right")

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
    try:
        err = msgspec.json.decode(body, type=_ErrorEnvelope).error
    except msgspec.DecodeError:
        text = body.decode("utf-8", "replace").strip()
        return ClientError(status, f"http_{status}", text[:200])
    if err.code == "sync_failed":
        servers = {f.socket_path: f.error for f in err.servers}
        return SyncFailedError(status, err.code, err.message, servers)
    return ClientError(status, err.code, err.message)


# Answers are tmuxlocd.answers' Structs (shared with the daemon); SelfInfo is the client's name
# for the answer of GET /v1/self.
SelfInfo = SelfAnswer

# ----------------------------------------------------------------------------------------------
# Requests: paths and queries are built here once for both clients (pure).

T = TypeVar("T")


def pane_ref(pane: str) -> str:
    """A pane as a URL path segment: ``self``, or the bare number of ``%3`` / ``3`` (SPEC §4:
    a literal ``%`` in a URL would have to be written ``%25``)."""
    if pane == "self":
        return pane
    number = pane.removeprefix("%")
    if not number.isdigit():
        raise ValueError(f"not a pane id: {pane!r} (expected self, %N or N)")
    return number


def _target(value: str, sigil: str, what: str) -> str:
    if value == "self":
        return value
    number = value.removeprefix(sigil)
    if not number.isdigit():
        raise ValueError(f"not a {what} id: {value!r} (expected self, {sigil}N or N)")
    return number


def window_ref(window: str) -> str:
    return _target(window, "@", "window")


def session_ref(session: str) -> str:
    return _target(session, "$", "session")


def _url(path: str, params: Mapping[str, object | None]) -> str:
    query = {k: _param(v) for k, v in params.items() if v is not None and v is not False}
    if not query:
        return path
    return path + "?" + urlencode(query, quote_via=quote, safe=",")


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


def _scope_params(scope: Scope) -> dict[str, object | None]:
    if scope == "all":
        return {}
    if scope not in ("window", "session", "server"):
        raise ValueError(f"unknown scope {scope!r} (window, session, server or all)")
    return {scope: "self"}


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
# Stream decoding (pure): NDJSON lines or SSE fields in, Events out.


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
        if kind == "heartbeat" or kind not in _KNOWN_TYPES:
            return None
        raise


_KNOWN_TYPES = frozenset(
    {
        "snapshot",
        "reset",
        "lagged",
        "pane.added",
        "pane.changed",
        "pane.removed",
        "server.up",
        "server.down",
    }
)


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


def _types_param(types: str | Iterable[str] | None) -> str | None:
    if types is None:
        return None
    if isinstance(types, str):
        return types or None
    return ",".join(types) or None


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

# ----------------------------------------------------------------------------------------------
# The blocking client.


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float | None) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self.unix_path)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


class Client:
    """Blocking client.  One keep-alive connection, opened on first use; ``close()`` ends it.

    ``accept_ancestor`` adds ``?accept=ancestor`` to requests about ``self``, so a process with
    no controlling tty (a hook job, a setsid child) is placed in its nearest ancestor's pane.
    """

    def __init__(
        self,
        path: str | None = None,
        *,
        timeout: float = REQUEST_TIMEOUT,
        accept_ancestor: bool = False,
        stream_timeout: float = 45.0,
    ) -> None:
        self.path = path or socket_path()
        self.timeout = timeout
        self.accept_ancestor = accept_ancestor
        # Three missed 15 s heartbeats: the stream is dead even if the socket says nothing.
        self.stream_timeout = stream_timeout
        self._conn: _UnixHTTPConnection | None = None
        self._etags: dict[str, tuple[str, object]] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- transport

    def _raw(self, req: _Request, headers: Mapping[str, str]) -> tuple[int, Any, bytes]:
        """One request on the keep-alive connection.  A connection the daemon closed while it
        sat idle is reopened once (every request here is safe to repeat); a fresh connection
        that fails means no daemon is there."""
        for _ in range(2):
            fresh = self._conn is None
            if self._conn is None:
                self._conn = _UnixHTTPConnection(self.path, self.timeout)
            conn = self._conn
            try:
                conn.request(req.method, req.url, body=req.body, headers=dict(headers))
                resp = conn.getresponse()
                body = resp.read()
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if fresh:
                    raise DaemonUnavailable(self.path, _reason(exc)) from None
                continue
            if resp.will_close:
                self.close()
            return resp.status, resp.headers, body
        raise DaemonUnavailable(self.path, "the connection was closed twice")

    def _call(self, req: _Request, type_: type[T]) -> T:
        headers = {"Accept": "application/json"}
        cached = self._etags.get(req.url) if req.method == "GET" else None
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        if req.body is not None:
            headers["Content-Type"] = "application/json"
        status, resp_headers, body = self._raw(req, headers)
        if status == 304 and cached is not None and isinstance(cached[1], type_):
            return cached[1]
        if status >= 400:
            raise _error_of(status, body)
        value = msgspec.json.decode(body, type=type_)
        etag = resp_headers.get("ETag")
        if etag and req.method == "GET":
            self._etags[req.url] = (etag, value)
        return value

    # -- snapshot endpoints

    def where_am_i(self, *, fresh: bool = False) -> SelfInfo:
        return self._call(_self_request(self.accept_ancestor, fresh), SelfInfo)

    def text(
        self, pane: str = "self", *, turn: int | None = None, neighbors: bool = False
    ) -> str | None:
        """The three-line text form (SPEC §4); None when ``self`` is not in a pane."""
        req = _text_request(pane, turn, neighbors, self.accept_ancestor)
        status, _, body = self._raw(req, {"Accept": "text/plain"})
        if status == 204:
            return None
        if status >= 400:
            raise _error_of(status, body)
        return body.decode("utf-8")

    def location(self, pane: str = "self", *, server: str | None = None,
                 fresh: bool = False) -> Location:
        return self._call(_location_request(pane, server, fresh, self.accept_ancestor), Location)

    @overload
    def neighbors(
        self, direction: None = None, pane: str = ..., *, server: str | None = ...
    ) -> PaneNeighbors: ...
    @overload
    def neighbors(
        self, direction: Direction, pane: str = ..., *, server: str | None = ...
    ) -> DirectionNeighbors: ...
    def neighbors(
        self, direction: Direction | None = None, pane: str = "self", *,
        server: str | None = None,
    ) -> PaneNeighbors | DirectionNeighbors:
        req = _neighbors_request(direction, pane, server, self.accept_ancestor)
        if direction is None:
            return self._call(req, PaneNeighbors)
        return self._call(req, DirectionNeighbors)

    @overload
    def panes(
        self, scope: Scope = ..., detail: Literal["full"] = ..., *,
        limit: int | None = ..., offset: int | None = ..., server: str | None = ...,
    ) -> PaneList: ...
    @overload
    def panes(
        self, scope: Scope, detail: Literal["summary"], *,
        limit: int | None = ..., offset: int | None = ..., server: str | None = ...,
    ) -> PaneSummaryList: ...
    def panes(
        self, scope: Scope = "window", detail: Literal["full", "summary"] = "full", *,
        limit: int | None = None, offset: int | None = None, server: str | None = None,
    ) -> PaneList | PaneSummaryList:
        req = _panes_request(scope, detail, limit, offset, server, self.accept_ancestor)
        if detail == "summary":
            return self._call(req, PaneSummaryList)
        return self._call(req, PaneList)

    def tree(self) -> Tree:
        return self._call(_Request("GET", "/v1/tree"), Tree)

    def health(self) -> Health:
        return self._call(_Request("GET", "/v1/health"), Health)

    def sync(self, server: str | None = None) -> str:
        """Re-sync every server now (or one); returns the id of the last event of that
        re-sync.  Raises ``SyncFailedError`` when a server could not be re-read."""
        return self._call(_sync_request(server), SyncAnswer).seq

    def notify(self, *, hook: str | None = None, server: str | None = None,
               target: str | None = None) -> None:
        self._call(_notify_request(hook, server, target), _Accepted)

    # -- change stream

    def events(
        self,
        *,
        pane: str | None = None,
        window: str | None = None,
        session: str | None = None,
        server: str | None = None,
        types: str | Iterable[str] | None = None,
        format: StreamFormat = "ndjson",
        min_interval_ms: int | None = None,
        last_event_id: str | None = None,
        reconnect: bool = True,
    ) -> Generator[Event, None, None]:
        """The change stream (SPEC §5), resumed transparently after a dropped connection.

        The first connection must succeed (else ``DaemonUnavailable``); after that a lost
        connection is retried with a capped backoff for as long as the caller iterates.
        An error answer (4xx) ends the iteration with a ``ClientError``.
        """
        url = _events_url(
            pane=pane, window=window, session=session, server=server, types=types, fmt=format,
            min_interval_ms=min_interval_ms, accept_ancestor=self.accept_ancestor,
        )
        last = last_event_id
        backoff = _Backoff()
        connected_once = False
        while True:
            conn = _UnixHTTPConnection(self.path, self.stream_timeout)
            try:
                headers = {"Accept": _STREAM_ACCEPT[format]}
                if last:
                    headers["Last-Event-ID"] = last
                try:
                    conn.request("GET", url, headers=headers)
                    resp = conn.getresponse()
                except (OSError, http.client.HTTPException) as exc:
                    if not connected_once or not reconnect:
                        raise DaemonUnavailable(self.path, _reason(exc)) from None
                    time.sleep(backoff.next())
                    continue
                if resp.status == 503:
                    resp.read()
                    time.sleep(_retry_after(resp.getheader("Retry-After"), backoff.next()))
                    continue
                if resp.status >= 400:
                    raise _error_of(resp.status, resp.read())
                connected_once = True
                backoff.reset()
                decoder = _LineDecoder(format)
                try:
                    while True:
                        line = resp.readline()
                        if not line:
                            break  # the daemon ended the stream (it is stopping)
                        event = decoder.feed(line)
                        if event is not None:
                            if event.id:
                                last = event.id
                            yield event
                except (OSError, http.client.HTTPException):
                    pass
                if not reconnect:
                    return
                time.sleep(backoff.next())
            finally:
                conn.close()


class _Accepted(msgspec.Struct, frozen=True):
    accepted: bool = True


def _sync_request(server: str | None) -> _Request:
    return _Request("POST", _url("/v1/sync", {"server": server}), b"")


def _self_request(accept_ancestor: bool, fresh: bool) -> _Request:
    params: dict[str, object | None] = {"fresh": fresh}
    if accept_ancestor:
        params["accept"] = "ancestor"
    return _Request("GET", _url("/v1/self", params))


def _text_request(pane: str, turn: int | None, neighbors: bool, accept_ancestor: bool) -> _Request:
    params: dict[str, object | None] = {"format": "text", "turn": turn, "neighbors": neighbors}
    params.update(_self_params(accept_ancestor, pane))
    path = "/v1/self" if pane == "self" else f"/v1/panes/{pane_ref(pane)}"
    return _Request("GET", _url(path, params))


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
) -> _Request:
    params = _scope_params(scope)
    if server is not None:
        params["server"] = server
    params.update(
        {"detail": "summary" if detail == "summary" else None, "limit": limit, "offset": offset}
    )
    params.update(_self_params(accept_ancestor, *(str(v) for v in params.values())))
    return _Request("GET", _url("/v1/panes", params))


def _notify_request(hook: str | None, server: str | None, target: str | None) -> _Request:
    body = {k: v for k, v in (("hook", hook), ("server", server), ("target", target)) if v}
    return _Request("POST", "/v1/notify", msgspec.json.encode(body))


# ----------------------------------------------------------------------------------------------
# The asyncio client.


class AsyncClient:
    """asyncio client on aiohttp (``async with AsyncClient() as c: await c.where_am_i()``)."""

    def __init__(
        self,
        path: str | None = None,
        *,
        timeout: float = REQUEST_TIMEOUT,
        accept_ancestor: bool = False,
        stream_timeout: float = 45.0,
    ) -> None:
        self.path = path or socket_path()
        self.timeout = timeout
        self.accept_ancestor = accept_ancestor
        self.stream_timeout = stream_timeout
        self._session: aiohttp.ClientSession | None = None
        self._etags: dict[str, tuple[str, object]] = {}

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.UnixConnector(path=self.path),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            )
        return self._session

    async def _raw(
        self, req: _Request, headers: Mapping[str, str]
    ) -> tuple[int, Mapping[str, str], bytes]:
        import aiohttp

        try:
            async with self._http().request(
                req.method, "http://localhost" + req.url, data=req.body, headers=dict(headers)
            ) as resp:
                return resp.status, resp.headers, await resp.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise DaemonUnavailable(self.path, _reason(exc)) from None

    async def _call(self, req: _Request, type_: type[T]) -> T:
        headers = {"Accept": "application/json"}
        cached = self._etags.get(req.url) if req.method == "GET" else None
        if cached is not None:
            headers["If-None-Match"] = cached[0]
        if req.body is not None:
            headers["Content-Type"] = "application/json"
        status, resp_headers, body = await self._raw(req, headers)
        if status == 304 and cached is not None and isinstance(cached[1], type_):
            return cached[1]
        if status >= 400:
            raise _error_of(status, body)
        value = msgspec.json.decode(body, type=type_)
        etag = resp_headers.get("ETag")
        if etag and req.method == "GET":
            self._etags[req.url] = (etag, value)
        return value

    async def where_am_i(self, *, fresh: bool = False) -> SelfInfo:
        return await self._call(_self_request(self.accept_ancestor, fresh), SelfInfo)

    async def text(
        self, pane: str = "self", *, turn: int | None = None, neighbors: bool = False
    ) -> str | None:
        req = _text_request(pane, turn, neighbors, self.accept_ancestor)
        status, _, body = await self._raw(req, {"Accept": "text/plain"})
        if status == 204:
            return None
        if status >= 400:
            raise _error_of(status, body)
        return body.decode("utf-8")

    async def location(self, pane: str = "self", *, server: str | None = None,
                       fresh: bool = False) -> Location:
        req = _location_request(pane, server, fresh, self.accept_ancestor)
        return await self._call(req, Location)

    @overload
    async def neighbors(
        self, direction: None = None, pane: str = ..., *, server: str | None = ...
    ) -> PaneNeighbors: ...
    @overload
    async def neighbors(
        self, direction: Direction, pane: str = ..., *, server: str | None = ...
    ) -> DirectionNeighbors: ...
    async def neighbors(
        self, direction: Direction | None = None, pane: str = "self", *,
        server: str | None = None,
    ) -> PaneNeighbors | DirectionNeighbors:
        req = _neighbors_request(direction, pane, server, self.accept_ancestor)
        if direction is None:
            return await self._call(req, PaneNeighbors)
        return await self._call(req, DirectionNeighbors)

    @overload
    async def panes(
        self, scope: Scope = ..., detail: Literal["full"] = ..., *,
        limit: int | None = ..., offset: int | None = ..., server: str | None = ...,
    ) -> PaneList: ...
    @overload
    async def panes(
        self, scope: Scope, detail: Literal["summary"], *,
        limit: int | None = ..., offset: int | None = ..., server: str | None = ...,
    ) -> PaneSummaryList: ...
    async def panes(
        self, scope: Scope = "window", detail: Literal["full", "summary"] = "full", *,
        limit: int | None = None, offset: int | None = None, server: str | None = None,
    ) -> PaneList | PaneSummaryList:
        req = _panes_request(scope, detail, limit, offset, server, self.accept_ancestor)
        if detail == "summary":
            return await self._call(req, PaneSummaryList)
        return await self._call(req, PaneList)

    async def tree(self) -> Tree:
        return await self._call(_Request("GET", "/v1/tree"), Tree)

    async def health(self) -> Health:
        return await self._call(_Request("GET", "/v1/health"), Health)

    async def sync(self, server: str | None = None) -> str:
        return (await self._call(_sync_request(server), SyncAnswer)).seq

    async def notify(self, *, hook: str | None = None, server: str | None = None,
                     target: str | None = None) -> None:
        await self._call(_notify_request(hook, server, target), _Accepted)

    async def events(
        self,
        *,
        pane: str | None = None,
        window: str | None = None,
        session: str | None = None,
        server: str | None = None,
        types: str | Iterable[str] | None = None,
        format: StreamFormat = "ndjson",
        min_interval_ms: int | None = None,
        last_event_id: str | None = None,
        reconnect: bool = True,
    ) -> AsyncGenerator[Event, None]:
        """The change stream, resumed after a dropped connection (see ``Client.events``)."""
        import asyncio

        import aiohttp

        url = "http://localhost" + _events_url(
            pane=pane, window=window, session=session, server=server, types=types, fmt=format,
            min_interval_ms=min_interval_ms, accept_ancestor=self.accept_ancestor,
        )
        last = last_event_id
        backoff = _Backoff()
        connected_once = False
        stream_timeout = aiohttp.ClientTimeout(
            total=None, connect=self.timeout, sock_read=self.stream_timeout
        )
        while True:
            headers = {"Accept": _STREAM_ACCEPT[format]}
            if last:
                headers["Last-Event-ID"] = last
            try:
                async with self._http().get(url, headers=headers, timeout=stream_timeout) as resp:
                    if resp.status == 503:
                        await resp.read()
                        delay = _retry_after(resp.headers.get("Retry-After"), backoff.next())
                        await asyncio.sleep(delay)
                        continue
                    if resp.status >= 400:
                        raise _error_of(resp.status, await resp.read())
                    connected_once = True
                    backoff.reset()
                    decoder = _LineDecoder(format)
                    # Lines are split here, not by StreamReader.readline(): a snapshot of a
                    # big server is one line far longer than aiohttp's line limit.
                    lines = LineBuffer()
                    try:
                        async for chunk in resp.content.iter_any():
                            for line in lines.feed(chunk):
                                event = decoder.feed(line)
                                if event is not None:
                                    if event.id:
                                        last = event.id
                                    yield event
                    except aiohttp.ClientPayloadError:
                        pass  # the stream was cut mid-chunk: resume below
            except (aiohttp.ClientConnectionError, OSError, TimeoutError) as exc:
                if not connected_once or not reconnect:
                    raise DaemonUnavailable(self.path, _reason(exc)) from None
            if not reconnect:
                return
            await asyncio.sleep(backoff.next())
