"""Typed clients of the daemon's HTTP API (SPEC §4, §5, §8): two thin transports.

``Client`` (blocking, stdlib ``http.client`` over the Unix socket, so a short script pays no
event-loop or aiohttp start-up) and ``AsyncClient`` (aiohttp's ``UnixConnector``) only move
bytes.  What to send, how an answer or an error is read, ETag revalidation and when the
change stream is resumed are decided once, without I/O, in ``tmuxlocd.core.client_core``.
Answers are msgspec Structs; the Location Structs are the daemon's own
(``tmuxlocd.core.location``), so a client and the daemon can never disagree on a field.

``events()`` is an iterator over the change stream that survives a dropped connection: it
reconnects with ``Last-Event-ID`` set to the last id it handed out, so the daemon replays
exactly the missed events, or says ``reset`` (then ``snapshot``) when it cannot.  ``reset``,
``lagged`` and ``snapshot`` events are handed over like any other: a consumer that replays
events onto a map (``tmuxlocd.core.events.apply``) stays right through all of them.

aiohttp is imported only when an ``AsyncClient`` is made: the blocking client, and the CLI
built on it, start faster without it.
"""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import AsyncGenerator, Generator, Iterable
from typing import TYPE_CHECKING, Literal, Self, TypeVar, overload

from tmuxlocd.core.activity import Activity, Until
from tmuxlocd.core.agent_view import AgentList, AgentUntil
from tmuxlocd.core.answers import (
    Caller,
    DirectionNeighbors,
    Health,
    NeighborEntry,
    PaneList,
    PaneNeighbors,
    PaneSummary,
    PaneSummaryList,
    ServerHealth,
    Tree,
    TreeServer,
    TreeSession,
    TreeWindow,
    WaitAnswer,
)

# Besides what the transports use, the core's names that code written against the one-module
# client imports from here (the decoders, the id spellings, the request builders).
from tmuxlocd.core.client_core import (  # noqa: F401
    REQUEST_TIMEOUT,
    STREAM_TIMEOUT,
    Call,
    ClientCore,
    ClientError,
    DaemonUnavailable,
    EventStream,
    LineBuffer,
    SelfInfo,
    SSEDecoder,
    Step,
    StreamFormat,
    SyncFailedError,
    _Backoff,
    _error_of,
    _events_url,
    _location_request,
    _neighbors_request,
    _notify_request,
    _panes_request,
    _Request,
    _retry_after,
    _self_request,
    _sync_request,
    _text_request,
    decode_event_line,
    pane_ref,
    reason_of,
    session_ref,
    wait_read_timeout,
    window_ref,
)
from tmuxlocd.core.events import Event
from tmuxlocd.core.layout import DIRECTIONS, Direction  # noqa: F401 (the clients' vocabulary)
from tmuxlocd.core.location import Location
from tmuxlocd.core.queries import Scope
from tmuxlocd.host.paths import client_socket_path as socket_path

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "Activity",
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
    "WaitAnswer",
    "socket_path",
]

T = TypeVar("T")


class _Settings:
    """What both transports are made with, and the core that decides for them."""

    def __init__(
        self,
        path: str | None = None,
        *,
        timeout: float = REQUEST_TIMEOUT,
        accept_ancestor: bool = False,
        stream_timeout: float = STREAM_TIMEOUT,
    ) -> None:
        self.path = path or socket_path()
        self.timeout = timeout
        self.accept_ancestor = accept_ancestor
        self.stream_timeout = stream_timeout
        self._core = ClientCore(accept_ancestor)
        self._etags = self._core.etags


# ----------------------------------------------------------------------------------------------
# The blocking client.


def _exchange(
    conn: http.client.HTTPConnection, call: Call[object], headers: dict[str, str]
) -> tuple[http.client.HTTPResponse, bytes]:
    req = call.request
    conn.request(req.method, req.url, body=req.body, headers=headers)
    resp = conn.getresponse()
    return resp, resp.read()


class UnixHTTPConnection(http.client.HTTPConnection):
    """``http.client`` on the daemon's Unix socket (the package's only one: the fast paths use
    ``tmuxlocd.clients.rawhttp.raw_request``, which needs no http.client)."""

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


class Client(_Settings):
    """Blocking client.  One keep-alive connection, opened on first use; ``close()`` ends it.

    ``accept_ancestor`` adds ``?accept=ancestor`` to requests about ``self``, so a process with
    no controlling tty (a hook job, a setsid child) is placed in its nearest ancestor's pane.
    """

    _conn: UnixHTTPConnection | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- transport

    def _call(self, call: Call[T]) -> T:
        """One request on the keep-alive connection (a long poll goes alone).  A connection
        the daemon closed while it sat idle is reopened once (every request here is safe to
        repeat); a fresh connection that fails means no daemon is there."""
        if call.read_timeout is not None:
            return self._call_alone(call)
        headers = self._core.headers(call)
        for _ in range(2):
            fresh = self._conn is None
            if self._conn is None:
                self._conn = UnixHTTPConnection(self.path, self.timeout)
            try:
                resp, body = _exchange(self._conn, call, headers)
            except (OSError, http.client.HTTPException) as exc:
                self.close()
                if fresh:
                    raise DaemonUnavailable(self.path, reason_of(exc)) from None
                continue
            if resp.will_close:
                self.close()
            return self._core.answer(call, resp.status, resp.getheader("ETag"), body)
        raise DaemonUnavailable(self.path, "the connection was closed twice")

    def _call_alone(self, call: Call[T]) -> T:
        """A long poll, on a connection of its own with the call's read timeout: the
        keep-alive one has the short request timeout, and would be held meanwhile."""
        conn = UnixHTTPConnection(self.path, call.read_timeout)
        try:
            resp, body = _exchange(conn, call, self._core.headers(call))
        except (OSError, http.client.HTTPException) as exc:
            raise DaemonUnavailable(self.path, reason_of(exc)) from None
        finally:
            conn.close()
        return self._core.answer(call, resp.status, resp.getheader("ETag"), body)

    # -- snapshot endpoints

    def where_am_i(self, *, fresh: bool = False) -> SelfInfo:
        return self._call(self._core.where_am_i(fresh))

    def text(
        self, pane: str = "self", *, turn: int | None = None, neighbors: bool = False
    ) -> str | None:
        """The three-line text form (SPEC §4); None when ``self`` is not in a pane."""
        return self._call(self._core.text(pane, turn, neighbors))

    def location(
        self, pane: str = "self", *, server: str | None = None, fresh: bool = False
    ) -> Location:
        return self._call(self._core.location(pane, server, fresh))

    @overload
    def neighbors(
        self, direction: None = None, pane: str = ..., *, server: str | None = ...
    ) -> PaneNeighbors: ...
    @overload
    def neighbors(
        self, direction: Direction, pane: str = ..., *, server: str | None = ...
    ) -> DirectionNeighbors: ...
    def neighbors(
        self,
        direction: Direction | None = None,
        pane: str = "self",
        *,
        server: str | None = None,
    ) -> PaneNeighbors | DirectionNeighbors:
        return self._call(self._core.neighbors(direction, pane, server))

    @overload
    def panes(
        self,
        scope: Scope = ...,
        detail: Literal["full"] = ...,
        *,
        limit: int | None = ...,
        offset: int | None = ...,
        server: str | None = ...,
        activity: bool = ...,
    ) -> PaneList: ...
    @overload
    def panes(
        self,
        scope: Scope,
        detail: Literal["summary"],
        *,
        limit: int | None = ...,
        offset: int | None = ...,
        server: str | None = ...,
        activity: bool = ...,
    ) -> PaneSummaryList: ...
    def panes(
        self,
        scope: Scope = "window",
        detail: Literal["full", "summary"] = "full",
        *,
        limit: int | None = None,
        offset: int | None = None,
        server: str | None = None,
        activity: bool = False,
    ) -> PaneList | PaneSummaryList:
        return self._call(self._core.panes(scope, detail, limit, offset, server, activity))

    def tree(self, *, activity: bool = False) -> Tree:
        """Every server, session, window and pane; ``activity``: each pane's command and
        busy filled in, read now."""
        return self._call(self._core.tree(activity))

    def wait(
        self,
        pane: str = "self",
        until: Until | AgentUntil = "idle",
        *,
        timeout_s: float | None = None,
        server: str | None = None,
    ) -> WaitAnswer:
        """Block until the pane is ``until`` (idle, busy, exit, change), it goes, or
        ``timeout_s`` passes (default the daemon's, 300 s): the answer says which."""
        return self._call(self._core.wait(pane, until, timeout_s, server))

    def health(self) -> Health:
        return self._call(self._core.health())

    def sync(self, server: str | None = None) -> str:
        """Re-sync every server now (or one); returns the id of the last event of that
        re-sync.  Raises ``SyncFailedError`` when a server could not be re-read."""
        return self._call(self._core.sync(server))

    def notify(
        self, *, hook: str | None = None, server: str | None = None, target: str | None = None
    ) -> None:
        self._call(self._core.notify(hook, server, target))

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
        stream = self._core.events(
            self.path,
            pane=pane,
            window=window,
            session=session,
            server=server,
            types=types,
            format=format,
            min_interval_ms=min_interval_ms,
            last_event_id=last_event_id,
            reconnect=reconnect,
        )
        while True:
            # The socket's timeout is the heartbeat deadline: a silent stream is a dead one.
            conn = UnixHTTPConnection(self.path, self.stream_timeout)
            try:
                try:
                    conn.request("GET", stream.url, headers=stream.headers())
                    resp = conn.getresponse()
                except (OSError, http.client.HTTPException) as exc:
                    step = stream.connect_failed(reason_of(exc))
                else:
                    body = resp.read() if resp.status >= 400 else b""
                    step = stream.answered(resp.status, resp.getheader("Retry-After"), body)
                    if step.action == "read":
                        step = yield from _read_lines(stream, resp)
            finally:
                conn.close()
            if step.action == "stop":
                return
            time.sleep(step.delay)


def _read_lines(
    stream: EventStream, resp: http.client.HTTPResponse
) -> Generator[Event, None, Step]:
    try:
        while line := resp.readline():
            event = stream.feed(line)
            if event is not None:
                yield event
    except (OSError, http.client.HTTPException):
        return stream.dropped()
    return stream.ended()  # an empty read: the daemon ended the stream (it is stopping)


# ----------------------------------------------------------------------------------------------
# The asyncio client.


class AsyncClient(_Settings):
    """asyncio client on aiohttp (``async with AsyncClient() as c: await c.where_am_i()``)."""

    _session: aiohttp.ClientSession | None = None

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

    async def _call(self, call: Call[T]) -> T:
        import aiohttp

        req = call.request
        session = self._http()
        timeout = session.timeout
        if call.read_timeout is not None:
            timeout = aiohttp.ClientTimeout(total=call.read_timeout)
        try:
            async with session.request(
                req.method,
                "http://localhost" + req.url,
                data=req.body,
                headers=self._core.headers(call),
                timeout=timeout,
            ) as resp:
                status, etag, body = resp.status, resp.headers.get("ETag"), await resp.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise DaemonUnavailable(self.path, reason_of(exc)) from None
        return self._core.answer(call, status, etag, body)

    async def where_am_i(self, *, fresh: bool = False) -> SelfInfo:
        return await self._call(self._core.where_am_i(fresh))

    async def text(
        self, pane: str = "self", *, turn: int | None = None, neighbors: bool = False
    ) -> str | None:
        return await self._call(self._core.text(pane, turn, neighbors))

    async def location(
        self, pane: str = "self", *, server: str | None = None, fresh: bool = False
    ) -> Location:
        return await self._call(self._core.location(pane, server, fresh))

    @overload
    async def neighbors(
        self, direction: None = None, pane: str = ..., *, server: str | None = ...
    ) -> PaneNeighbors: ...
    @overload
    async def neighbors(
        self, direction: Direction, pane: str = ..., *, server: str | None = ...
    ) -> DirectionNeighbors: ...
    async def neighbors(
        self,
        direction: Direction | None = None,
        pane: str = "self",
        *,
        server: str | None = None,
    ) -> PaneNeighbors | DirectionNeighbors:
        return await self._call(self._core.neighbors(direction, pane, server))

    @overload
    async def panes(
        self,
        scope: Scope = ...,
        detail: Literal["full"] = ...,
        *,
        limit: int | None = ...,
        offset: int | None = ...,
        server: str | None = ...,
        activity: bool = ...,
    ) -> PaneList: ...
    @overload
    async def panes(
        self,
        scope: Scope,
        detail: Literal["summary"],
        *,
        limit: int | None = ...,
        offset: int | None = ...,
        server: str | None = ...,
        activity: bool = ...,
    ) -> PaneSummaryList: ...
    async def panes(
        self,
        scope: Scope = "window",
        detail: Literal["full", "summary"] = "full",
        *,
        limit: int | None = None,
        offset: int | None = None,
        server: str | None = None,
        activity: bool = False,
    ) -> PaneList | PaneSummaryList:
        return await self._call(self._core.panes(scope, detail, limit, offset, server, activity))

    async def tree(self, *, activity: bool = False) -> Tree:
        return await self._call(self._core.tree(activity))

    async def wait(
        self,
        pane: str = "self",
        until: Until | AgentUntil = "idle",
        *,
        timeout_s: float | None = None,
        server: str | None = None,
    ) -> WaitAnswer:
        """As ``Client.wait``; cancelling it hangs up, which ends the wait in the daemon."""
        return await self._call(self._core.wait(pane, until, timeout_s, server))

    async def agents(self, scope: Scope = "window", state: str | None = None) -> AgentList:
        """``GET /v1/agents`` in a scope of the caller's (SPEC §13)."""
        return await self._call(self._core.agents(scope, state))

    async def health(self) -> Health:
        return await self._call(self._core.health())

    async def sync(self, server: str | None = None) -> str:
        return await self._call(self._core.sync(server))

    async def notify(
        self, *, hook: str | None = None, server: str | None = None, target: str | None = None
    ) -> None:
        await self._call(self._core.notify(hook, server, target))

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

        stream = self._core.events(
            self.path,
            pane=pane,
            window=window,
            session=session,
            server=server,
            types=types,
            format=format,
            min_interval_ms=min_interval_ms,
            last_event_id=last_event_id,
            reconnect=reconnect,
        )
        # sock_read is the heartbeat deadline: a silent stream is a dead one.
        stream_timeout = aiohttp.ClientTimeout(
            total=None, connect=self.timeout, sock_read=self.stream_timeout
        )
        while True:
            try:
                async with self._http().get(
                    "http://localhost" + stream.url,
                    headers=stream.headers(),
                    timeout=stream_timeout,
                ) as resp:
                    body = await resp.read() if resp.status >= 400 else b""
                    step = stream.answered(resp.status, resp.headers.get("Retry-After"), body)
                    if step.action == "read":
                        # Lines are split here, not by StreamReader.readline(): a snapshot of
                        # a big server is one line far longer than aiohttp's line limit.
                        lines = LineBuffer()
                        try:
                            async for chunk in resp.content.iter_any():
                                for line in lines.feed(chunk):
                                    event = stream.feed(line)
                                    if event is not None:
                                        yield event
                        except (aiohttp.ClientError, OSError, TimeoutError):
                            step = stream.dropped()  # cut mid-chunk, or silent too long
                        else:
                            step = stream.ended()
            except (aiohttp.ClientConnectionError, OSError, TimeoutError) as exc:
                step = stream.connect_failed(reason_of(exc))
            if step.action == "stop":
                return
            await asyncio.sleep(step.delay)
