"""HTTP API, version 1 (SPEC §4) and its change streams (SPEC §5).

Along its seams: ``app`` (create_app, the middleware), ``routes`` (the route table: handler,
query Struct, documented answers), ``auth`` (who may ask), ``params`` (one query Struct per
endpoint), ``views`` (snapshot endpoints), ``events`` (the stream loop), ``openapi`` (the
document served at ``GET /v1/openapi.json``), ``errors``, ``replies`` (ETag answers).
"""

from __future__ import annotations

from tmuxlocd.core.queries import Selection
from tmuxlocd.daemon.api.app import context_of, create_app
from tmuxlocd.daemon.api.errors import ApiError, error_response, sync_failed
from tmuxlocd.daemon.api.params import parse_id

__all__ = [
    "ApiError",
    "Selection",
    "context_of",
    "create_app",
    "error_response",
    "parse_id",
    "sync_failed",
]
