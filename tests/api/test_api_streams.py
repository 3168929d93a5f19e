"""Change streams (SPEC §5) over a real Unix socket, with a hub fed by hand."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import pytest

from tests.api.apitest import (
    L1,
    L3,
    LAYOUT_2,
    SPEC_LAYOUT,
    A,
    Api,
    B,
    StreamReader,
    Win,
    make_state,
    serve_api,
    spec_state,
)
from tests.tmuxtest import wait_until
from tmuxlocd.core.model import ServerState
from tmuxlocd.daemon.api import context_of
from tmuxlocd.daemon.hub import Hub

L_MOVED = "c1b3,80x24,0,0[80x12,0,0,7,80x11,0,13,5]"
L9 = "b266,80x24,0,0,9"
L10 = "595f,80x24,0,0,10"


def state(
    name: str = "editor",
    *,
    logs: str = "logs",
    moved: bool = False,
    with_logs: bool = True,
    extra: list[Win] | None = None,
    path: str = A,
) -> ServerState:
    """$1: @2 (%3 | %4/%5) at 1, @5 (%7) at 2; @2 also linked in $2.  ``moved``: %5 in @5."""
    windows = [
        Win("@2", LAYOUT_2 if moved else L3, name=name),
    ]
    links = [("$1", "@2", 1, True), ("$2", "@2", 5, True)]
    if with_logs:
        windows.append(Win("@5", L_MOVED if moved else L1, name=logs))
        links.append(("$1", "@5", 2, False))
    for i, win in enumerate(extra or []):
        windows.append(win)
        links.append(("$1", win.id, 10 + i, False))
    return make_state(path, sessions={"$1": "work", "$2": "other"}, links=links, windows=windows)


@asynccontextmanager
async def stream(
    api: Api, query: str = "", headers: dict[str, str] | None = None
) -> AsyncIterator[StreamReader]:
    async with api.client.get(f"http://localhost/v1/events{query}", headers=headers) as resp:
        assert resp.status == 200, await resp.text()
        yield StreamReader(resp)


async def events_until(reader: StreamReader, marker: str, count: int = 50) -> list[dict[str, Any]]:
    """Events up to and including the first pane.changed naming window ``marker``."""
    out = []
    for _ in range(count):
        ev = await reader.event()
        out.append(ev)
        loc = ev.get("location")
        if loc is not None and loc["window"]["name"] == marker:
            return out
    raise AssertionError(f"no event for marker {marker!r} in {out}")


def brief(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for ev in events:
        if ev["type"] == "pane.removed":
            out.append((ev["type"], ev["pane"]))
        elif "location" in ev:
            out.append((ev["type"], ev["location"]["pane"]["id"]))
        else:
            out.append((ev["type"], ""))
    return out


# ------------------------------------------------------------------------------ basics


async def test_sse_wire_format(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api) as reader:
        assert reader.resp.headers["Content-Type"] == "text/event-stream"
        assert reader.resp.headers["Cache-Control"] == "no-cache"
        head = await reader.resp.content.readuntil(b"\ndata: ")
        assert head == f"id: {hub.event_id()}\nevent: snapshot\ndata: ".encode()
        data = await reader.resp.content.readuntil(b"\n\n")
        assert data.count(b"\n") == 2 and data.startswith(b'{"type":"snapshot","id":')


async def test_snapshot_then_changes(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api) as reader:
        snap = await reader.event()
        assert snap["type"] == "snapshot" and snap["id"] == hub.event_id()
        assert isinstance(snap["time"], float)
        assert sorted(p["pane"]["id"] for p in snap["panes"]) == ["%3", "%4", "%5", "%7"]
        hub.update(state())  # no change: no event, ever
        hub.update(state(name="renamed"))
        got = [await reader.event() for _ in range(3)]
        assert brief(got) == [
            ("pane.changed", "%3"),
            ("pane.changed", "%4"),
            ("pane.changed", "%5"),
        ]
        assert all(ev["changed"] == ["window.name"] for ev in got)
        seqs = [int(ev["id"].rsplit(":", 1)[1]) for ev in got]
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        assert got[-1]["id"] == hub.event_id()


@pytest.mark.parametrize(
    ("query", "headers"),
    [("?format=ndjson", None), ("", {"Accept": "application/x-ndjson"})],
    ids=["query", "accept"],
)
async def test_ndjson(api: Api, hub: Hub, query: str, headers: dict[str, str] | None) -> None:
    hub.update(state())
    async with stream(api, query, headers) as reader:
        assert reader.ndjson
        assert reader.resp.headers["Content-Type"] == "application/x-ndjson"
        snap = await reader.event()
        assert snap["type"] == "snapshot"
        hub.update(state(logs="tail"))
        ev = await reader.event()
        assert (ev["type"], ev["location"]["pane"]["id"]) == ("pane.changed", "%7")


async def test_server_down_and_up(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api, "?server=tla-alpha") as reader:
        await reader.event()
        hub.server_down(A)
        got = [await reader.event() for _ in range(5)]
        assert brief(got) == [
            ("pane.removed", "%3"),
            ("pane.removed", "%4"),
            ("pane.removed", "%5"),
            ("pane.removed", "%7"),
            ("server.down", ""),
        ]
        assert got[0]["server"] == A and got[0]["last"]["pane"]["id"] == "%3"
        assert got[-1]["server"] == {"socket_path": A, "pid": 4242}
        hub.update(state())
        ev = await reader.event()
        assert ev == {
            "type": "server.up",
            "id": ev["id"],
            "time": ev["time"],
            "server": {"socket_path": A, "pid": 4242},
        }
        assert (await reader.event())["type"] == "pane.added"


# ------------------------------------------------------------------------------ filters


async def test_pane_filter(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api, "?pane=%253") as reader:
        snap = await reader.event()
        assert [p["pane"]["id"] for p in snap["panes"]] == ["%3"]
        hub.update(state(logs="x"))  # not %3's window
        hub.server(B)
        hub.update(state(path=B, name="other server"))
        hub.update(state(name="marker", logs="x"))
        assert brief(await events_until(reader, "marker")) == [("pane.changed", "%3")]


async def test_pane_filter_follows_the_pane(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api, "?pane=5") as reader:
        await reader.event()
        hub.update(state(moved=True))  # %5 leaves @2 for @5 (break-pane / join-pane)
        ev = await reader.event()
        assert ev["location"]["window"]["id"] == "@5"
        assert "window.id" in ev["changed"]
        hub.update(state(moved=True, logs="marker"))
        assert brief(await events_until(reader, "marker")) == [("pane.changed", "%5")]


async def test_window_filter_tells_a_leaving_pane_once(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api, "?window=@2") as reader:
        snap = await reader.event()
        assert sorted(p["pane"]["id"] for p in snap["panes"]) == ["%3", "%4", "%5"]
        hub.update(state(moved=True))
        got = [await reader.event() for _ in range(3)]
        assert brief(got) == [
            ("pane.changed", "%3"),
            ("pane.changed", "%4"),
            ("pane.changed", "%5"),
        ]
        assert got[2]["location"]["window"]["id"] == "@5"
        hub.update(state(moved=True, logs="elsewhere"))  # %5 changes again, outside @2
        hub.update(state(moved=True, logs="elsewhere", name="marker"))
        assert brief(await events_until(reader, "marker")) == [("pane.changed", "%3")]


async def test_session_filter_includes_links_and_removals(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api, "?session=%242") as reader:  # $2 links only @2
        snap = await reader.event()
        assert sorted(p["pane"]["id"] for p in snap["panes"]) == ["%3", "%4", "%5"]
    async with stream(api, "?session=1") as reader:
        await reader.event()
        hub.update(state(with_logs=False))
        ev = await reader.event()
        assert (ev["type"], ev["pane"], ev["server"]) == ("pane.removed", "%7", A)
        assert ev["last"]["window"]["id"] == "@5"


async def test_types_filter(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api, "?types=pane.removed,server.down") as reader:
        assert (await reader.event())["type"] == "snapshot"
        hub.update(state(name="ignored"))
        hub.update(state(name="ignored", with_logs=False))
        ev = await reader.event()
        assert (ev["type"], ev["pane"]) == ("pane.removed", "%7")


@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ("?types=pane.moved", 400, "bad_types"),
        ("?types=pane.removed,%20server.down", 400, "bad_types"),  # the document's comma list
        ("?types=pane.added,pane.added", 400, "bad_types"),
        ("?types=pane.added,", 400, "bad_types"),
        ("?format=xml", 400, "bad_format"),
        ("?format=text", 404, "not_in_a_pane"),  # the text form of the caller's pane
        ("?min_interval_ms=-5", 400, "bad_min_interval_ms"),
        ("?min_interval_ms=soon", 400, "bad_min_interval_ms"),
        ("?pane=x", 400, "bad_pane_id"),
        ("?pane=99", 404, "not_found"),
        ("?window=@99", 404, "not_found"),
        ("?server=tla-nowhere", 404, "not_found"),
        ("?pane=3&format=text&turn=x", 400, "bad_turn"),
    ],
)
async def test_bad_stream_queries(api: Api, hub: Hub, query: str, status: int, code: str) -> None:
    hub.update(state())
    async with api.client.get(f"http://localhost/v1/events{query}") as resp:
        body = await resp.json()
        assert (resp.status, body["error"]["code"]) == (status, code)
        if "pane.moved" in query:
            assert "pane.moved" in body["error"]["message"]


# ------------------------------------------------------------------------------ resume


async def test_resume_exactly_with_last_event_id(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api) as reader:
        last = (await reader.event())["id"]
    hub.update(state(name="one"))
    hub.update(state(name="one", logs="two"))
    missed = [
        p.event.id
        for p in hub.ring
        if int(p.event.id.rsplit(":", 1)[1]) > int(last.rsplit(":", 1)[1])
    ]
    assert len(missed) == 4
    async with stream(api, headers={"Last-Event-ID": last}) as reader:
        got = [await reader.event() for _ in range(4)]
        assert [ev["id"] for ev in got] == missed  # no snapshot, nothing else
        hub.update(state(name="marker", logs="two"))
        assert len(await events_until(reader, "marker")) == 1
    async with stream(api, f"?since={missed[1]}&pane=7") as reader:
        ev = await reader.event()
        assert ev["id"] == missed[3] and ev["location"]["pane"]["id"] == "%7"


async def test_resume_from_the_last_id_sends_nothing(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api) as reader:
        last = (await reader.event())["id"]
    async with stream(api, headers={"Last-Event-ID": last}) as reader:
        hub.update(state(name="marker"))
        assert (await reader.event())["location"]["window"]["name"] == "marker"


@pytest.mark.parametrize("bad", ["00000000:1", "garbage", "{inst}:999", "{inst}:x", "{inst}:²"])
async def test_unknown_resume_id_gives_reset_then_snapshot(api: Api, hub: Hub, bad: str) -> None:
    hub.update(state())
    since = quote(bad.format(inst=hub.instance))
    async with stream(api, f"?since={since}") as reader:
        reset = await reader.event()
        assert reset["type"] == "reset" and reset["id"] == hub.event_id()
        snap = await reader.event()
        assert snap["type"] == "snapshot" and len(snap["panes"]) == 4


async def test_resume_id_that_left_the_buffer_gives_reset() -> None:
    hub = Hub(ring_size=3)
    hub.update(state())
    old = hub.event_id()
    for n in range(3):
        hub.update(state(name=f"n{n}"))
    async with serve_api(hub) as api, stream(api, f"?since={old}") as reader:
        assert (await reader.event())["type"] == "reset"
        snap = await reader.event()
        assert snap["type"] == "snapshot"
        assert {p["window"]["name"] for p in snap["panes"] if p["window"]["id"] == "@2"} == {"n2"}


# ------------------------------------------------------------------------------ pressure


async def test_lagged_subscriber_gets_lagged_then_a_fresh_snapshot() -> None:
    """A reader more than its queue behind is told `lagged`, then gets a fresh snapshot.

    A reader that keeps up is written as events are published and never lags, so the burst
    is made in one tick, nothing read meanwhile: it fills the connection (past its high-water
    mark the stream is back on its queue), then the queue of 2."""
    hub = Hub()
    many = [Win(f"@{n}", _layout(n), name="w") for n in range(100, 160)]
    hub.update(state(extra=many))
    async with serve_api(hub, queue_size=2) as api, stream(api) as reader:
        await reader.event()
        bursts = 0
        while not any(s.lagged for s in hub.subscribers):
            assert bursts < 500, "the stream never fell behind"
            hub.update(state(extra=[Win(w.id, w.layout, name=f"burst{bursts}") for w in many]))
            bursts += 1
        last = f"burst{bursts - 1}"
        told = []
        while (ev := await reader.event())["type"] != "lagged":
            told.append(ev)
        # What the connection held came first, in order, and none of it was the last burst.
        ids = [int(ev["id"].rpartition(":")[2]) for ev in told]
        assert ids == sorted(ids) and {ev["type"] for ev in told} <= {"pane.changed"}
        assert all(ev["location"]["window"]["name"] != last for ev in told)
        assert ev["id"] == hub.event_id()
        snap = await reader.event()
        assert snap["type"] == "snapshot" and snap["id"] == hub.event_id()
        assert {p["window"]["name"] for p in snap["panes"] if p["window"]["id"] == "@100"} == {last}
        renamed = [Win(w.id, w.layout, name=last) for w in many]
        hub.update(state(logs="marker", extra=renamed))
        assert brief(await events_until(reader, "marker")) == [("pane.changed", "%7")]


async def test_slow_reader_never_blocks_the_others() -> None:
    hub = Hub()
    many = [Win(f"@{n}", _layout(n), name="w") for n in range(100, 160)]
    hub.update(state(extra=many))
    async with serve_api(hub, queue_size=64) as api:
        # A client that asks for a stream and then never reads a byte.
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(api.path)
        slow.sendall(b"GET /v1/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        try:
            await wait_until(lambda: len(hub.subscribers) == 1, what="the slow subscriber")
            async with stream(api, "?format=ndjson") as reader:
                await reader.event()
                for n in range(40):
                    renamed = [Win(w.id, w.layout, name=f"w{n}") for w in many]
                    hub.update(state(extra=renamed))
                    for _ in range(60):
                        ev = await reader.event()
                        assert ev["location"]["window"]["name"] == f"w{n}"
                    # The hub never holds more than a bounded queue for anyone.
                    assert all(len(s.queue) <= s.maxsize for s in hub.subscribers)
                assert any(s.lagged for s in hub.subscribers)
        finally:
            slow.close()


async def test_a_stalled_reader_is_dropped() -> None:
    hub = Hub()
    many = [Win(f"@{n}", _layout(n), name="w") for n in range(100, 160)]
    hub.update(state(extra=many))
    async with serve_api(hub, write_timeout=0.3) as api:
        stalled = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(api.path)
        stalled.sendall(b"GET /v1/events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        try:
            await wait_until(lambda: len(hub.subscribers) == 1, what="the stalled subscriber")
            rounds = iter(range(10_000))

            def keep_publishing() -> bool:
                n = next(rounds)
                hub.update(state(extra=[Win(w.id, w.layout, name=f"w{n}") for w in many]))
                return not hub.subscribers

            await wait_until(
                keep_publishing, timeout=10, interval=0.02, what="the stalled stream to be dropped"
            )
            assert api.app is not None and not context_of(api.app).streams
        finally:
            stalled.close()


def _layout(n: int) -> str:
    from tmuxlocd.core.layout import layout_checksum

    body = f"80x24,0,0,{n}"
    return f"{layout_checksum(body):04x},{body}"


async def test_min_interval_delivers_the_trailing_state() -> None:
    hub = Hub()
    hub.update(state())
    async with serve_api(hub) as api, stream(api, "?min_interval_ms=400&window=@2") as reader:
        await reader.event()
        hub.update(state(name="a"))  # idle: goes out at once (leading edge)
        first = [await reader.event() for _ in range(3)]
        assert {ev["location"]["window"]["name"] for ev in first} == {"a"}
        t1 = time.monotonic()
        for name in ("b", "c", "d"):
            hub.update(state(name=name))
        got = [await reader.event() for _ in range(3)]
        waited = time.monotonic() - t1
        # One event per pane, carrying the latest state, at the end of the interval.
        assert brief(got) == [
            ("pane.changed", "%3"),
            ("pane.changed", "%4"),
            ("pane.changed", "%5"),
        ]
        assert {ev["location"]["window"]["name"] for ev in got} == {"d"}
        assert waited >= 0.3
        assert got[-1]["id"] == hub.event_id()
        hub.update(state(name="marker"))
        assert len(await events_until(reader, "marker")) == 1


async def test_min_interval_merges_added_and_changed() -> None:
    hub = Hub()
    hub.update(state())
    async with serve_api(hub) as api, stream(api, "?min_interval_ms=300") as reader:
        await reader.event()
        hub.update(state(name="lead"))
        for _ in range(3):
            await reader.event()
        # Within one interval: %9 appears then changes; %10 appears then goes.
        hub.update(state(name="lead", extra=[Win("@9", L9, name="new"), Win("@10", L10)]))
        hub.update(state(name="lead", extra=[Win("@9", L9, name="newer")]))
        ev = await reader.event()
        assert ev["type"] == "pane.added"
        assert ev["location"]["pane"]["id"] == "%9"
        assert ev["location"]["window"]["name"] == "newer"
        hub.update(state(name="marker", extra=[Win("@9", L9, name="newer")]))
        assert brief(await events_until(reader, "marker")) == [("pane.changed", "%3")]


async def test_heartbeats() -> None:
    hub = Hub()
    hub.update(state())
    async with serve_api(hub, heartbeat=0.1) as api:
        async with stream(api) as reader:
            await reader.event()
            frame = await reader.raw(timeout=2)
            assert frame == {"data": [], "comment": "heartbeat"}
        async with stream(api, "?format=ndjson") as reader:
            await reader.event()
            assert await reader.event(timeout=2, skip_heartbeats=False) == {"type": "heartbeat"}


async def test_stream_limit() -> None:
    hub = Hub()
    hub.update(state())
    async with serve_api(hub, max_streams=2) as api, stream(api) as one:
        await one.event()
        async with stream(api) as two:
            await two.event()
            async with api.client.get("http://localhost/v1/events") as resp:
                assert resp.status == 503
                assert resp.headers["Retry-After"] == "1"
                assert (await resp.json())["error"]["code"] == "too_many_streams"
            status, _, _ = await api.get("/v1/health")  # other requests still work
            assert status == 200
        assert api.app is not None
        streams = context_of(api.app).streams

        def one_left() -> bool:
            return len(streams) < 2

        await wait_until(one_left, what="the closed stream to end")
        async with stream(api) as three:
            assert (await three.event())["type"] == "snapshot"


async def test_shutdown_ends_every_stream() -> None:
    hub = Hub()
    hub.update(state())
    async with serve_api(hub) as api:
        async with (
            stream(api) as a,
            stream(api, "?format=ndjson") as b,
            stream(api, "?pane=3&format=text") as c,
        ):
            for reader in (a, b):
                await reader.event()
            await c.raw()
            assert api.runner is not None
            started = time.monotonic()
            # Each stream ends by the app's on_shutdown: one left to the runner's shutdown
            # timeout would be cancelled there and cut off, not end in a clean EOF.
            await api.runner.cleanup()
            api.runner = None
            for reader in (a, b, c):
                assert await reader.eof(timeout=30)
            print(f"\nshutdown with 3 streams: {time.monotonic() - started:.3f} s")
        assert not hub.subscribers


# ------------------------------------------------------------------------------ text streams


async def test_text_stream_sends_each_change_of_the_text(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A, layout=SPEC_LAYOUT))
    async with stream(api, "?pane=3&format=text&turn=2") as reader:
        frame = await reader.raw()
        assert frame["event"] == "snapshot" and frame["id"] == hub.event_id()
        assert frame["data"] == [
            "tmux location (turn 2):",
            'session work, window 1 "editor", pane 0 %3',
            "window active=1, pane active=1, layout b25d,158x40,0,0{79x40,0,0,3,78x40,80,0,4}",
        ]
        # %3's pid changes: its Location changes, its text does not -> nothing sent.
        hub.update(
            make_state(
                A,
                sessions={"$1": "work"},
                links=[("$1", "@2", 1, True)],
                windows=[
                    Win(
                        "@2",
                        SPEC_LAYOUT,
                        ttys={"%3": "/dev/pts/5"},
                        pids={"%3": 99},
                        geometry_of=LAYOUT_2,
                    )
                ],
            )
        )
        hub.update(
            make_state(
                A,
                sessions={"$1": "work"},
                links=[("$1", "@2", 1, True)],
                windows=[
                    Win(
                        "@2",
                        SPEC_LAYOUT,
                        name="vim",
                        ttys={"%3": "/dev/pts/5"},
                        pids={"%3": 99},
                        geometry_of=LAYOUT_2,
                    )
                ],
            )
        )
        frame = await reader.raw()
        assert frame["event"] == "pane.changed"
        assert frame["id"] == hub.ring[-2].event.id  # %3's event; %4's (the last) is not asked for
        assert frame["data"][1] == 'session work, window 1 "vim", pane 0 %3'
        hub.update(make_state(A, sessions={"$1": "work"}, links=[], windows=[]))
        frame = await reader.raw()
        assert (frame["event"], frame["data"]) == ("pane.removed", ["%3"])


async def test_text_stream_with_neighbors(api: Api, hub: Hub) -> None:
    hub.update(state())
    async with stream(api, "?pane=3&format=text&neighbors=1") as reader:
        frame = await reader.raw()
        assert frame["data"][-1] == "neighbors: above none; below none; left none; right %4,%5"
        hub.update(state(moved=True))
        frame = await reader.raw()
        assert frame["data"][-1] == "neighbors: above none; below none; left none; right %4"


async def test_text_stream_always_starts_from_the_text(api: Api, hub: Hub) -> None:
    hub.update(state())
    for since in (hub.event_id(), "00000000:1"):
        async with stream(api, "?pane=3&format=text", {"Last-Event-ID": since}) as reader:
            frame = await reader.raw()
            assert frame["event"] == "snapshot" and frame["data"][0] == "tmux location:"


async def test_text_stream_lagged() -> None:
    hub = Hub()
    hub.update(state())
    async with serve_api(hub, queue_size=1) as api, stream(api, "?pane=3&format=text") as reader:
        await reader.raw()
        for n in range(3):
            hub.update(state(name=f"burst{n}"))
        frame = await reader.raw()
        assert (frame["event"], frame["data"]) == ("lagged", [])
        frame = await reader.raw()
        assert frame["event"] == "snapshot"
        assert frame["data"][1] == 'session work, window 1 "burst2", pane 0 %3'
