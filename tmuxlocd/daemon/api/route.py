"""What a route is: its handler, its query Struct, and the answers it documents.

The route table (tmuxlocd.daemon.api.routes) is the one place a route is declared; the application
and the OpenAPI document are both made from it, so they cannot disagree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal

from aiohttp import web

from tmuxlocd.daemon.api.context import Context
from tmuxlocd.daemon.api.params import Q, QueryDecoder

JSON = "application/json"


@dataclass(frozen=True)
class Reply:
    """One documented success answer: its status and, per media type, the type of its body
    (a Struct or tagged union; a tuple of them for one of several; None for no body)."""

    status: int
    description: str
    body: Any = None
    media: tuple[str, ...] = (JSON,)
    text: bool = False  # also the text form (text/plain)


@dataclass(frozen=True)
class Route(Generic[Q]):
    method: Literal["GET", "POST"]
    path: str
    handler: Callable[[Context, web.Request, Q], Awaitable[web.StreamResponse]]
    query: type[Q]
    summary: str
    replies: tuple[Reply, ...]
    errors: tuple[int, ...] = ()  # beyond those every route may give (401, 403, 500, 400)
    # The query's fields may also come as a JSON object of strings (each checked as the query's
    # are, both checked; the body's win): the document's requestBody is made from the query.
    body: bool = False
    etag: bool = False  # a snapshot answer: ETag, If-None-Match, 304
    allow_head: bool = True
    # Called before the query is decoded: an answer kept for this exact request, or None.
    repeat: Callable[[Context, web.Request], web.StreamResponse | None] | None = None
    decoder: QueryDecoder[Q] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "decoder", QueryDecoder(self.query))

    @property
    def operation_id(self) -> str:
        """``GET /v1/panes/{pane}/neighbors`` -> ``get_panes_pane_neighbors``: stable, unique."""
        words = self.path.removeprefix("/v1/").replace("{", "").replace("}", "")
        return self.method.lower() + "_" + words.replace("/", "_").replace(".", "_")
