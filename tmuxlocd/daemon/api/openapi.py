"""The OpenAPI 3.1 document of API v1, made from the route table and msgspec's schemas.

Parameters come from each route's query Struct, bodies from the answer Structs of
tmuxlocd.core.answers (and tmuxlocd.core.location, tmuxlocd.core.events), so the document is
exactly what the daemon decodes and encodes.  ``GET /v1/openapi.json`` serves it; clients
generate from it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgspec

from tmuxlocd import __version__
from tmuxlocd.core.answers import ErrorAnswer
from tmuxlocd.core.events import EVENT_TYPES, encoder
from tmuxlocd.daemon.api.params import FLAG_VALUES
from tmuxlocd.daemon.api.route import JSON, Route

REF = "#/components/schemas/{name}"

_ERRORS = {
    400: "a bad parameter or body; the code names it (bad_limit, bad_pane_id, ...)",
    401: "a TCP request without the bearer token",
    403: "another uid, or a Host that is not loopback",
    404: "not_found, or not_in_a_pane for self",
    409: "ambiguous: the id exists on several servers; add ?server=",
    413: "payload_too_large: a body over 64 KiB",
    500: "internal_error; see the daemon log",
    503: "sync_failed (with servers and Retry-After), or too_many_streams",
}
_NULL = {"type": "null"}


def document(routes: Iterable[Route[Any]]) -> dict[str, Any]:
    routes = tuple(routes)
    answers = [t for r in routes for reply in r.replies for t in _alternatives(reply.body)]
    queries = list(dict.fromkeys(r.query for r in routes))
    types: list[Any] = [ErrorAnswer, *answers, *queries]
    schemas, components = msgspec.json.schema_components(types, ref_template=REF)
    schema_of = {id(t): s for t, s in zip(types, schemas, strict=True)}
    # A query Struct is not a body: its fields become parameters, and it leaves components.
    query_schemas = {q: components.pop(q.__name__) for q in queries}
    error = {"content": {JSON: {"schema": schema_of[id(ErrorAnswer)]}}}
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        operation = _operation(route, query_schemas[route.query], schema_of, error)
        paths.setdefault(route.path, {})[route.method.lower()] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "tmuxlocd",
            "version": __version__,
            "description": "Where a process inside tmux is (SPEC §4, §5). GET routes also "
            "answer HEAD, except /v1/events.",
        },
        "servers": [
            {
                "url": "http://localhost",
                "description": "the daemon's Unix socket (peer credentials), or a loopback "
                "TCP listener (bearer token)",
            }
        ],
        "security": [{}, {"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "TCP listeners only; Unix sockets need no token",
                }
            },
        },
    }


def _operation(
    route: Route[Any], query: dict[str, Any], schema_of: dict[int, Any], error: dict[str, Any]
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "parameters": _parameters(route, query),
    }
    if route.body:
        # The query's fields, as a JSON object of strings (the daemon reads both alike).
        properties = {
            name: _not_null(prop)
            for name, prop in query["properties"].items()
            if name not in route.query.path_params
        }
        operation["requestBody"] = {
            "required": False,
            "description": "the query's fields, as a JSON object; both are checked, the body's win",
            "content": {
                JSON: {
                    "schema": {
                        "type": "object",
                        "properties": properties,
                        "additionalProperties": False,
                    }
                }
            },
        }
    operation["responses"] = _responses(route, schema_of, error)
    return operation


def _alternatives(body: Any) -> tuple[Any, ...]:
    return () if body is None else body if isinstance(body, tuple) else (body,)


def _body_schema(body: Any, schema_of: dict[int, Any]) -> dict[str, Any]:
    # msgspec has no schema of a union of untagged Structs: it cannot decode one either.
    schemas = [schema_of[id(t)] for t in _alternatives(body)]
    return schemas[0] if len(schemas) == 1 else {"oneOf": schemas}


SSE = "text/event-stream"


def _sse_event(payload: dict[str, Any]) -> dict[str, Any]:
    """One Server-Sent Event of a stream whose JSON ``data`` is ``payload`` (OpenAPI 3.1
    describes each event of a text/event-stream as an object of its fields), or of the text
    form (``format=text``): the lines of SPEC §4's text, or the bare pane id when the pane is
    gone (``pane.removed``) or has left the stream's window or session."""
    json_event = {
        "type": "object",
        "description": "format=sse: the event's JSON in data, its id and type in id and event",
        "required": ["id", "event", "data"],
        "properties": {
            "id": {"type": "string"},
            "event": {"type": "string", "enum": sorted(EVENT_TYPES)},
            "data": {
                "type": "string",
                "contentMediaType": JSON,
                "contentSchema": payload,
            },
        },
    }
    text_event = {
        "type": "object",
        "description": "format=text: data is the text form of the pane, its lines joined "
        "with newlines; or, once the pane is gone or outside the stream's window or session, "
        "its bare id (%N); lagged carries no data",
        "required": ["id", "event"],
        "properties": {
            "id": {"type": "string"},
            "event": {"type": "string", "enum": sorted(EVENT_TYPES)},
            "data": {
                "type": "string",
                "anyOf": [{"pattern": "^tmux location"}, {"pattern": "^%[0-9]+$"}],
            },
        },
    }
    return {"anyOf": [json_event, text_event]}


def document_bytes(routes: Iterable[Route[Any]]) -> bytes:
    return encoder.encode(document(routes))


def _parameters(route: Route[Any], schema: dict[str, Any]) -> list[dict[str, Any]]:
    required = set(schema.get("required", ()))
    out: list[dict[str, Any]] = []
    for name, prop in schema["properties"].items():
        where = "path" if name in route.query.path_params else "query"
        if where == "path" and "{" + name + "}" not in route.path:
            continue  # a path field of the Struct this path has not (neighbors/{direction})
        param: dict[str, Any] = {
            "name": name,
            "in": where,
            "required": where == "path" or name in required,
            "schema": _not_null(prop),
        }
        if "description" in param["schema"]:
            param["description"] = param["schema"].pop("description")
        if param["schema"].get("type") == "array":
            param["style"], param["explode"] = "form", False  # a comma list
        if param["schema"].get("type") == "boolean":
            # A flag is one of these words (the decoder reads exactly these), not JSON's
            # true/false alone.
            param["schema"] = {
                "type": "string",
                "enum": list(FLAG_VALUES),
                **{k: v for k, v in param["schema"].items() if k not in ("type", "default")},
            }
            param["allowEmptyValue"] = True
        out.append(param)
    if route.etag:
        out.append(
            {
                "name": "If-None-Match",
                "in": "header",
                "required": False,
                "schema": {"type": "string"},
                "description": "an ETag of an earlier answer: 304 while the body is unchanged",
            }
        )
    return out


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    """An optional parameter is absent, never null: ``X | None`` is documented as ``X``."""
    prop = dict(prop)
    if prop.get("default", 0) is None:
        del prop["default"]
    branches = prop.get("anyOf")
    if branches is not None and _NULL in branches:
        rest = [b for b in branches if b != _NULL]
        del prop["anyOf"]
        if len(rest) == 1:
            return {**rest[0], **prop}
        prop["anyOf"] = rest
    return prop


def _responses(
    route: Route[Any], schema_of: dict[int, Any], error: dict[str, Any]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for reply in route.replies:
        entry: dict[str, Any] = {"description": reply.description}
        content: dict[str, Any] = {}
        if reply.body is not None:
            for media in reply.media:
                schema = _body_schema(reply.body, schema_of)
                if media == SSE:
                    schema = _sse_event(schema)
                content[media] = {"schema": schema}
        if reply.text:
            content["text/plain"] = {"schema": {"type": "string"}}
        if content:
            entry["content"] = content
        if route.etag and reply.status == 200:
            entry["headers"] = {"ETag": {"schema": {"type": "string"}}}
        out[str(reply.status)] = entry
    if route.etag:
        out["304"] = {"description": "not modified: the If-None-Match ETag still holds"}
    statuses = {401, 403, 500, *route.errors}
    if route.body or route.query.__struct_fields__:
        statuses.add(400)
    if route.method == "POST":
        statuses.add(413)
    for status in sorted(statuses):
        out[str(status)] = {"description": _ERRORS[status], **error}
    return out
