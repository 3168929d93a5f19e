"""HTTP API, version 1 (SPEC §4) and its change streams (SPEC §5).

``create_app(hub)`` builds the aiohttp application served on every listener.  Handlers only
read the hub (and ask it to re-sync); identity comes from the kernel (``SO_PEERCRED`` on Unix
sockets), never from anything the client says.  Every answer is JSON encoded by msgspec, and
every error, aiohttp's own included, has the form ``{"error": {"code", "message"}}``.

Each change stream is its own request task with a bounded hub queue: a slow reader blocks
only its own writes, and when it falls too far behind it is told ``lagged`` and given a fresh
snapshot instead of growing the daemon's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import os
import re
import socket
import time
import weakref
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Literal, NoReturn

import msgspec
from aiohttp import web

from tmuxlocd import __version__, queries
from tmuxlocd.answers import (
    Health,
    PaneList,
    PaneSummaryList,
    SelfAnswer,
    ServerFailure,
    ServerHealth,
    SyncAnswer,
    summary_of,
)
from tmuxlocd.errors import SyncFailed
from tmuxlocd.events import (
    CHANGE_TYPES,
    HEARTBEAT_JSON,
    encoder,
)
from tmuxlocd.hub import QUEUE_SIZE, Hub, Published, Subscriber
from tmuxlocd.identity import identify, peer_credentials
from tmuxlocd.layout import DIRECTIONS, Direction
from tmuxlocd.location import Location, text_form
from tmuxlocd.observer import resolve_server
from tmuxlocd.queries import Selection
from tmuxlocd.streams import SSE_HEARTBEAT, SnapshotFrames, StreamCore, StreamFormat

log = logging.getLogger(__name__)

MAX_BODY = 64 * 1024  # SPEC §6
MAX_STREAMS = 1000
HEARTBEAT_S = 15.0
WRITE_TIMEOUT_S = 30.0  # a stream whose reader takes no bytes for this long is ended
LIMIT_DEFAULT = 100
LIMIT_MAX = 1000

# ----------------------------------------------------------------------------------------------
# Errors.

_CODE_OF_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "ambiguous",
    413: "payload_too_large",
    503: "unavailable",
}


class ApiError(Exception):
    """An answer with an error body; raised anywhere below a handler."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        headers: dict[str, str] | None = None,
        servers: tuple[ServerFailure, ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.servers = servers


class _ErrorBody(msgspec.Struct, frozen=True, omit_defaults=True):
    code: str
    message: str
    servers: tuple[ServerFailure, ...] | None = None  # sync_failed: which, and why


class _Error(msgspec.Struct, frozen=True):
    error: _ErrorBody


def error_response(
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
    servers: tuple[ServerFailure, ...] | None = None,
) -> web.Response:
    return web.Response(
        status=status,
        body=encoder.encode(_Error(_ErrorBody(code, message, servers))),
        content_type="application/json",
        headers=headers,
    )


def sync_failed(exc: SyncFailed) -> ApiError:
    """503 ``sync_failed``: the re-read a barrier or ?fresh=1 asked for was not published."""
    servers = tuple(
        ServerFailure(socket_path=path, error=why) for path, why in sorted(exc.servers.items())
    )
    return ApiError(
        503, "sync_failed", f"tmux could not be re-read: {exc}", {"Retry-After": "1"}, servers
    )


def _bad(param: str, value: str, expected: str) -> NoReturn:
    raise ApiError(400, f"bad_{param}", f"bad {param} {value!r}: expected {expected}")


# ----------------------------------------------------------------------------------------------
# Application state.


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    tcp_token: str | Callable[[], str] | None
    heartbeat: float
    max_streams: int
    queue_size: int
    write_timeout: float


HUB = web.AppKey("hub", Hub)
SETTINGS = web.AppKey("settings", Settings)
STREAMS: web.AppKey[set[_Stream]] = web.AppKey("streams")
FRAMES = web.AppKey("snapshot frames", SnapshotFrames)


def create_app(
    hub: Hub,
    *,
    tcp_token: str | Callable[[], str] | None = None,
    heartbeat: float = HEARTBEAT_S,
    max_streams: int = MAX_STREAMS,
    queue_size: int = QUEUE_SIZE,
    write_timeout: float = WRITE_TIMEOUT_S,
) -> web.Application:
    """The v1 application over ``hub``.

    ``tcp_token`` is the bearer token TCP requests must carry, or what gives it at each
    request (so that a rotated token takes effect at once; None: every TCP request gets
    401).  ``heartbeat``, ``max_streams`` and ``queue_size`` (per stream, before it is
    lagged) are the SPEC's figures by default; tests shorten them.
    """
    app = web.Application(middlewares=[_errors], client_max_size=MAX_BODY)
    app[HUB] = hub
    app[SETTINGS] = Settings(
        tcp_token=tcp_token,
        heartbeat=heartbeat,
        max_streams=max_streams,
        queue_size=queue_size,
        write_timeout=write_timeout,
    )
    app[STREAMS] = set()
    app[FRAMES] = SnapshotFrames()
    app.on_shutdown.append(_end_streams)
    app.router.add_routes(
        [
            web.get("/v1/self", get_self),
            web.get("/v1/panes", get_panes),
            web.get("/v1/panes/{pane}", get_pane),
            web.get("/v1/panes/{pane}/neighbors", get_neighbors),
            web.get("/v1/panes/{pane}/neighbors/{direction}", get_neighbors),
            web.get("/v1/tree", get_tree),
            web.get("/v1/events", get_events, allow_head=False),
            web.post("/v1/sync", post_sync),
            web.post("/v1/notify", post_notify),
            web.get("/v1/health", get_health),
        ]
    )
    return app


async def _end_streams(app: web.Application) -> None:
    # Long-lived responses must end here, or a graceful stop waits out its whole timeout.
    streams = app[STREAMS]
    for stream in list(streams):
        stream.close()


# ----------------------------------------------------------------------------------------------
# One middleware: who may ask, then the handler, every failure turned into the error JSON.
# (One layer, not two: each aiohttp middleware costs a few microseconds on every request.)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        _guard(request)
        return await handler(request)
    except ApiError as exc:
        return error_response(exc.status, exc.code, exc.message, exc.headers, exc.servers)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _http_error(request, exc)
    except (asyncio.CancelledError, ConnectionError):
        raise
    except Exception:
        log.exception(
            "request failed", extra={"http_method": request.method, "http_path": request.path}
        )
        return error_response(500, "internal_error", "internal error; see the daemon log")


def _http_error(request: web.Request, exc: web.HTTPException) -> web.Response:
    headers: dict[str, str] = {}
    if exc.status == 404:
        message = f"no such resource: {request.path}"
    elif exc.status == 405:
        allow = exc.headers.get("Allow", "")
        headers["Allow"] = allow
        message = f"{request.method} is not allowed on {request.path} (allowed: {allow})"
    elif exc.status == 413:
        message = f"request body larger than {MAX_BODY} bytes"
    else:
        message = exc.reason
    code = _CODE_OF_STATUS.get(exc.status, "bad_request" if exc.status < 500 else "internal_error")
    return error_response(exc.status, code, message, headers)


Listener = Literal["unix", "tcp"]
_UID = os.getuid()


# SO_PEERCRED is fixed when a connection is made, so it is read once per connection, not once
# per request (a keep-alive client asks many times).
_CONNECTIONS: weakref.WeakKeyDictionary[object, tuple[Listener, int | None]] = (
    weakref.WeakKeyDictionary()
)


def _listener(request: web.Request) -> tuple[Listener, int | None]:
    """The kind of socket the request came on, and (Unix) the peer's pid."""
    transport = request.transport
    known = _CONNECTIONS.get(transport) if transport is not None else None
    if known is None:
        known = _read_listener(request)
        if transport is not None:
            _CONNECTIONS[transport] = known
    return known


def _read_listener(request: web.Request) -> tuple[Listener, int | None]:
    transport = request.transport
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is None:
        raise ApiError(403, "forbidden", "the connection is gone")
    if sock.family == socket.AF_UNIX:
        peer = peer_credentials(sock)
        if peer is None:
            raise ApiError(403, "forbidden", "no peer credentials on this socket")
        if peer.uid != _UID:
            raise ApiError(
                403, "forbidden", f"uid {peer.uid} may not use the daemon of uid {_UID}"
            )
        return "unix", peer.pid
    return "tcp", None


def _loopback_host(host: str) -> bool:
    if host.startswith("["):
        name = host[1 : host.find("]")] if "]" in host else ""
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _guard(request: web.Request) -> None:
    """Who may ask: same uid on Unix sockets; bearer token and a loopback Host on TCP."""
    kind, _ = _listener(request)
    if kind == "tcp":
        token = request.app[SETTINGS].tcp_token
        if callable(token):
            token = token()
        given = request.headers.get("Authorization", "")
        if token is None or not hmac.compare_digest(
            given.encode("utf-8", "replace"), f"Bearer {token}".encode()
        ):
            raise ApiError(
                401,
                "unauthorized",
                "TCP requests need 'Authorization: Bearer <token>'",
                {"WWW-Authenticate": "Bearer"},
            )
        if not _loopback_host(request.headers.get("Host", "")):
            raise ApiError(403, "forbidden", "the Host header must name a loopback host")
    length = request.content_length
    if length is not None and length > MAX_BODY:
        raise ApiError(413, "payload_too_large", f"request body larger than {MAX_BODY} bytes")


# ----------------------------------------------------------------------------------------------
# Parameters and ids.

_NUMBER = r"[0-9]{1,9}"
_PANE_RE = re.compile(rf"%?({_NUMBER})")
_WINDOW_RE = re.compile(rf"@?({_NUMBER})")
_SESSION_RE = re.compile(rf"\$?({_NUMBER})")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def parse_id(value: str, kind: Literal["pane", "window", "session"]) -> str:
    """``3``/``%3`` -> ``%3`` (and ``@``/``$`` likewise); ``self`` stays ``self``."""
    if value == "self":
        return value
    pattern, sigil = {
        "pane": (_PANE_RE, "%"),
        "window": (_WINDOW_RE, "@"),
        "session": (_SESSION_RE, "$"),
    }[kind]
    m = pattern.fullmatch(value)
    if m is None:
        raise ApiError(
            400,
            f"bad_{kind}_id",
            f"bad {kind} id {value!r}: expected a number, {sigil}N or self",
        )
    return f"{sigil}{int(m.group(1))}"


def _flag(request: web.Request, name: str) -> bool:
    value = request.query.get(name)
    if value is None:
        return False
    if value.lower() in _TRUE or value == "":
        return True
    if value.lower() in _FALSE:
        return False
    _bad(name, value, "0 or 1")


def _int(request: web.Request, name: str, default: int | None, low: int, high: int) -> int | None:
    value = request.query.get(name)
    if value is None:
        return default
    if not (value.isascii() and value.isdigit()) or not low <= int(value) <= high:
        _bad(name, value, f"an integer from {low} to {high}")
    return int(value)


def _choice(request: web.Request, name: str, choices: Sequence[str]) -> str | None:
    value = request.query.get(name)
    if value is not None and value not in choices:
        _bad(name, value, " or ".join(choices))
    return value


class _Query:
    """One request's view of the hub: who the caller is, which server it names."""

    def __init__(self, request: web.Request) -> None:
        self.request = request
        self.hub = request.app[HUB]
        self.accept_ancestor = _choice(request, "accept", ("ancestor",)) is not None
        self._self: SelfAnswer | None = None

    def who(self) -> SelfAnswer:
        if self._self is None:
            kind, pid = _listener(self.request)
            if kind != "unix" or pid is None:
                raise ApiError(
                    400,
                    "no_peer_credentials",
                    "'self' needs the Unix socket: TCP carries no peer credentials",
                )
            self._self = identify(self.hub, pid, accept_ancestor=self.accept_ancestor)
        return self._self

    def self_location(self) -> Location:
        answer = self.who()
        if answer.location is None:
            raise ApiError(
                404,
                "not_in_a_pane",
                f"the caller (pid {answer.caller.pid}) is not in a tmux pane: {answer.reason}",
            )
        return answer.location

    def server(self) -> str | None:
        value = self.request.query.get("server")
        if value is None:
            return None
        if value == "self":
            return self.self_location().server.socket_path
        if not value or "\0" in value:
            _bad("server", value, "a socket path, a -L name or self")
        path = resolve_server(value)
        if path not in self.hub.servers:
            raise ApiError(404, "not_found", f"no watched tmux server at {path}")
        return path

    def pane(self, raw: str) -> Location:
        pane_id = parse_id(raw, "pane")
        if pane_id == "self":
            return self.self_location()
        try:
            return queries.find_pane(self.hub, pane_id, self.server())
        except queries.QueryError as exc:
            if exc.code == "ambiguous":
                raise _ambiguous("pane", pane_id, exc.servers) from None
            raise ApiError(404, exc.code, exc.message) from None

    def scope(self, kind: Literal["window", "session"], raw: str) -> tuple[str, str]:
        """A window or session id -> (socket path, id), on the one server that has it."""
        ident = parse_id(raw, kind)
        if ident == "self":
            loc = self.self_location()
            return loc.server.socket_path, loc.window.id if kind == "window" else loc.session.id
        server = self.server()
        paths = [
            path
            for path, entry in self.hub.servers.items()
            if (server is None or path == server)
            and ident in (entry.state.windows if kind == "window" else entry.state.sessions)
        ]
        if not paths:
            raise ApiError(404, "not_found", f"no {kind} {ident}")
        if len(paths) > 1:
            raise _ambiguous(kind, ident, paths)
        return paths[0], ident

    async def fresh(self) -> None:
        if _flag(self.request, "fresh"):
            # Shielded: a client hanging up must not cancel a re-sync others may share.
            try:
                await asyncio.shield(self.hub.sync())
            except SyncFailed as exc:
                raise sync_failed(exc) from None


def _ambiguous(kind: str, ident: str, paths: Iterable[str]) -> ApiError:
    listed = ", ".join(sorted(paths))
    return ApiError(
        409, "ambiguous", f"{kind} {ident} exists on several servers ({listed}); add ?server="
    )


# ----------------------------------------------------------------------------------------------
# Snapshot answers: JSON or text, with a strong ETag.


def _etag(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def _etag_matches(header: str, etag: str) -> bool:
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


def _answer(
    request: web.Request,
    body: bytes,
    content_type: str = "application/json",
    etag_of: bytes | None = None,
) -> web.Response:
    etag = _etag(body if etag_of is None else etag_of)
    inm = request.headers.get("If-None-Match")
    headers = {"ETag": etag, "Vary": "Accept"}
    if inm is not None and _etag_matches(inm, etag):
        return web.Response(status=304, headers=headers)
    if content_type == "text/plain":
        return web.Response(body=body, content_type="text/plain", charset="utf-8", headers=headers)
    return web.Response(body=body, content_type=content_type, headers=headers)


def _json(request: web.Request, value: object) -> web.Response:
    return _answer(request, encoder.encode(value))


def _wants_text(request: web.Request) -> bool:
    fmt = _choice(request, "format", ("json", "text"))
    if fmt is not None:
        return fmt == "text"
    accept = request.headers.get("Accept", "")
    return "text/plain" in accept and "application/json" not in accept


def _json_only(request: web.Request) -> None:
    _choice(request, "format", ("json",))


def _text_options(request: web.Request) -> tuple[int | None, bool]:
    return _int(request, "turn", None, 0, 10**9), _flag(request, "neighbors")


def _text_answer(
    request: web.Request, loc: Location, turn: int | None, with_neighbors: bool
) -> web.Response:
    """The text form.  Its ETag is that of the text without the turn label: a harness asks
    each turn with ``turn=N`` and ``If-None-Match`` and must get 304 while the location is
    unchanged (the per-turn pattern), which an ETag over the label could never give."""
    body = text_form(loc, turn=turn, with_neighbors=with_neighbors).encode("utf-8")
    unlabelled = (
        body
        if turn is None
        else text_form(loc, with_neighbors=with_neighbors).encode("utf-8")
    )
    return _answer(request, body, "text/plain", etag_of=unlabelled)


# ----------------------------------------------------------------------------------------------
# Handlers.


async def get_self(request: web.Request) -> web.StreamResponse:
    q = _Query(request)
    text = _wants_text(request)
    turn, with_neighbors = _text_options(request)
    await q.fresh()
    answer = q.who()
    if not text:
        return _json(request, answer)
    if answer.location is None:
        return web.Response(status=204)
    return _text_answer(request, answer.location, turn, with_neighbors)


async def get_pane(request: web.Request) -> web.StreamResponse:
    q = _Query(request)
    text = _wants_text(request)
    turn, with_neighbors = _text_options(request)
    await q.fresh()
    loc = q.pane(request.match_info["pane"])
    if not text:
        return _json(request, loc)
    return _text_answer(request, loc, turn, with_neighbors)


def _selection(q: _Query, *, pane: str | None = None) -> Selection:
    """The filters ``server``, ``window``, ``session`` (and ``pane`` for streams)."""
    query = q.request.query
    server = q.server()
    pane_id: str | None = None
    if pane is not None:
        loc = q.pane(pane)
        server, pane_id = loc.server.socket_path, loc.pane.id
    window = session = None
    if "window" in query:
        path, window = q.scope("window", query["window"])
        server = _same_server(server, path)
    if "session" in query:
        path, session = q.scope("session", query["session"])
        server = _same_server(server, path)
    return Selection(server=server, pane=pane_id, window=window, session=session)


def _same_server(current: str | None, path: str) -> str:
    if current is not None and current != path:
        raise ApiError(404, "not_found", "the filters name different servers: nothing matches")
    return path


async def get_panes(request: web.Request) -> web.StreamResponse:
    q = _Query(request)
    _json_only(request)
    limit = _int(request, "limit", LIMIT_DEFAULT, 0, LIMIT_MAX)
    offset = _int(request, "offset", 0, 0, 10**9)
    assert limit is not None and offset is not None
    summary = _choice(request, "detail", ("full", "summary")) == "summary"
    await q.fresh()
    selection = _selection(q)
    matched = queries.select(q.hub, selection)
    page = matched[offset : offset + limit]
    return _json(
        request,
        PaneSummaryList(
            panes=tuple(summary_of(loc) for loc in page),
            total=len(matched),
            truncated=offset + len(page) < len(matched),
        )
        if summary
        else PaneList(
            panes=tuple(page), total=len(matched), truncated=offset + len(page) < len(matched)
        ),
    )


async def get_neighbors(request: web.Request) -> web.StreamResponse:
    q = _Query(request)
    _json_only(request)
    raw = request.match_info.get("direction")
    direction: Direction | None = None
    if raw is not None:
        if raw not in DIRECTIONS:
            _bad("direction", raw, " or ".join(DIRECTIONS))
        direction = DIRECTIONS[DIRECTIONS.index(raw)]
    await q.fresh()
    loc = q.pane(request.match_info["pane"])
    return _json(request, queries.neighbors(q.hub, loc, direction))


async def get_tree(request: web.Request) -> web.StreamResponse:
    q = _Query(request)
    _json_only(request)
    await q.fresh()
    return _json(request, queries.tree(q.hub, q.server()))


async def get_health(request: web.Request) -> web.StreamResponse:
    _json_only(request)
    hub = request.app[HUB]
    now = time.monotonic()
    servers = tuple(
        ServerHealth(
            socket_path=path,
            running=entry.state.running,
            sessions=len(entry.state.sessions),
            windows=len(entry.state.windows),
            panes=len(entry.state.panes),
            observer=entry.observer,
            last_sync_age_s=None if entry.last_sync is None else round(now - entry.last_sync, 3),
            last_error=entry.last_error,
        )
        for path, entry in sorted(hub.servers.items())
    )
    return _json(
        request,
        Health(
            # "degraded": some server cannot be read, and what the daemon answers for it may
            # be stale; each such server's last_error says why.
            status="degraded" if hub.degraded() else "ok",
            version=__version__,
            uptime_s=round(now - hub.started, 3),
            servers=servers,
            subscribers=len(hub.subscribers),
        ),
    )


async def post_sync(request: web.Request) -> web.StreamResponse:
    q = _Query(request)
    server = q.server()
    try:
        seq = await asyncio.shield(q.hub.sync(server))
    except SyncFailed as exc:
        raise sync_failed(exc) from None
    return web.Response(body=encoder.encode(SyncAnswer(seq)), content_type="application/json")


class NotifyBody(msgspec.Struct, frozen=True, kw_only=True):
    hook: str | None = None
    server: str | None = None
    target: str | None = None


_TARGET_RE = re.compile(rf"[%@$]?{_NUMBER}")


async def post_notify(request: web.Request) -> web.StreamResponse:
    body = await request.read()
    fields = NotifyBody()
    if body.strip():
        try:
            fields = msgspec.json.decode(body, type=NotifyBody)
        except msgspec.DecodeError as exc:
            raise ApiError(400, "bad_json", f"the body is not a notify object: {exc}") from None
    query = request.query
    hook = fields.hook if fields.hook is not None else query.get("hook")
    server = fields.server if fields.server is not None else query.get("server")
    target = fields.target if fields.target is not None else query.get("target")
    if target and _TARGET_RE.fullmatch(target) is None:
        _bad("target", target, "a pane, window or session id")
    if server is not None and (not server or "\0" in server):
        _bad("server", server, "a socket path or a -L name")
    path = resolve_server(server) if server else None
    extra = {"tmux_hook": (hook or "")[:64], "tmux_server": path or "", "tmux_target": target}
    log.debug("notified", extra=extra)
    request.app[HUB].notify(path)
    return web.Response(status=202, body=b'{"accepted":true}', content_type="application/json")


# ----------------------------------------------------------------------------------------------
# Change streams (SPEC §5).


class _Stream(StreamCore):
    """One ``GET /v1/events`` connection: the core's frames, written to the response."""

    def __init__(
        self,
        hub: Hub,
        settings: Settings,
        frames: SnapshotFrames,
        selection: Selection,
        types: frozenset[str],
        fmt: StreamFormat,
        *,
        interval: float | None,
        turn: int | None,
        with_neighbors: bool,
    ) -> None:
        super().__init__(hub, frames, selection, types, fmt, interval=interval, turn=turn,
                         with_neighbors=with_neighbors)
        self.settings = settings
        self.sub: Subscriber | None = None
        self.closing = False

    # -------------------------------------------------------------- life

    def close(self) -> None:
        self.closing = True
        if self.sub is not None:
            self.sub.close()

    async def run(
        self, request: web.Request, resume: int | None, reset: bool
    ) -> web.StreamResponse:
        loop = asyncio.get_running_loop()
        content_type = "application/x-ndjson" if self.fmt == "ndjson" else "text/event-stream"
        response = web.StreamResponse(
            headers={"Content-Type": content_type, "Cache-Control": "no-cache"}
        )
        with self.hub.subscribe(self.admits, self.settings.queue_size) as sub:
            self.sub = sub
            # Subscribed before the snapshot or the replay is taken, with no await between:
            # nothing published from here on can be missed, and the seq check drops doubles.
            first: list[bytes] = []
            backlog: list[Published] = []
            # A text stream cannot resume its text: it always starts from the current text.
            if resume is not None and self.fmt != "text":
                self.members_known = False
                self.last_seq = resume
                backlog = [
                    item for item in self.hub.since(resume) if self.admits(item.event)
                ]
            else:
                if reset and self.fmt != "text":
                    first.append(self.frame_event(self.hub.marker("reset")))
                snap = self.snapshot()
                self.last_seq = snap.seq
                first.append(self.frame_snapshot(snap))
            try:
                await response.prepare(request)
            except ConnectionError:
                return response  # the client hung up before the stream began
            next_beat = loop.time() + self.settings.heartbeat
            try:
                # `first` is let go at once: a 1,000-pane snapshot is most of a megabyte,
                # and a stream lives for hours.
                out, first = first, []
                pending, backlog = backlog, []
                while True:
                    now = loop.time()
                    out += self.process(pending, now)
                    if now >= next_beat:
                        out.append(
                            HEARTBEAT_JSON + b"\n" if self.fmt == "ndjson" else SSE_HEARTBEAT
                        )
                        next_beat = now + self.settings.heartbeat
                    if out:
                        async with asyncio.timeout(self.settings.write_timeout):
                            await response.write(b"".join(out))
                        out = []
                    timeout = next_beat - loop.time()
                    if self.coalescer is not None and self.coalescer.holding:
                        timeout = min(timeout, self.coalescer.next_allowed - loop.time())
                    await sub.wait(max(timeout, 0.0))
                    if sub.closed or self.closing:
                        break
                    if sub.lagged:
                        # Dropped events: say so, and start over from a fresh snapshot.
                        sub.drain()
                        sub.lagged = False
                        if self.coalescer is not None:
                            self.coalescer.clear()
                        out.append(self.frame_event(self.hub.marker("lagged")))
                        snap = self.snapshot()
                        self.last_seq = snap.seq
                        out.append(self.frame_snapshot(snap))
                    pending = sub.drain()
                with contextlib.suppress(ConnectionError):
                    await response.write_eof()
            except ConnectionError:
                pass  # the reader went away
            except TimeoutError:
                # The reader stopped reading: drop the connection, or the last write would
                # wait on it again.
                log.debug("stream reader stalled; closed", extra={"sse_format": self.fmt})
                if request.transport is not None:
                    request.transport.abort()
        return response

async def get_events(request: web.Request) -> web.StreamResponse:
    q = _Query(request)
    query = request.query
    fmt = _choice(request, "format", ("sse", "ndjson", "text"))
    if fmt is None:
        fmt = "ndjson" if "application/x-ndjson" in request.headers.get("Accept", "") else "sse"
    types = CHANGE_TYPES
    if "types" in query:
        names = [t.strip() for t in query["types"].split(",") if t.strip()]
        for name in names:
            if name not in CHANGE_TYPES:
                _bad("types", name, "a comma list of " + ", ".join(sorted(CHANGE_TYPES)))
        types = frozenset(names)
    interval_ms = _int(request, "min_interval_ms", None, 0, 3_600_000)
    turn, with_neighbors = _text_options(request)
    if fmt == "text" and "pane" not in query:
        raise ApiError(400, "bad_format", "format=text needs ?pane= (self or an id)")
    selection = _selection(q, pane=query.get("pane"))
    since = request.headers.get("Last-Event-ID") or query.get("since")
    # Only ASCII can be an id of ours (and int() would take other scripts' digits).
    resume = q.hub.parse_event_id(since) if since and since.isascii() else None
    streams = request.app[STREAMS]
    settings = request.app[SETTINGS]
    if len(streams) >= settings.max_streams:
        raise ApiError(
            503,
            "too_many_streams",
            f"at most {settings.max_streams} streams at once",
            {"Retry-After": "1"},
        )
    stream = _Stream(
        q.hub,
        settings,
        request.app[FRAMES],
        selection,
        types,
        "ndjson" if fmt == "ndjson" else "text" if fmt == "text" else "sse",
        interval=interval_ms / 1000 if interval_ms else None,
        turn=turn,
        with_neighbors=with_neighbors,
    )
    streams.add(stream)
    try:
        return await stream.run(request, resume, reset=since is not None and resume is None)
    finally:
        streams.discard(stream)


__all__ = [
    "ApiError",
    "Selection",
    "create_app",
    "error_response",
    "parse_id",
]
