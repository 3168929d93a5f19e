"""Snapshot answers: JSON or text, with a strong ETag of the body (304 when it matches)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import NamedTuple

from aiohttp import web

from tmuxlocd.core.events import encoder
from tmuxlocd.core.location import Location, text_form


def _etag(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def _etag_matches(header: str, etag: str) -> bool:
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


class Prepared(NamedTuple):
    """An answer's body, type and ETag: what a request needs besides its own headers (and
    what may be kept for the next equal question: memo.Kept)."""

    body: bytes
    content_type: str
    etag: str


def prepare(
    body: bytes, content_type: str = "application/json", etag_of: bytes | None = None
) -> Prepared:
    return Prepared(body, content_type, _etag(body if etag_of is None else etag_of))


def respond(request: web.Request, ready: Prepared) -> web.Response:
    """The answer, or 304 when the request's If-None-Match names its ETag."""
    body, content_type, etag = ready
    inm = request.headers.get("If-None-Match")
    headers = {"ETag": etag, "Vary": "Accept"}
    if inm is not None and _etag_matches(inm, etag):
        return web.Response(status=304, headers=headers)
    if content_type == "text/plain":
        return web.Response(body=body, content_type="text/plain", charset="utf-8", headers=headers)
    return web.Response(body=body, content_type=content_type, headers=headers)


def answer(
    request: web.Request,
    body: bytes,
    content_type: str = "application/json",
    etag_of: bytes | None = None,
) -> web.Response:
    return respond(request, prepare(body, content_type, etag_of))


def json_answer(request: web.Request, value: object) -> web.Response:
    return answer(request, encoder.encode(value))


def prepare_json(value: object) -> Prepared:
    return prepare(encoder.encode(value))


def wants_text(request: web.Request, fmt: str | None) -> bool:
    """``?format=`` decides; without it, an Accept of text/plain (and not JSON) does."""
    if fmt is not None:
        return fmt == "text"
    accept = request.headers.get("Accept", "")
    return "text/plain" in accept and "application/json" not in accept


def text_answer(
    request: web.Request,
    loc: Location,
    turn: int | None,
    with_neighbors: bool,
    agents: Mapping[str, str] | None = None,
) -> web.Response:
    return respond(request, prepare_text(loc, turn, with_neighbors, agents))


def prepare_text(
    loc: Location,
    turn: int | None,
    with_neighbors: bool,
    agents: Mapping[str, str] | None = None,
) -> Prepared:
    """The text form.  Its ETag is that of the text without the turn label: a harness asks
    each turn with ``turn=N`` and ``If-None-Match`` and must get 304 while the location is
    unchanged (the per-turn pattern), which an ETag over the label could never give."""
    body = text_form(loc, turn=turn, with_neighbors=with_neighbors, agents=agents).encode()
    unlabelled = (
        body
        if turn is None
        else text_form(loc, with_neighbors=with_neighbors, agents=agents).encode()
    )
    return prepare(body, "text/plain", etag_of=unlabelled)
