"""Pane activity on real tmux: busy/idle/exit of a pane's command, the wait that returns the
moment it is true, pane.activity events, and location streams that stay silent meanwhile.

Latencies are measured against the kernel's own word: the test holds a pidfd on the
command it started, so "the end" is when that process exited, not when the test noticed.
They are printed (run with -s), never asserted.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from bench.procstat import exited, tpgid
from tests.daemontest import Daemon, Rig, private_rig, running_daemon, start_in_pane
from tests.tmuxtest import TMUX, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with private_rig(start=True) as rig:
        rig.tmux.run("new-session", "-d", "-s", "other", "-x", "80", "-y", "24")
        yield rig


@pytest.fixture(scope="module")
def daemon(rig: Rig) -> Iterator[Daemon]:
    with running_daemon(rig) as d:
        yield d


@pytest.fixture
async def http(daemon: Daemon) -> AsyncIterator[aiohttp.ClientSession]:
    conn = aiohttp.UnixConnector(path=daemon.socket, limit=0)
    async with aiohttp.ClientSession(connector=conn, base_url="http://localhost") as session:
        yield session


async def wait(
    http: aiohttp.ClientSession, pane: str, until: str, timeout_s: float = 20
) -> tuple[int, dict[str, Any]]:
    async with http.get(
        f"/v1/panes/{pane.lstrip('%')}/wait", params={"until": until, "timeout_s": str(timeout_s)}
    ) as resp:
        return resp.status, await resp.json()


def new_pane(rig: Rig, session: str) -> str:
    return rig.tmux.run("new-window", "-d", "-t", f"{session}:", "-P", "-F", "#{pane_id}").strip()


def pane_pid(rig: Rig, pane: str) -> int:
    return int(rig.tmux.display(pane, "#{pane_pid}"))


async def waits_pending(http: aiohttp.ClientSession, n: int) -> None:
    """Until the daemon holds ``n`` waits (GET /v1/health counts them)."""

    async def enough() -> bool:
        async with http.get("/v1/health") as resp:
            return int((await resp.json())["waits"]) >= n

    await wait_until(enough, 10, f"{n} pending waits")


async def sync(http: aiohttp.ClientSession) -> None:
    async with http.post("/v1/sync") as resp:
        assert resp.status == 200


def report(what: str, samples: list[float]) -> None:
    ms = sorted(s * 1000 for s in samples)
    print(
        f"\n{what}: n={len(ms)} p50={statistics.median(ms):.2f} ms max={ms[-1]:.2f} ms "
        f"all={[round(x, 2) for x in ms]}"
    )


async def activity_events(
    http: aiohttp.ClientSession, pane: str, out: list[tuple[float, dict[str, Any]]]
) -> None:
    params = {"types": "pane.activity", "pane": pane.lstrip("%"), "format": "ndjson"}
    async with http.get("/v1/events", params=params, timeout=aiohttp.ClientTimeout()) as resp:
        async for line in resp.content:
            event = json.loads(line)
            if event["type"] == "pane.activity":
                out.append((time.monotonic(), event))


@pytest.mark.parametrize("session", ["main", "other"])
async def test_sleep_busy_then_idle(
    rig: Rig, daemon: Daemon, http: aiohttp.ClientSession, session: str
) -> None:
    """``sleep 2``: busy within 1 s of its start, idle (wait and event) ms after its end,
    in the attached session and in another one."""
    pane = new_pane(rig, session)
    await sync(http)
    shell = pane_pid(rig, pane)
    events: list[tuple[float, dict[str, Any]]] = []
    stream = asyncio.create_task(activity_events(http, pane, events))
    busy_lat: list[float] = []
    wait_lat: list[float] = []
    event_lat: list[float] = []
    try:
        for _ in range(3):
            status, idle = await wait(http, pane, "idle")
            assert status == 200 and idle["outcome"] == "idle", idle
            busy = asyncio.create_task(wait(http, pane, "busy"))
            sent = time.monotonic()
            rig.tmux.run("send-keys", "-t", pane, "sleep 2", "Enter")
            status, answer = await busy
            busy_lat.append(time.monotonic() - sent)
            assert status == 200 and answer["outcome"] == "busy", answer
            activity = answer["activity"]
            assert isinstance(activity, dict) and activity["command"] == "sleep"
            job = tpgid(shell)
            assert job != shell
            ended = asyncio.create_task(exited(job))
            status, answer = await wait(http, pane, "idle")
            answered = time.monotonic()
            assert status == 200 and answer["outcome"] == "idle" and answer["met"], answer
            end = await ended
            wait_lat.append(answered - end)
            await wait_until(
                lambda end=end: any(  # type: ignore[misc]
                    e["after"].get("busy") is False and t >= end for t, e in events
                ),
                5,
                "the idle event",
            )
            event_lat.append(
                min(t for t, e in events if e["after"].get("busy") is False and t >= end) - end
            )
    finally:
        stream.cancel()
        await asyncio.gather(stream, return_exceptions=True)
        rig.tmux.run("kill-pane", "-t", pane)
    report(f"[{session}] send-keys -> busy answer", busy_lat)
    report(f"[{session}] sleep's end -> wait idle answer", wait_lat)
    report(f"[{session}] sleep's end -> pane.activity idle event", event_lat)
    kinds = [(e["before"].get("busy"), e["after"].get("busy")) for _, e in events]
    assert (False, True) in kinds and (True, False) in kinds


@pytest.mark.parametrize("session", ["main", "other"])
async def test_remain_on_exit_status(
    rig: Rig, daemon: Daemon, http: aiohttp.ClientSession, session: str
) -> None:
    """A remain-on-exit pane's ``exit 3`` gives exit_status 3 (below 3.6 too, where tmux
    may have lost the SIGCHLD)."""
    pane = rig.tmux.run(
        "new-window", "-d", "-t", f"{session}:", "-P", "-F", "#{pane_id}", "read x; exit 3"
    ).strip()
    rig.tmux.run("set-option", "-w", "-t", pane, "remain-on-exit", "on")
    await sync(http)
    pending = asyncio.create_task(wait(http, pane, "exit"))
    await waits_pending(http, 1)
    rig.tmux.run("send-keys", "-t", pane, "Enter")
    status, answer = await pending
    try:
        assert status == 200 and answer["outcome"] == "exit" and answer["met"], answer
        activity = answer["activity"]
        assert isinstance(activity, dict)
        assert activity["dead"] is True and activity["exit_status"] == 3, answer
        location = answer["location"]
        assert isinstance(location, dict) and location["pane"]["exit_status"] == 3
        # A wait on a dead pane is over at once, whatever it waits for.
        status, again = await wait(http, pane, "idle")
        assert again["outcome"] == "exit" and again["activity"]["exit_status"] == 3
    finally:
        rig.tmux.run("kill-pane", "-t", pane)


async def test_gone_answers(rig: Rig, daemon: Daemon, http: aiohttp.ClientSession) -> None:
    """The waited pane killed, its window killed: each wait ends ``gone``."""
    pane = new_pane(rig, "other")
    start_in_pane(rig, pane, "cat")
    await sync(http)
    status, answer = await wait(http, pane, "busy")
    assert answer["outcome"] == "busy"
    pending = asyncio.create_task(wait(http, pane, "idle"))
    await waits_pending(http, 1)
    rig.tmux.run("kill-pane", "-t", pane)
    status, answer = await pending
    assert status == 200 and answer["outcome"] == "gone" and not answer["met"], answer
    assert answer["location"] is None and answer["reason"]

    window = rig.tmux.run(
        "new-window", "-d", "-t", "other:", "-P", "-F", "#{window_id} #{pane_id}"
    ).split()
    wid, pane = window
    start_in_pane(rig, pane, "cat")
    await sync(http)
    assert (await wait(http, pane, "busy"))[1]["outcome"] == "busy"
    pending = asyncio.create_task(wait(http, pane, "exit"))
    await waits_pending(http, 1)
    rig.tmux.run("kill-window", "-t", wid)
    status, answer = await pending
    assert status == 200 and answer["outcome"] == "gone", answer


async def test_timeout_and_bad_input(rig: Rig, daemon: Daemon, http: aiohttp.ClientSession) -> None:
    pane = new_pane(rig, "main")
    await sync(http)
    try:
        # cat in front (as tmux shows it) never ends by itself: a wait for idle must time out.
        # (A new pane's login shell may run its profile in front at any moment of its start.)
        start_in_pane(rig, pane, "cat")
        status, answer = await wait(http, pane, "idle", timeout_s=0.2)
        assert status == 200 and answer["outcome"] == "timeout" and not answer["met"], answer
        assert answer["waited_ms"] >= 200
        async with http.get(f"/v1/panes/{pane[1:]}/wait", params={"until": "soon"}) as resp:
            assert resp.status == 400 and (await resp.json())["error"]["code"] == "bad_until"
        async with http.get(f"/v1/panes/{pane[1:]}/wait", params={"timeout_s": "9999"}) as resp:
            assert resp.status == 400
            assert (await resp.json())["error"]["code"] == "bad_timeout_s"
        async with http.get("/v1/panes/99999/wait") as resp:
            assert resp.status == 404
    finally:
        rig.tmux.run("kill-pane", "-t", pane)


async def test_200_waits_at_once(rig: Rig, daemon: Daemon, http: aiohttp.ClientSession) -> None:
    pane = new_pane(rig, "other")
    start_in_pane(rig, pane, "cat")
    await sync(http)
    try:
        assert (await wait(http, pane, "busy"))[1]["outcome"] == "busy"
        waits = [asyncio.create_task(wait(http, pane, "idle", 60)) for _ in range(200)]
        await waits_pending(http, 200)
        rig.tmux.run("send-keys", "-t", pane, "C-d")
        answers = await asyncio.gather(*waits)
        outcomes = {(status, answer["outcome"]) for status, answer in answers}
        assert outcomes == {(200, "idle")}, outcomes
        print(f"\n200 waits: max waited {max(a['waited_ms'] for _, a in answers):.1f} ms")
    finally:
        rig.tmux.run("kill-pane", "-t", pane)


async def test_location_streams_silent_while_running(
    rig: Rig, daemon: Daemon, http: aiohttp.ClientSession
) -> None:
    """A stream without the activity type gets nothing while a pane runs ``yes >
    /dev/null`` and a loop of sleeps; the next frame it gets is the marker rename."""
    pane = new_pane(rig, "main")
    marker = rig.root / "loop-done"
    await sync(http)
    frames: list[dict[str, Any]] = []

    async def read() -> None:
        params = {"format": "ndjson"}
        async with http.get("/v1/events", params=params, timeout=aiohttp.ClientTimeout()) as r:
            async for line in r.content:
                frames.append(json.loads(line))

    stream = asyncio.create_task(read())
    try:
        await wait_until(lambda: bool(frames), 10, "the snapshot")
        assert frames[0]["type"] == "snapshot"
        rig.tmux.run("send-keys", "-t", pane, "yes > /dev/null", "Enter")
        assert (await wait(http, pane, "busy"))[1]["outcome"] == "busy"
        rig.tmux.run("send-keys", "-t", pane, "C-c")
        assert (await wait(http, pane, "idle"))[1]["outcome"] == "idle"
        rig.tmux.run(
            "send-keys", "-t", pane, f"for i in 1 2 3; do sleep 0.3; done; touch {marker}", "Enter"
        )
        await wait_until(marker.exists, 10, "the loop to end")
        assert (await wait(http, pane, "idle"))[1]["outcome"] == "idle"
        window = rig.tmux.display(pane, "#{window_id}")
        rig.tmux.run("rename-window", "-t", window, "marker")
        await wait_until(lambda: len(frames) >= 2, 10, "the marker event")
        rest = [f for f in frames[1:] if f["type"] != "heartbeat"]
        assert rest[0]["type"] == "pane.changed", rest
        assert rest[0]["changed"] == ["window.name"], rest
    finally:
        stream.cancel()
        await asyncio.gather(stream, return_exceptions=True)
        rig.tmux.run("kill-pane", "-t", pane)


def busy_pane(rig: Rig) -> str:
    """A new pane running ``cat`` (a window made after the rig's default-shell /bin/sh: the
    first pane's login shell may flush keys typed before it is ready)."""
    pane = new_pane(rig, "main")
    start_in_pane(rig, pane, "cat")
    return pane


async def test_server_killed_and_daemon_stopped() -> None:
    """The server killed: the wait ends ``gone``.  The daemon stopped: 503 daemon_stopping."""
    with private_rig(start=True) as rig, running_daemon(rig) as d:
        conn = aiohttp.UnixConnector(path=d.socket)
        async with aiohttp.ClientSession(connector=conn, base_url="http://localhost") as http:
            pane = busy_pane(rig)
            await sync(http)
            assert (await wait(http, pane, "busy"))[1]["outcome"] == "busy"
            pending = asyncio.create_task(wait(http, pane, "idle"))
            await waits_pending(http, 1)
            rig.tmux.run("kill-server")
            status, answer = await pending
            assert status == 200 and answer["outcome"] == "gone", answer
    with private_rig(start=True) as rig:
        d = Daemon(rig).wait_ready()
        try:
            conn = aiohttp.UnixConnector(path=d.socket)
            async with aiohttp.ClientSession(connector=conn, base_url="http://localhost") as http:
                pane = busy_pane(rig)
                await sync(http)
                assert (await wait(http, pane, "busy"))[1]["outcome"] == "busy"
                pending = asyncio.create_task(wait(http, pane, "idle"))
                await waits_pending(http, 1)
                d.proc.terminate()
                async with asyncio.timeout(10):
                    status, answer = await pending
                assert status == 503, answer
                assert answer["error"]["code"] == "daemon_stopping", answer
            # The exit of that one SIGTERM's stop.  Not ``stop()``: it signals again while
            # the daemon is still finishing, and a SIGTERM after its handlers are gone ends
            # the process by the signal.
            assert await asyncio.to_thread(d.proc.wait, 10) == 0, d.logs()
        finally:
            d.stop()


@pytest.mark.parametrize("how", ["typed", "own"])
async def test_exit_without_remain_on_exit(
    rig: Rig, daemon: Daemon, http: aiohttp.ClientSession, how: str
) -> None:
    """remain-on-exit off: a pane whose process exits by itself ends an exit wait ``exit``
    (status unknown: tmux keeps none), whether the shell exits (``exit 3`` typed, a split:
    the window stays) or the pane's only program ends (its window closes with it).  A kill
    of the same kind of pane stays ``gone`` (test_gone_answers)."""
    if how == "typed":
        # A plain `sh` as the pane's own process (tmux runs a command through `sh -c`), not
        # the login shell: a profile's commands (mesg, say) would be a change of their own
        # before the waits are in place.
        pane = rig.tmux.run(
            "split-window", "-d", "-t", "other:", "-P", "-F", "#{pane_id}", "exec sh"
        )
    else:
        pane = new_pane_running(rig, "other", "read x; exit 3")
    pane = pane.strip()
    await sync(http)
    pending = asyncio.create_task(wait(http, pane, "exit"))
    idle = asyncio.create_task(wait(http, pane, "change"))
    await waits_pending(http, 2)
    rig.tmux.run("send-keys", "-t", pane, *(["exit 3", "Enter"] if how == "typed" else ["Enter"]))
    status, answer = await pending
    assert status == 200 and answer["outcome"] == "exit" and answer["met"], answer
    assert answer["activity"]["dead"] is True and answer["activity"].get("exit_status") is None
    assert answer["location"] is None and "remain-on-exit off" in answer["reason"], answer
    status, changed = await idle
    assert changed["outcome"] == "exit" and changed["met"], (changed["before"], changed["activity"])
    # A kill-pane of a pane like it: gone.
    victim = rig.tmux.run("split-window", "-d", "-t", "other:", "-P", "-F", "#{pane_id}").strip()
    await sync(http)
    pending = asyncio.create_task(wait(http, victim, "exit"))
    await waits_pending(http, 1)
    rig.tmux.run("kill-pane", "-t", victim)
    status, answer = await pending
    assert answer["outcome"] == "gone" and not answer["met"], answer


def new_pane_running(rig: Rig, session: str, command: str) -> str:
    return rig.tmux.run(
        "new-window", "-d", "-t", f"{session}:", "-P", "-F", "#{pane_id}", command
    ).strip()
