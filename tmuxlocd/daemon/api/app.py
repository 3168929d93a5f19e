"""``create_app(hub)``: the v1 application served on every listener, built from the routes.

Handlers only read the hub (and ask it to re-sync).  Every answer is JSON encoded by msgspec,
and every error, aiohttp's own included, has the form ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import ChainMap
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import msgspec
from aiohttp import web
from aiohttp.http_exceptions import ContentEncodingError
from aiohttp.web_protocol import RequestPayloadError

from tmuxlocd.daemon.api import openapi, waits
from tmuxlocd.daemon.api.context import Context, Settings
from tmuxlocd.daemon.api.errors import (
    MAX_BODY,
    ApiError,
    clip,
    error_response,
    http_error,
)
from tmuxlocd.daemon.api.route import Route
from tmuxlocd.daemon.api.routes import ROUTES
from tmuxlocd.daemon.config import WRITE_TIMEOUT_S
from tmuxlocd.daemon.hub import QUEUE_SIZE, Hub

log = logging.getLogger(__name__)

MAX_STREAMS = 1000
HEARTBEAT_S = 15.0

REFUSALS = "refusals"  # the name of the last route, which answers what no other route takes

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

_CONTEXT = web.AppKey("tmuxlocd api", Context)


def create_app(
    hub: Hub,
    *,
    tcp_token: str | Callable[[], str] | None = None,
    heartbeat: float = HEARTBEAT_S,
    max_streams: int = MAX_STREAMS,
    queue_size: int = QUEUE_SIZE,
    write_timeout: float = WRITE_TIMEOUT_S,
    routes: tuple[Route[Any], ...] = ROUTES,
) -> web.Application:
    """The v1 application over ``hub``.

    ``tcp_token`` is the bearer token TCP requests must carry, or what gives it at each
    request (so that a rotated token takes effect at once; None: every TCP request gets
    401).  ``heartbeat``, ``max_streams`` and ``queue_size`` (per stream, before it is
    lagged) are the SPEC's figures by default; tests shorten them.
    """
    settings = Settings(
        tcp_token=tcp_token,
        heartbeat=heartbeat,
        max_streams=max_streams,
        queue_size=queue_size,
        write_timeout=write_timeout,
    )
    ctx = Context(hub, settings, lambda: openapi.document_bytes(routes))
    # No aiohttp middleware: each one costs every request a few coroutine layers (measured:
    # about a tenth of a /v1/self answer's CPU).  Each route's handler does what one did (who
    # may ask, then every failure as the error JSON), and the last route, matching any path and
    # method, answers what aiohttp would refuse on its own (no such route, wrong method).
    app = web.Application(client_max_size=MAX_BODY)
    app[_CONTEXT] = ctx
    app.on_shutdown.append(lambda _app: _end_streams(ctx))
    expect = _expect(ctx)
    for route in routes:
        handler = _bind(ctx, route)
        if route.method == "GET":
            app.router.add_get(
                route.path, handler, allow_head=route.allow_head, expect_handler=expect
            )
        else:
            app.router.add_route(route.method, route.path, handler, expect_handler=expect)
    # Any path at all: a decoded path may hold a newline, which ".*" would not match.
    fallback = app.router.add_resource(r"/{tail:[\s\S]*}", name=REFUSALS)
    fallback.add_route(
        "*", _guarded(ctx, lambda request: _refusal(request, fallback)), expect_handler=expect
    )
    return app


def context_of(app: web.Application) -> Context:
    """The Context an application was built with (tests look at its streams)."""
    return app[_CONTEXT]


async def _end_streams(ctx: Context) -> None:
    # Long-lived responses must end here, or a graceful stop waits out its whole timeout.
    for stream in list(ctx.streams):
        stream.close()
    waits.end_waits(ctx)  # each pending wait is answered 503 daemon_stopping


def _bind(ctx: Context, route: Route[Any]) -> Handler:
    """The aiohttp handler of a route: decode its query (and body) once, then call it."""
    decode = route.decoder.decode
    plan = route.decoder.plan
    call = route.handler
    body = route.body
    repeat = route.repeat
    empty: Mapping[str, str] = {}

    async def handle(request: web.Request) -> web.StreamResponse:
        if repeat is not None and (again := repeat(ctx, request)) is not None:
            return again
        # Most questions carry no query at all: skip building aiohttp's query mapping.
        source: Mapping[str, str] = request.query if request.query_string else empty
        if body:
            fields = await _body_fields(request, plan)
            if fields:
                decode(request.match_info, source)  # the query's own are checked too
                first = {name: source[name] for name in source}  # as .get() reads
                source = ChainMap(fields, first)
        elif request.body_exists:
            await read_body(request)  # unused, but one that does not decode is still a 400
        return await call(ctx, request, decode(request.match_info, source))

    return _guarded(ctx, handle)


def _expect(ctx: Context) -> Callable[[web.Request], Awaitable[web.StreamResponse | None]]:
    """aiohttp's handling of ``Expect`` (it runs before the route's handler), after the guard
    and with its 417 in the error JSON: ``100-continue`` only for who may ask."""

    async def expect(request: web.Request) -> web.StreamResponse | None:
        try:
            ctx.guard.check(request)
        except ApiError as exc:
            return exc.response()
        value = request.headers.get("Expect", "")
        if value.lower() != "100-continue":
            return error_response(
                417, "expectation_failed", f"unknown Expect: {clip(value)} (only 100-continue)"
            )
        if request.version >= (1, 1):
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            request.writer.output_size = 0  # the answer proper has not begun
        return None

    return expect


async def _refusal(request: web.Request, fallback: web.AbstractResource) -> web.StreamResponse:
    """What aiohttp's router would have refused: 405 where a route has the path, else 404."""
    allowed: set[str] = set()
    for resource in request.app.router.resources():
        if resource is not fallback:
            _, methods = await resource.resolve(request)
            allowed |= methods
    if allowed:
        raise web.HTTPMethodNotAllowed(request.method, allowed)
    raise web.HTTPNotFound()


_BODY = msgspec.json.Decoder(dict[str, str])


async def _body_fields(
    request: web.Request, plan: tuple[tuple[str, Any, bool], ...]
) -> dict[str, str]:
    """The fields a JSON body gives (an empty body gives none): an object of strings naming
    only the query's fields."""
    body = await read_body(request)
    if not body.strip():
        return {}
    try:
        fields = _BODY.decode(body)
    except msgspec.DecodeError as exc:
        raise ApiError(
            400, "bad_json", f"the body is not a JSON object of strings: {clip(str(exc))}"
        ) from None
    known = {name for name, _, in_path in plan if not in_path}
    unknown = sorted(set(fields) - known)
    if unknown:
        names = clip(", ".join(unknown))
        raise ApiError(400, "bad_json", f"the body has unknown fields: {names}")
    return fields


async def read_body(request: web.Request) -> bytes:
    """The request's body, decoded (``Content-Encoding``): one that does not decode is a 400
    naming its encoding, not a failure of the daemon."""
    try:
        return await request.read()
    except RequestPayloadError as exc:
        # The rest of the body cannot be read either: the connection ends with the answer
        # (aiohttp would otherwise read on after it, and fail again).
        if isinstance(exc.__cause__, ContentEncodingError):
            encoding = clip(request.headers.get("Content-Encoding", ""))
            raise ApiError(
                400, "bad_encoding", f"the body does not decode as {encoding}", close=True
            ) from None
        raise ApiError(
            400, "bad_body", f"the body cannot be read: {clip(str(exc))}", close=True
        ) from None


def _guarded(ctx: Context, handler: Handler) -> Handler:
    """``handler`` after the check of who may ask, every failure turned into the error JSON."""

    async def guarded(request: web.Request) -> web.StreamResponse:
        try:
            ctx.guard.check(request)
            return await handler(request)
        except ApiError as exc:
            return exc.response()
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return http_error(request, exc)
        except (asyncio.CancelledError, ConnectionError):
            raise
        except Exception:
            log.exception(
                "request failed", extra={"http_method": request.method, "http_path": request.path}
            )
            return error_response(500, "internal_error", "internal error; see the daemon log")

    return guarded
