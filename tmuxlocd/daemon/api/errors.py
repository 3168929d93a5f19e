"""Errors of the HTTP API: raised below a handler, answered as ``{"error": {code, message}}``."""

from __future__ import annotations

from collections.abc import Iterable

from aiohttp import web

from tmuxlocd.core.answers import ErrorAnswer, ErrorBody, ServerFailure
from tmuxlocd.core.errors import SyncFailed
from tmuxlocd.core.events import encoder

MAX_BODY = 64 * 1024  # SPEC §6
ECHO_MAX = 200  # characters of a client's text an error repeats


def clip(text: str, limit: int = ECHO_MAX) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was: an error never repeats a
    megabyte it was sent."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


_CODE_OF_STATUS = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "ambiguous",
    413: "payload_too_large",
    417: "expectation_failed",
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
        *,
        close: bool = False,
    ) -> None:
        super().__init__(message)
        self.close = close  # the connection ends after the answer (its request is unreadable)
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers or {}
        self.servers = servers

    def response(self) -> web.Response:
        resp = error_response(self.status, self.code, self.message, self.headers, self.servers)
        if self.close:
            resp.force_close()
        return resp


def error_response(
    status: int,
    code: str,
    message: str,
    headers: dict[str, str] | None = None,
    servers: tuple[ServerFailure, ...] | None = None,
) -> web.Response:
    return web.Response(
        status=status,
        body=encoder.encode(ErrorAnswer(ErrorBody(code, message, servers))),
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


def ambiguous(kind: str, ident: str, paths: Iterable[str]) -> ApiError:
    listed = ", ".join(sorted(paths))
    return ApiError(
        409, "ambiguous", f"{kind} {ident} exists on several servers ({listed}); add ?server="
    )


def http_error(request: web.Request, exc: web.HTTPException) -> web.Response:
    """aiohttp's own refusals (no route, wrong method, body too large) in our error form."""
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
