"""GET /v1/openapi.json: the document against the live routes, the Structs and the behaviour."""

from __future__ import annotations

import inspect
from typing import Any

import msgspec
import pytest
from openapi_spec_validator import validate

from tests.api.apitest import A, Api, spec_state
from tmuxlocd.core import answers
from tmuxlocd.core.location import Location
from tmuxlocd.daemon.api import context_of
from tmuxlocd.daemon.api.app import REFUSALS
from tmuxlocd.daemon.hub import Hub

REF = "#/components/schemas/"
METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


async def fetch_document(api: Api) -> dict[str, Any]:
    status, body, resp = await api.get("/v1/openapi.json")
    assert status == 200
    assert resp.headers["Content-Type"].startswith("application/json")
    assert isinstance(body, dict)
    return body


def refs(value: Any) -> set[str]:
    """Every $ref under ``value``."""
    if isinstance(value, dict):
        found = {value["$ref"]} if isinstance(value.get("$ref"), str) else set()
        return found.union(*(refs(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(refs(v) for v in value))
    return set()


def operations(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (path, method.upper()): op
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in METHODS
    }


async def test_the_document_is_openapi_3_1(api: Api) -> None:
    doc = await fetch_document(api)
    validate(doc)  # the OpenAPI 3.1 meta-schema, JSON Schema 2020-12 dialect
    assert doc["openapi"].startswith("3.1.")
    assert {"info", "paths", "components"} <= set(doc)
    assert doc["info"]["title"] == "tmuxlocd" and doc["info"]["version"]
    schemas = doc["components"]["schemas"]
    for ref in refs(doc):
        assert ref.startswith(REF) and ref.removeprefix(REF) in schemas, ref
    ids = [op["operationId"] for op in operations(doc).values()]
    assert len(ids) == len(set(ids))


async def test_every_route_is_documented_and_every_documented_path_routed(api: Api) -> None:
    doc = await fetch_document(api)
    assert api.app is not None
    live = [
        (r.resource.canonical, r.method)
        for r in api.app.router.routes()
        if r.resource is not None and r.resource.name != REFUSALS
    ]
    routed = {(path, method) for path, method in live if method != "HEAD"}
    assert routed == set(operations(doc))
    # HEAD comes with GET (aiohttp answers it from the GET handler), but not for the stream
    # or the wait (a HEAD would wait as long as the GET).
    heads = {path for path, method in live if method == "HEAD"}
    gets = {path for path, method in routed if method == "GET"}
    assert heads == gets - {"/v1/events", "/v1/panes/{pane}/wait"}
    assert "/v1/openapi.json" in doc["paths"]


async def test_answers_reference_the_structs(api: Api) -> None:
    doc = await fetch_document(api)
    ops = operations(doc)

    def ok(path: str, method: str = "GET", status: str = "200") -> set[str]:
        response = ops[(path, method)]["responses"][status]
        return {ref.removeprefix(REF) for ref in refs(response.get("content", {}))}

    assert ok("/v1/self") == {"SelfAnswer"}
    assert ok("/v1/panes/{pane}") == {"Location"}
    assert ok("/v1/panes") == {"PaneList", "PaneSummaryList"}
    assert ok("/v1/panes/{pane}/neighbors") == {"PaneNeighbors"}
    assert ok("/v1/panes/{pane}/neighbors/{direction}") == {"DirectionNeighbors"}
    assert ok("/v1/tree") == {"Tree"}
    assert ok("/v1/health") == {"Health"}
    assert ok("/v1/sync", "POST") == {"SyncAnswer"}
    assert ok("/v1/notify", "POST", "202") == {"Accepted"}
    assert {"SnapshotEvent", "PaneChanged", "Lagged"} <= ok("/v1/events")
    schemas = doc["components"]["schemas"]
    # Every answer Struct is in the document, as msgspec itself describes it.
    structs = [
        cls
        for _, cls in inspect.getmembers(answers, inspect.isclass)
        if issubclass(cls, msgspec.Struct) and cls.__module__ == answers.__name__
    ]
    _, expected = msgspec.json.schema_components([*structs, Location], ref_template=REF + "{name}")
    for name, schema in expected.items():
        assert msgspec.json.decode(msgspec.json.encode(schema)) == schemas[name], name
    # Every error answer is the error body.
    for (path, method), op in ops.items():
        for status, response in op["responses"].items():
            if int(status) >= 400:
                assert refs(response) == {REF + "ErrorAnswer"}, (path, method, status)
        assert {"401", "403", "500"} <= set(op["responses"]), (path, method)
    assert refs(schemas["ErrorAnswer"]) == {REF + "ErrorBody"}


async def test_bearer_token_is_the_security_scheme(api: Api) -> None:
    doc = await fetch_document(api)
    assert doc["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "TCP listeners only; Unix sockets need no token",
    }
    assert {"bearer": []} in doc["security"] and {} in doc["security"]


async def test_the_document_has_an_etag_and_is_made_once(api: Api) -> None:
    _, first, resp = await api.get("/v1/openapi.json")
    etag = resp.headers["ETag"]
    status, body, _ = await api.get("/v1/openapi.json", headers={"If-None-Match": etag})
    assert (status, body) == (304, b"")
    assert api.app is not None
    made = context_of(api.app).openapi
    _, again, resp = await api.get("/v1/openapi.json")
    assert again == first and resp.headers["ETag"] == etag
    assert context_of(api.app).openapi is made


def concrete(path: str) -> str:
    return path.replace("{pane}", "3").replace("{direction}", "left")


async def test_documented_bounds_and_choices_are_enforced(api: Api, hub: Hub) -> None:
    """A value just outside what the document allows is a 400 whose code names the field."""
    hub.update(spec_state(A))
    doc = await fetch_document(api)
    tried = 0
    for (path, method), op in operations(doc).items():
        for param in op["parameters"]:
            schema = param["schema"]
            if param["in"] != "query":
                continue
            if "maximum" in schema:
                value = str(schema["maximum"] + 1)
            elif "enum" in schema:
                value = "no-such-choice"
            else:
                continue
            url = f"{concrete(path)}?{param['name']}={value}"
            call = api.get if method == "GET" else api.post
            status, body, _ = await call(url)
            assert status == 400, url
            assert body["error"]["code"] == f"bad_{param['name']}", url
            tried += 1
    assert tried >= 20


@pytest.mark.parametrize(
    ("path", "names"),
    [
        (
            "/v1/panes",
            {
                "accept",
                "format",
                "limit",
                "offset",
                "detail",
                "activity",
                "fresh",
                "server",
                "window",
                "session",
            },
        ),
        (
            "/v1/events",
            {
                "accept",
                "format",
                "types",
                "min_interval_ms",
                "turn",
                "neighbors",
                "server",
                "pane",
                "window",
                "session",
                "since",
            },
        ),
        ("/v1/panes/{pane}/neighbors", {"pane", "accept", "format", "fresh", "server"}),
        ("/v1/panes/{pane}/wait", {"pane", "accept", "until", "timeout_s", "server"}),
    ],
)
async def test_parameters_are_the_query_struct(api: Api, path: str, names: set[str]) -> None:
    doc = await fetch_document(api)
    params = doc["paths"][path]["get"]["parameters"]
    assert {p["name"] for p in params if p["in"] != "header"} == names
    by_name = {p["name"]: p for p in params}
    if "types" in by_name:
        assert (by_name["types"]["style"], by_name["types"]["explode"]) == ("form", False)
    if "pane" in by_name and "{pane}" in path:
        assert by_name["pane"]["in"] == "path" and by_name["pane"]["required"]
