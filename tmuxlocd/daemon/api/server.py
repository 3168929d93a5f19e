"""The HTTP server under the application: what aiohttp answers on its own, in the error JSON.

aiohttp answers some requests before any route sees them: a request its parser refuses (a line
or header over 8,190 bytes, too many headers, a malformed request line, an encoding it cannot
decode) and a request no resource can match (``CONNECT host:port``, ``OPTIONS *``).  Its own
answers are ``text/plain``; SPEC §4 promises ``{"error": {"code", "message"}}`` for every
error, and SPEC §6 the token and Host checks before anything else.  ``ApiRunner`` serves the
application through a request handler whose ``handle_error`` answers in that form, and sends a
request whose target is not a path through the application's guard first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import (
    BadHttpMethod,
    BadStatusLine,
    ContentEncodingError,
    InvalidHeader,
    LineTooLong,
)
from aiohttp.web_protocol import RequestHandler

from tmuxlocd.daemon.api.app import context_of
from tmuxlocd.daemon.api.auth import Guard
from tmuxlocd.daemon.api.errors import ApiError, clip, error_response

log = logging.getLogger(__name__)


def parser_error(status: int, exc: BaseException | None, message: str | None) -> web.Response:
    """The error JSON of what aiohttp's parser (or its request handler) refused."""
    words = clip(str(getattr(exc, "message", None) or message or exc or "bad request"))
    if status >= 500:
        code, words = "internal_error", "internal error; see the daemon log"
    elif isinstance(exc, LineTooLong):
        code = "line_too_long"
    elif isinstance(exc, ContentEncodingError):
        code = "bad_encoding"
    elif isinstance(exc, InvalidHeader):
        code = "bad_header"
    elif isinstance(exc, (BadStatusLine, BadHttpMethod)):
        code = "bad_request_line"
    else:
        code = "bad_request"
    return error_response(status, code, words)


class _Protocol(RequestHandler):
    """aiohttp's request handler, its own refusals answered in the error JSON."""

    def handle_error(
        self,
        request: Any,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if status >= 500:
            log.error("request failed in the HTTP layer", exc_info=exc)
        else:
            # A client's malformed bytes are the client's business: the log says so once,
            # quietly (aiohttp's own handle_error logs each with a traceback).
            log.debug("refused by the HTTP parser: %s", exc or message)
        if request.writer.output_size > 0:
            raise ConnectionError("the answer had begun; no error can follow it")
        resp = parser_error(status, exc, message)
        resp.force_close()
        return resp


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _Protocol(self, loop=self._loop, **self._kwargs)


RequestFn = Callable[[web.BaseRequest], Awaitable[web.StreamResponse]]


def _targets_first(guard: Guard, app_handler: RequestFn) -> RequestFn:
    """The application's handler, except for a target that is not a path (``CONNECT
    host:port``, ``OPTIONS *``), which no route can match: the guard first, then 404."""

    async def handle(request: web.BaseRequest) -> web.StreamResponse:
        if request.raw_path.startswith("/"):
            return await app_handler(request)
        try:
            guard.check(request)  # type: ignore[arg-type]  # reads headers and transport only
        except ApiError as exc:
            return exc.response()
        except (asyncio.CancelledError, ConnectionError):
            raise
        target = clip(request.raw_path)
        return error_response(404, "not_found", f"no such resource: {request.method} {target}")

    return handle


class ApiRunner(web.AppRunner):
    """``web.AppRunner`` whose server answers aiohttp's own refusals as the API's errors."""

    def __init__(self, app: web.Application, **kwargs: Any) -> None:
        super().__init__(app, **kwargs)
        self._guard = context_of(app).guard

    async def _make_server(self) -> web.Server:
        plain = await super()._make_server()
        # The server aiohttp made, remade with our request handler class: same handler,
        # request factory and settings (aiohttp has no parameter for the class).
        return _Server(
            _targets_first(self._guard, plain.request_handler),
            request_factory=plain.request_factory,
            handler_cancellation=plain.handler_cancellation,
            loop=plain._loop,
            **plain._kwargs,
        )
