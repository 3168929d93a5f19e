"""Every route of SPEC §4 over a real Unix socket, with a hub fed by hand (no tmux)."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import msgspec
import pytest
from aiohttp import web
from yarl import URL

from tests.api.apitest import (
    L1,
    L3,
    LAYOUT_2,
    SPEC_LAYOUT,
    A,
    Api,
    B,
    FakeSyncer,
    Win,
    make_state,
    serve_api,
    spec_state,
)
from tmuxlocd.core.model import ServerState
from tmuxlocd.daemon.api import create_app
from tmuxlocd.daemon.hub import Hub

SPEC_TEXT = (
    "tmux location:\n"
    'session work, window 1 "editor", pane 0 %3\n'
    "window active=1, pane active=1, layout b25d,158x40,0,0{79x40,0,0,3,78x40,80,0,4}\n"
)


def rich_state(path: str = A, *, name: str = "editor") -> ServerState:
    """$1 work: @2 (index 1, panes %3 | %4/%5) and @5 (index 2, %7); @2 also in $2 at 5."""
    return make_state(
        path,
        sessions={"$1": "work", "$2": "other"},
        links=[("$1", "@2", 1, True), ("$1", "@5", 2, False), ("$2", "@2", 5, True)],
        windows=[Win("@2", L3, name=name), Win("@5", L1, name="logs")],
    )


def error_of(body: Any) -> tuple[str, str]:
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return body["error"]["code"], body["error"]["message"]


# ------------------------------------------------------------------------------ shapes


async def test_pane_location_is_the_spec_example(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    status, body, _ = await api.get("/v1/panes/3")
    assert status == 200
    assert body == {
        "server": {"socket_path": A, "pid": 4242},
        "session": {"id": "$1", "name": "work"},
        "window": {
            "id": "@2",
            "index": 1,
            "name": "editor",
            "active": True,
            "zoomed": False,
            "layout": LAYOUT_2,
        },
        "pane": {
            "id": "%3",
            "index": 0,
            "active": True,
            "tty": "/dev/pts/5",
            "pid": 1234,
            "left": 0,
            "top": 0,
            "width": 79,
            "height": 40,
        },
        "neighbors": {"above": [], "below": [], "left": [], "right": ["%4"]},
        "links": [],
    }


@pytest.mark.parametrize("ident", ["3", "%253", "003"])
async def test_pane_id_spellings(api: Api, hub: Hub, ident: str) -> None:
    hub.update(spec_state(A))
    status, body, _ = await api.get(f"/v1/panes/{ident}")
    assert status == 200 and body["pane"]["id"] == "%3"


@pytest.mark.parametrize("ident", ["x", "%25x", "-1", "3.5", "%40", "@2", "%25", "1234567890"])
async def test_bad_pane_ids(api: Api, hub: Hub, ident: str) -> None:
    hub.update(spec_state(A))
    status, body, _ = await api.get(f"/v1/panes/{ident}")
    code, message = error_of(body)
    assert (status, code) == (400, "bad_pane_id")
    assert "bad pane id" in message


async def test_unknown_pane_is_404(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    status, body, _ = await api.get("/v1/panes/99")
    assert status == 404 and error_of(body) == ("not_found", "no pane %99")


async def test_self_outside_tmux(api: Api, hub: Hub) -> None:
    # The test process has no pane (its tty, if any, is none of these fake ones).
    hub.update(spec_state(A))
    status, body, _ = await api.get("/v1/self")
    assert status == 200
    assert body["inside_tmux"] is False and body["location"] is None
    assert body["verified_by"] is None
    assert body["reason"] in ("no_controlling_tty", "tty_not_a_pane")
    assert set(body["caller"]) == {"pid", "tty", "env_pane", "ancestor_pane", "client"}
    status, body, _ = await api.get("/v1/panes/self")
    assert status == 404 and error_of(body)[0] == "not_in_a_pane"
    for url in (
        "/v1/panes?window=self",
        "/v1/panes?session=self",
        "/v1/panes/self/neighbors",
        "/v1/events?pane=self",
    ):
        status, body, _ = await api.get(url)
        assert status == 404 and error_of(body)[0] == "not_in_a_pane", url


async def test_self_text_outside_tmux_is_204(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    status, body, _ = await api.get("/v1/self?format=text")
    assert status == 204 and body == b""
    status, body, _ = await api.get("/v1/self", headers={"Accept": "text/plain"})
    assert status == 204 and body == b""


async def test_panes_list_and_pagination(api: Api, hub: Hub) -> None:
    hub.update(rich_state())
    status, body, _ = await api.get("/v1/panes")
    assert status == 200 and set(body) == {"detail", "panes", "total", "truncated"}
    assert body["detail"] == "full"
    assert [p["pane"]["id"] for p in body["panes"]] == ["%3", "%4", "%5", "%7"]
    assert body["total"] == 4 and body["truncated"] is False
    status, body, _ = await api.get("/v1/panes?limit=2&offset=1")
    assert [p["pane"]["id"] for p in body["panes"]] == ["%4", "%5"]
    assert body["total"] == 4 and body["truncated"] is True
    status, body, _ = await api.get("/v1/panes?limit=2&offset=2")
    assert [p["pane"]["id"] for p in body["panes"]] == ["%5", "%7"]
    assert body["truncated"] is False
    status, body, _ = await api.get("/v1/panes?offset=10")
    assert body == {"detail": "full", "panes": [], "total": 4, "truncated": False}
    status, body, _ = await api.get("/v1/panes?limit=0")
    assert body == {"detail": "full", "panes": [], "total": 4, "truncated": True}
    status, body, _ = await api.get("/v1/panes?limit=1000")
    assert status == 200


async def test_panes_default_limit_is_100(api: Api, hub: Hub) -> None:
    wins = [Win(f"@{n}", _one_pane_layout(n)) for n in range(1, 131)]
    hub.update(
        make_state(
            A,
            sessions={"$1": "s"},
            links=[("$1", f"@{n}", n, n == 1) for n in range(1, 131)],
            windows=wins,
        )
    )
    _, body, _ = await api.get("/v1/panes")
    assert len(body["panes"]) == 100 and body["total"] == 130 and body["truncated"] is True


def _one_pane_layout(n: int) -> str:
    from tmuxlocd.core.layout import layout_checksum

    body = f"80x24,0,0,{n}"
    return f"{layout_checksum(body):04x},{body}"


async def test_panes_summary_detail(api: Api, hub: Hub) -> None:
    hub.update(rich_state())
    status, body, _ = await api.get("/v1/panes?detail=summary&window=@2")
    assert status == 200
    first = body["panes"][0]
    assert first == {
        "id": "%3",
        "index": 0,
        "active": True,
        "left": 0,
        "top": 0,
        "width": 79,
        "height": 40,
        "window_id": "@2",
        "session_id": "$1",
        "neighbors": {"above": [], "below": [], "left": [], "right": ["%4", "%5"]},
    }
    assert [p["id"] for p in body["panes"]] == ["%3", "%4", "%5"]


@pytest.mark.parametrize(
    ("query", "ids"),
    [
        ("window=2", ["%3", "%4", "%5"]),
        ("window=%402", ["%3", "%4", "%5"]),
        ("window=@5", ["%7"]),
        ("session=1", ["%3", "%4", "%5", "%7"]),
        ("session=%242", ["%3", "%4", "%5"]),  # @2 is linked into $2 too
        ("session=$2&window=@2", ["%3", "%4", "%5"]),
        ("server=tla-alpha", ["%3", "%4", "%5", "%7"]),
        (f"server={A}&window=5", ["%7"]),
    ],
)
async def test_panes_filters(api: Api, hub: Hub, query: str, ids: list[str]) -> None:
    hub.update(rich_state())
    status, body, _ = await api.get(f"/v1/panes?{query}")
    assert status == 200, body
    assert [p["pane"]["id"] for p in body["panes"]] == ids


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ("limit=1001", 400, "bad_limit"),
        ("limit=-1", 400, "bad_limit"),
        ("limit=ten", 400, "bad_limit"),
        ("limit=%C2%B2", 400, "bad_limit"),
        ("offset=-3", 400, "bad_offset"),
        ("detail=everything", 400, "bad_detail"),
        ("window=x2", 400, "bad_window_id"),
        ("window=%252", 400, "bad_window_id"),
        ("session=@1", 400, "bad_session_id"),
        ("window=@9", 404, "not_found"),
        ("session=$9", 404, "not_found"),
        ("server=tla-nowhere", 404, "not_found"),
        ("server=", 400, "bad_server"),
        ("format=text", 400, "bad_format"),
        ("fresh=maybe", 400, "bad_fresh"),
        ("accept=parent", 400, "bad_accept"),
    ],
)
async def test_panes_bad_queries(api: Api, hub: Hub, query: str, status: int, code: str) -> None:
    hub.update(rich_state())
    got, body, _ = await api.get(f"/v1/panes?{query}")
    assert (got, error_of(body)[0]) == (status, code)
    param = query.split("=")[0]
    if status == 400 and param not in ("window", "session"):
        assert param in error_of(body)[1]


async def test_ids_on_several_servers_are_ambiguous(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    hub.update(spec_state(B))
    for url in (
        "/v1/panes/3",
        "/v1/panes?window=@2",
        "/v1/panes?session=1",
        "/v1/panes/3/neighbors",
        "/v1/events?pane=3",
    ):
        status, body, _ = await api.get(url)
        code, message = error_of(body)
        assert (status, code) == (409, "ambiguous"), url
        assert A in message and B in message
    status, body, _ = await api.get("/v1/panes/3?server=tla-beta")
    assert status == 200 and body["server"]["socket_path"] == B
    status, body, _ = await api.get(f"/v1/panes/3?server={A}")
    assert status == 200 and body["server"]["socket_path"] == A
    status, body, _ = await api.get("/v1/panes?window=2&server=tla-alpha")
    assert status == 200 and body["total"] == 2


async def test_neighbors(api: Api, hub: Hub) -> None:
    hub.update(rich_state())
    status, body, _ = await api.get("/v1/panes/3/neighbors")
    assert status == 200
    assert body == {
        "pane": "%3",
        "above": [],
        "below": [],
        "left": [],
        "right": [{"id": "%4", "index": 1, "shared": 20}, {"id": "%5", "index": 2, "shared": 19}],
    }
    status, body, _ = await api.get("/v1/panes/4/neighbors/below")
    assert body == {
        "pane": "%4",
        "direction": "below",
        "panes": [{"id": "%5", "index": 2, "shared": 78}],
    }
    status, body, _ = await api.get("/v1/panes/%257/neighbors/left")
    assert body == {"pane": "%7", "direction": "left", "panes": []}
    status, body, _ = await api.get("/v1/panes/3/neighbors/sideways")
    assert (status, error_of(body)[0]) == (400, "bad_direction")
    assert "sideways" in error_of(body)[1]


async def test_tree(api: Api, hub: Hub) -> None:
    hub.update(rich_state())
    hub.server(B)  # watched, not running
    status, body, _ = await api.get("/v1/tree")
    assert status == 200
    servers = body["servers"]
    assert [s["socket_path"] for s in servers] == sorted([A, B])
    down = next(s for s in servers if s["socket_path"] == B)
    assert down == {"socket_path": B, "pid": None, "running": False, "sessions": []}
    up = next(s for s in servers if s["socket_path"] == A)
    assert (up["pid"], up["running"]) == (4242, True)
    work, other = up["sessions"]
    assert (work["id"], work["name"], other["id"], other["name"]) == ("$1", "work", "$2", "other")
    assert [(w["id"], w["index"], w["active"]) for w in work["windows"]] == [
        ("@2", 1, True),
        ("@5", 2, False),
    ]
    # A window linked into two sessions appears under each, at its index there.
    assert [(w["id"], w["index"]) for w in other["windows"]] == [("@2", 5)]
    window = work["windows"][0]
    assert set(window) == {"id", "index", "name", "active", "zoomed", "layout", "panes"}
    assert window["layout"] == L3
    assert [p["id"] for p in window["panes"]] == ["%3", "%4", "%5"]
    _, pane, _ = await api.get("/v1/panes/3")
    assert window["panes"][0] == pane["pane"]
    status, body, _ = await api.get("/v1/tree?server=tla-alpha")
    assert [s["socket_path"] for s in body["servers"]] == [A]


async def test_health(api: Api, hub: Hub) -> None:
    hub.update(rich_state())
    hub.set_observer(A, "attached")
    hub.server(B)
    status, body, _ = await api.get("/v1/health")
    assert status == 200
    assert set(body) == {
        "status",
        "version",
        "uptime_s",
        "servers",
        "subscribers",
        "waits",
        "watched_panes",
        "alerts",
    }
    assert body["status"] == "ok" and body["subscribers"] == 0
    assert body["alerts"] is None  # off by default
    assert isinstance(body["version"], str) and body["uptime_s"] >= 0
    alpha = next(s for s in body["servers"] if s["socket_path"] == A)
    assert set(alpha) == {
        "socket_path",
        "running",
        "sessions",
        "windows",
        "panes",
        "observer",
        "last_sync_age_s",
        "last_error",
        "safety_net_catches",
    }
    assert (alpha["running"], alpha["sessions"], alpha["windows"], alpha["panes"]) == (
        True,
        2,
        2,
        4,
    )
    assert alpha["observer"] == "attached" and alpha["last_sync_age_s"] >= 0
    assert alpha["last_error"] is None
    beta = next(s for s in body["servers"] if s["socket_path"] == B)
    assert (beta["running"], beta["observer"], beta["last_sync_age_s"]) == (False, "down", None)


async def test_health_names_a_server_that_cannot_be_read(api: Api, hub: Hub) -> None:
    hub.update(rich_state())
    hub.set_observer(A, "error", "list-panes: unknown command: hijacked")
    status, body, _ = await api.get("/v1/health")
    assert status == 200 and body["status"] == "degraded"
    alpha = next(s for s in body["servers"] if s["socket_path"] == A)
    assert alpha["observer"] == "error"
    assert alpha["last_error"] == "list-panes: unknown command: hijacked"
    hub.set_observer(A, "attached")  # it recovered: the error is gone with the episode
    status, body, _ = await api.get("/v1/health")
    assert body["status"] == "ok"
    assert [s["last_error"] for s in body["servers"]] == [None] * len(body["servers"])


# ------------------------------------------------------------------------------ text form


async def test_text_form_is_byte_for_byte_the_spec(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A, layout=SPEC_LAYOUT))
    status, body, resp = await api.get("/v1/panes/3?format=text")
    assert status == 200 and body == SPEC_TEXT.encode()
    assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    status, body, _ = await api.get("/v1/panes/3", headers={"Accept": "text/plain"})
    assert body == SPEC_TEXT.encode()
    _, body, _ = await api.get("/v1/panes/3?format=text&turn=12")
    assert body == SPEC_TEXT.replace("tmux location:", "tmux location (turn 12):").encode()
    # JSON still wins when asked for.
    status, body, _ = await api.get("/v1/panes/3?format=json", headers={"Accept": "text/plain"})
    assert body["pane"]["id"] == "%3"


async def test_text_form_neighbors_line(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    _, body, _ = await api.get("/v1/panes/3?format=text&neighbors=1")
    assert body.decode().splitlines()[-1] == (
        "neighbors: above none; below none; left none; right %4"
    )
    hub.update(rich_state())
    _, body, _ = await api.get("/v1/panes/3?format=text&neighbors=1")
    assert body.endswith(b"neighbors: above none; below none; left none; right %4,%5\n")


async def test_text_form_window_name_literal(api: Api, hub: Hub) -> None:
    hub.update(rich_state(name='caf\u00e9 "x" \\ \t'))
    _, body, _ = await api.get("/v1/panes/3?format=text")
    assert body.decode("utf-8").splitlines()[1] == (
        'session work, window 1 "caf\u00e9 \\"x\\" \\\\ \\t", pane 0 %3'
    )


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("turn=-1", "bad_turn"),
        ("turn=x", "bad_turn"),
        ("format=yaml", "bad_format"),
        ("neighbors=2", "bad_neighbors"),
    ],
)
async def test_text_form_bad_queries(api: Api, hub: Hub, query: str, code: str) -> None:
    hub.update(spec_state(A))
    prefix = "" if query.startswith("format=") else "format=text&"
    status, body, _ = await api.get(f"/v1/panes/3?{prefix}{query}")
    assert (status, error_of(body)[0]) == (400, code)


# ------------------------------------------------------------------------------ ETag


@pytest.mark.parametrize(
    "url",
    [
        "/v1/panes/3",
        "/v1/panes/3?format=text",
        "/v1/panes",
        "/v1/tree",
        "/v1/panes/3/neighbors",
        "/v1/self",
    ],
)
async def test_etag_and_304(api: Api, hub: Hub, url: str) -> None:
    hub.update(rich_state())
    status, body, resp = await api.get(url)
    etag = resp.headers["ETag"]
    assert status == 200 and etag.startswith('"') and etag.endswith('"')
    _, again, resp2 = await api.get(url)
    assert resp2.headers["ETag"] == etag and again == body
    for header in (etag, f"W/{etag}", f'"nope", {etag}', "*"):
        status, body304, resp = await api.get(url, headers={"If-None-Match": header})
        assert status == 304 and body304 == b"" and resp.headers["ETag"] == etag
    status, _, _ = await api.get(url, headers={"If-None-Match": '"other"'})
    assert status == 200
    if url not in ("/v1/self", "/v1/panes/3/neighbors"):  # a rename changes neither
        hub.update(rich_state(name="renamed"))
        status, _, resp = await api.get(url, headers={"If-None-Match": etag})
        assert status == 200 and resp.headers["ETag"] != etag


async def test_per_turn_etag_ignores_the_turn_label(api: Api, hub: Hub) -> None:
    """The per-turn pattern: GET ...?format=text&turn=N with the last ETag is 304 while the
    location is unchanged, whatever N is, and 200 (labelled with N) once it changed."""
    hub.update(rich_state())
    url = "/v1/panes/3?format=text&neighbors=1"
    status, body, resp = await api.get(url + "&turn=1")
    assert status == 200 and body.startswith(b"tmux location (turn 1):\n")
    etag = resp.headers["ETag"]
    status, body, _ = await api.get(url + "&turn=2", headers={"If-None-Match": etag})
    assert (status, body) == (304, b"")
    hub.update(rich_state(name="renamed"))
    status, body, resp = await api.get(url + "&turn=3", headers={"If-None-Match": etag})
    assert status == 200 and body.startswith(b"tmux location (turn 3):\n")
    assert resp.headers["ETag"] != etag


# ------------------------------------------------------------------------------ sync, notify


async def test_sync_is_a_barrier(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    calls: list[str | None] = []

    async def syncer(server: str | None) -> dict[str, str]:
        calls.append(server)
        hub.update(spec_state(A, tty3="/dev/pts/77"))
        return {}

    hub.attach(FakeSyncer(sync=syncer))
    status, body, _ = await api.post("/v1/sync")
    assert status == 200 and body == {"seq": hub.event_id()}
    assert hub.ring[-1].event.id == body["seq"]
    assert calls == [None]
    status, body, _ = await api.post("/v1/sync?server=tla-alpha")
    assert calls == [None, A]


async def test_fresh_reads_sync_first(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))

    async def syncer(server: str | None) -> dict[str, str]:
        hub.update(spec_state(A, tty3="/dev/pts/77"))
        return {}

    hub.attach(FakeSyncer(sync=syncer))
    _, body, _ = await api.get("/v1/panes/3")
    assert body["pane"]["tty"] == "/dev/pts/5"
    _, body, _ = await api.get("/v1/panes/3?fresh=1")
    assert body["pane"]["tty"] == "/dev/pts/77"


async def test_a_failed_barrier_is_a_503_naming_the_servers(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    seq = hub.event_id()

    async def syncer(server: str | None) -> dict[str, str]:
        return {A: "list-panes: no answer within 10 s"}

    hub.attach(FakeSyncer(sync=syncer))
    for method, url in (
        ("post", "/v1/sync"),
        ("get", "/v1/panes/3?fresh=1"),
        ("get", "/v1/tree?fresh=1"),
        ("get", "/v1/panes?fresh=1"),
    ):
        status, body, resp = await getattr(api, method)(url)
        assert status == 503, url
        assert body["error"]["code"] == "sync_failed"
        assert body["error"]["servers"] == [
            {"socket_path": A, "error": "list-panes: no answer within 10 s"}
        ]
        assert A in body["error"]["message"]
        assert resp.headers["Retry-After"] == "1"
    assert hub.event_id() == seq  # nothing was published in its name
    _, body, _ = await api.get("/v1/panes/3")  # a plain read still answers, from the model
    assert body["pane"]["id"] == "%3"


async def test_notify(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    seen: list[str | None] = []
    hub.attach(FakeSyncer(notify=seen.append))
    status, body, _ = await api.post("/v1/notify")
    assert (status, body) == (202, {"accepted": True})
    status, body, _ = await api.post("/v1/notify?hook=window-renamed&server=tla-alpha&target=%253")
    assert status == 202
    status, body, _ = await api.post(
        "/v1/notify", json={"hook": "pane-exited", "server": A, "target": "@2"}
    )
    assert status == 202
    assert seen == [None, A, A]
    # The body is the query's fields as strings, nothing else; the query is checked too.
    for bad_body in ({"extra": "1"}, {"hook": 1}, ["hook"]):
        status, body, _ = await api.post("/v1/notify", json=bad_body)
        assert (status, body["error"]["code"]) == (400, "bad_json"), bad_body
    status, body, _ = await api.post("/v1/notify?target=x", json={"target": "%3"})
    assert (status, body["error"]["code"]) == (400, "bad_target")
    assert seen == [None, A, A]


@pytest.mark.parametrize(
    ("kw", "code"),
    [
        ({"data": b"{not json"}, "bad_json"),
        ({"json": {"target": "window 2"}}, "bad_target"),
        ({"json": {"hook": 5}}, "bad_json"),
        ({"params": {"target": "%3;kill-server"}}, "bad_target"),
    ],
)
async def test_notify_bad_requests(api: Api, hub: Hub, kw: dict[str, Any], code: str) -> None:
    status, body, _ = await api.post("/v1/notify", **kw)
    assert (status, error_of(body)[0]) == (400, code)


async def test_bodies_over_64_kib_are_refused(api: Api, hub: Hub) -> None:
    big = b"x" * (64 * 1024 + 1)
    for url in ("/v1/notify", "/v1/sync"):
        status, body, _ = await api.post(url, data=big)
        assert (status, error_of(body)[0]) == (413, "payload_too_large"), url
    status, body, _ = await api.post("/v1/notify", data=b" " * (64 * 1024))
    assert status == 202


# ------------------------------------------------------------------------------ errors


async def test_unknown_path_and_wrong_method(api: Api) -> None:
    status, body, _ = await api.get("/v1/nothing")
    assert (status, error_of(body)[0]) == (404, "not_found")
    status, body, _ = await api.get("/")
    assert (status, error_of(body)[0]) == (404, "not_found")
    status, body, resp = await api.post("/v1/panes")
    assert (status, error_of(body)[0]) == (405, "method_not_allowed")
    assert "GET" in resp.headers["Allow"]
    status, body, resp = await api.get("/v1/sync")
    assert (status, error_of(body)[0]) == (405, "method_not_allowed")
    async with api.client.head("http://localhost/v1/events") as resp:
        assert resp.status == 405  # a stream has no head to give
    async with api.client.delete("http://localhost/v1/self") as resp:
        assert resp.status == 405
        assert error_of(await resp.json())[0] == "method_not_allowed"
    # Paths no route takes that hold a newline or other controls once decoded (the fuzzer's
    # finds): still the error JSON, never aiohttp's text.
    for path in ("/v1/panes/%0A%7B", "/v1/panes/%7D%0A%C2%A7", "/%0A", "/v1/%0D%0A%00x"):
        async with api.client.get(URL("http://localhost" + path, encoded=True)) as resp:
            assert resp.content_type == "application/json", path
            assert resp.status in (400, 404), path
            assert error_of(await resp.json())[0] in ("not_found", "bad_id", "bad_request")


async def test_handler_failure_is_a_json_500_and_a_log_line(
    api: Api, hub: Hub, caplog: pytest.LogCaptureFixture
) -> None:
    async def syncer(server: str | None) -> dict[str, str]:
        raise RuntimeError("boom")

    hub.attach(FakeSyncer(sync=syncer))
    with caplog.at_level(logging.ERROR, logger="tmuxlocd.daemon.api"):
        status, body, _ = await api.post("/v1/sync")
    assert (status, error_of(body)[0]) == (500, "internal_error")
    assert any(r.message == "request failed" and r.exc_info for r in caplog.records)
    status, _, _ = await api.get("/v1/health")
    assert status == 200


# ------------------------------------------------------------------------------ TCP


class TcpApi:
    def __init__(self, runner: web.AppRunner, port: int) -> None:
        self.runner = runner
        self.port = port
        self.base = f"http://127.0.0.1:{port}"


@pytest.fixture
async def tcp(hub: Hub) -> Any:
    app = create_app(hub, tcp_token="s3cret")
    runner = web.AppRunner(app, handle_signals=False, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield TcpApi(runner, port)
    await runner.cleanup()


async def _tcp_get(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any, Any]:
    async with aiohttp.ClientSession() as session, session.get(url, headers=headers) as resp:
        body = await resp.read()
        value = msgspec.json.decode(body) if body else None
        return resp.status, value, resp.headers


async def test_tcp_needs_the_token(tcp: TcpApi, hub: Hub) -> None:
    hub.update(spec_state(A))
    status, body, headers = await _tcp_get(tcp.base + "/v1/panes/3")
    assert (status, error_of(body)[0]) == (401, "unauthorized")
    assert headers["WWW-Authenticate"] == "Bearer"
    status, body, _ = await _tcp_get(tcp.base + "/v1/panes/3", {"Authorization": "Bearer wrong"})
    assert status == 401
    status, body, _ = await _tcp_get(tcp.base + "/v1/nothing")
    assert status == 401  # before routing: nothing is revealed without the token
    ok = {"Authorization": "Bearer s3cret"}
    status, body, headers = await _tcp_get(tcp.base + "/v1/panes/3", ok)
    assert status == 200 and body["pane"]["id"] == "%3"
    assert not any(h.lower().startswith("access-control-") for h in headers)


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("127.0.0.1", True),
        ("127.0.0.1:{port}", True),
        ("localhost:{port}", True),
        ("[::1]:{port}", True),
        ("[::1]", True),
        ("127.9.9.9", True),
        ("evil.example:{port}", False),
        ("10.0.0.1", False),
        ("", False),
        ("localhost.evil.example", False),
        ("[::2]:{port}", False),
    ],
)
async def test_tcp_host_must_be_loopback(tcp: TcpApi, hub: Hub, host: str, allowed: bool) -> None:
    headers = {
        "Authorization": "Bearer s3cret",
        "Host": host.format(port=tcp.port),
        "Origin": "http://evil.example",
    }
    status, body, resp_headers = await _tcp_get(tcp.base + "/v1/health", headers)
    if allowed:
        assert status == 200, body
    else:
        assert (status, error_of(body)[0]) == (403, "forbidden")
    assert not any(h.lower().startswith("access-control-") for h in resp_headers)


async def test_tcp_has_no_peer_credentials(tcp: TcpApi, hub: Hub) -> None:
    hub.update(spec_state(A))
    ok = {"Authorization": "Bearer s3cret"}
    for url in ("/v1/self", "/v1/panes/self", "/v1/panes?window=self", "/v1/events?pane=self"):
        status, body, _ = await _tcp_get(tcp.base + url, ok)
        assert (status, error_of(body)[0]) == (403, "no_peer_credentials"), url


async def test_tcp_without_a_token_configured(hub: Hub) -> None:
    async with serve_api(hub) as served:  # the Unix side works without a token
        app = create_app(hub)
        runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        try:
            port = runner.addresses[0][1]
            status, _, _ = await _tcp_get(
                f"http://127.0.0.1:{port}/v1/health", {"Authorization": "Bearer "}
            )
            assert status == 401
            status, _, _ = await served.get("/v1/health")
            assert status == 200
        finally:
            await runner.cleanup()
