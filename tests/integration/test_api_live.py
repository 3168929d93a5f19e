"""The HTTP API against real tmux: a private tmux server, the real daemon, and clients that run
inside its panes (so that the kernel, not the test, says who they are).

Every tmux command goes to the test's own server (``-S`` in a private directory).  Waiting is
always on a condition with a deadline; ``POST /v1/sync`` is the barrier after a tmux command.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.api.apitest import StreamReader
from tests.tmuxtest import TMUX, TmuxServer, wait_until
from tmuxlocd.daemon import serve as daemon
from tmuxlocd.daemon.config import Config
from tmuxlocd.daemon.observer import HOOK_INDEX

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        TMUX is None or shutil.which("curl") is None or shutil.which("script") is None,
        reason="needs tmux, curl and script",
    ),
]

ROOT = Path(__file__).resolve().parents[2]


def socket_exists(path: str) -> bool:
    return os.path.exists(path)


def read_text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


class Live:
    """A private tmux server and an in-process daemon watching only it."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tll-", dir="/tmp"))
        self.srv = TmuxServer(self.dir)
        self.socket = str(self.dir / "d.sock")
        self.task: asyncio.Task[int] | None = None
        self.shutdown = asyncio.Event()
        self.session: aiohttp.ClientSession | None = None

    async def tmux(self, *args: str) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        proc = await asyncio.create_subprocess_exec(
            *self.srv.argv(*args),
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 20)
        assert proc.returncode == 0, f"tmux {args}: {err.decode()}"
        return out.decode().rstrip("\n")

    async def start_daemon(self) -> None:
        self.shutdown = asyncio.Event()
        ready: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
        config = Config(socket_path=(self.srv.socket_path,), listen=(f"unix:{self.socket}",))
        self.task = asyncio.create_task(
            daemon.serve(config, shutdown=self.shutdown, on_ready=ready.set_result)
        )
        either: set[asyncio.Future[Any]] = {self.task, ready}
        await asyncio.wait(either, timeout=20, return_when=asyncio.FIRST_COMPLETED)
        assert ready.done(), "the daemon did not start"
        self.session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.socket))

    async def stop_daemon(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None
        if self.task is not None:
            self.shutdown.set()
            assert await asyncio.wait_for(self.task, 10) == 0
            self.task = None

    @property
    def client(self) -> aiohttp.ClientSession:
        assert self.session is not None
        return self.session

    async def get(self, url: str) -> Any:
        async with self.client.get("http://localhost" + url) as resp:
            assert resp.status == 200, await resp.text()
            return await resp.json()

    async def sync(self) -> str:
        async with self.client.post("http://localhost/v1/sync") as resp:
            assert resp.status == 200
            return str((await resp.json())["seq"])

    def curl(self, url: str, *extra: str) -> str:
        return shlex.join(
            ["curl", "-s", *extra, "--unix-socket", self.socket, "http://localhost" + url]
        )

    async def in_new_window(self, command: str) -> tuple[str, str]:
        """Run ``command`` in a new window's pane (kept open); (pane id, window id)."""
        out = await self.tmux(
            "new-window", "-d", "-P", "-F", "#{pane_id} #{window_id}", f"{command}; sleep 600"
        )
        pane, window = out.split()
        return pane, window

    async def answer(self, path: Path) -> dict[str, Any]:
        """The JSON a pane's client wrote to ``path`` (waiting for all of it)."""

        def complete() -> bool:
            try:
                json.loads(read_text(path))
            except ValueError:
                return False
            return True

        await wait_until(complete, 15, what=f"an answer in {path.name}")
        return dict(json.loads(read_text(path)))


@contextlib.asynccontextmanager
async def live_rig(*global_option: str) -> AsyncIterator[Live]:
    """A ``Live`` rig, its server started with ``/bin/sh`` panes (and the global option
    given, if any), its daemon running; everything ended after."""
    rig = Live()
    rig.srv.start("main")
    rig.srv.run("set-option", "-g", "default-shell", "/bin/sh")
    if global_option:
        rig.srv.run("set-option", "-g", *global_option)
    try:
        await rig.start_daemon()
        yield rig
    finally:
        with contextlib.suppress(Exception):
            await rig.stop_daemon()
        rig.srv.kill()
        shutil.rmtree(rig.dir, ignore_errors=True)


@pytest.fixture
async def live() -> AsyncIterator[Live]:
    async with live_rig() as rig:
        yield rig


# ------------------------------------------------------------------------------ identity


async def test_self_from_inside_a_pane(live: Live) -> None:
    out = live.dir / "self.json"
    pane, window = await live.in_new_window(f"{live.curl('/v1/self?fresh=1')} >{out}")
    answer = await live.answer(out)
    assert answer["inside_tmux"] is True and answer["verified_by"] == "tty"
    loc = answer["location"]
    assert (loc["pane"]["id"], loc["window"]["id"]) == (pane, window)
    assert loc["server"]["socket_path"] == live.srv.socket_path
    assert answer["caller"]["env_pane"] == pane
    assert answer["caller"]["tty"] == await live.tmux("display", "-p", "-t", pane, "#{pane_tty}")
    text = live.dir / "self.txt"
    pane2, _ = await live.in_new_window(f"{live.curl('/v1/self?fresh=1&format=text')} >{text}")
    await wait_until(lambda: read_text(text).count("\n") == 3, 15, what="the text form")
    lines = read_text(text).splitlines()
    assert lines[0] == "tmux location:"
    assert lines[1].startswith("session main, window ") and lines[1].endswith(f" {pane2}")


async def test_another_panes_tmux_pane_under_script(live: Live) -> None:
    first = await live.tmux("display", "-p", "-t", "main:0", "#{pane_id}")
    out = live.dir / "script.json"
    inner = f"{live.curl('/v1/self?fresh=1')} >{out}"
    command = f"TMUX_PANE={first} script -qc {shlex.quote(inner)} /dev/null"
    pane, _ = await live.in_new_window(command)
    answer = await live.answer(out)
    assert (answer["inside_tmux"], answer["reason"]) == (False, "tty_not_a_pane")
    assert answer["caller"]["env_pane"] == first  # a hint, and a wrong one: never trusted
    assert answer["caller"]["tty"] is not None
    assert answer["caller"]["ancestor_pane"] == pane  # script itself runs in the pane


async def test_setsid_child_without_a_tty(live: Live) -> None:
    out = live.dir / "setsid.json"
    out2 = live.dir / "setsid-ancestor.json"
    command = (
        f"setsid {live.curl('/v1/self?fresh=1')} >{out} </dev/null 2>&1; "
        f"setsid {live.curl('/v1/self?accept=ancestor')} >{out2} </dev/null 2>&1"
    )
    pane, _ = await live.in_new_window(command)
    answer = await live.answer(out)
    assert (answer["inside_tmux"], answer["reason"]) == (False, "no_controlling_tty")
    assert answer["caller"]["tty"] is None
    assert answer["caller"]["ancestor_pane"] == pane
    assert answer["caller"]["env_pane"] == pane
    answer = await live.answer(out2)
    assert (answer["inside_tmux"], answer["verified_by"]) == (True, "ancestor")
    assert answer["location"]["pane"]["id"] == pane


# ------------------------------------------------------------------------------ streams


class PaneStream:
    """A pane=self stream read by curl in a pane, written line by line to a file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seen = 0

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in read_text(self.path).splitlines() if line]

    async def until(self, predicate: Any, what: str) -> list[dict[str, Any]]:
        """Wait for an event matching ``predicate``; the new events up to and including it."""
        found: list[dict[str, Any]] = []

        def check() -> bool:
            events = self.lines()[self.seen :]
            for i, ev in enumerate(events):
                if predicate(ev):
                    found[:] = events[: i + 1]
                    return True
            return False

        await wait_until(check, 15, what=what)
        self.seen += len(found)
        return found


def renamed(name: str) -> Any:
    return lambda ev: ev.get("location", {}).get("window", {}).get("name") == name


async def test_pane_self_stream(live: Live) -> None:
    out = live.dir / "events.ndjson"
    command = (
        f"{live.curl('/v1/sync', '-X', 'POST')} >/dev/null; "
        f"{live.curl('/v1/events?pane=self&format=ndjson', '-N')} >{out}"
    )
    pane, window = await live.in_new_window(command)
    stream = PaneStream(out)
    snap = (await stream.until(lambda ev: ev["type"] == "snapshot", "the snapshot"))[-1]
    assert [p["pane"]["id"] for p in snap["panes"]] == [pane]

    # Its window is split: exactly one pane.changed for it (the new pane is not its business).
    await live.tmux("split-window", "-d", "-t", pane)
    await live.sync()
    await live.tmux("rename-window", "-t", window, "marker1")
    events = await stream.until(renamed("marker1"), "marker1")
    assert [ev["type"] for ev in events] == ["pane.changed", "pane.changed"]
    assert "neighbors" in events[0]["changed"] and events[0]["location"]["pane"]["id"] == pane
    assert events[1]["changed"] == ["window.name"]

    # Another session changes in every way: nothing for this pane.
    await live.tmux("new-session", "-d", "-s", "other", "-x", "100", "-y", "30")
    await live.tmux("split-window", "-d", "-t", "other:0")
    await live.tmux("rename-window", "-t", "other:0", "busy")
    await live.tmux("kill-pane", "-t", "other:0.1")
    await live.sync()
    await live.tmux("rename-window", "-t", window, "marker2")
    events = await stream.until(renamed("marker2"), "marker2")
    assert [ev["changed"] for ev in events] == [["window.name"]]

    # break-pane moves it to a window of its own, join-pane brings it back: it is followed.
    await live.tmux("break-pane", "-d", "-s", pane)
    moved = await stream.until(
        lambda ev: ev.get("location", {}).get("window", {}).get("id") not in (None, window),
        "the pane in its new window",
    )
    assert all(ev["location"]["pane"]["id"] == pane for ev in moved)
    await live.tmux("join-pane", "-d", "-s", pane, "-t", window)
    back = await stream.until(
        lambda ev: ev.get("location", {}).get("window", {}).get("id") == window,
        "the pane back in its window",
    )
    assert back[-1]["type"] == "pane.changed" and "window.id" in back[-1]["changed"]
    await live.sync()
    await live.tmux("rename-window", "-t", window, "marker3")
    events = await stream.until(renamed("marker3"), "marker3")
    assert [ev["location"]["pane"]["id"] for ev in events] == [pane] * len(events)


async def test_sync_is_a_barrier(live: Live) -> None:
    window = await live.tmux("display", "-p", "-t", "main:0", "#{window_id}")
    for n in range(3):
        await live.tmux("split-window", "-d", "-t", window)
        seq = await live.sync()
        body = await live.get(f"/v1/panes?window={window.lstrip('@')}&detail=summary")
        assert body["total"] == n + 2, f"the split {n} is not there right after the barrier"
        assert seq.startswith(seq.split(":")[0] + ":")


async def test_fresh_read_shows_a_rename(live: Live) -> None:
    pane = await live.tmux("display", "-p", "-t", "main:0", "#{pane_id}")
    await live.tmux("rename-window", "-t", "main:0", "fresh-name")
    body = await live.get(f"/v1/panes/{pane.lstrip('%')}?fresh=1")
    assert body["window"]["name"] == "fresh-name"


async def test_a_dead_pane_is_dead_in_the_tree_too(live: Live) -> None:
    """/v1/tree shows each pane as its Location has it (it once built its own, without
    ``dead``: a dead pane said ``dead: true`` in /v1/panes and false in the tree)."""
    await live.tmux("set-option", "-g", "remain-on-exit", "on")
    pane = await live.tmux("new-window", "-d", "-P", "-F", "#{pane_id}", "exit 7")
    await wait_until(
        lambda: live.srv.run("display", "-p", "-t", pane, "#{pane_dead}").strip() == "1",
        10,
        what=f"{pane} dead",
    )
    await live.sync()
    assert (await live.get(f"/v1/panes/{pane[1:]}"))["pane"]["dead"] is True
    tree = await live.get("/v1/tree")
    panes = {
        p["id"]: p for s in tree["servers"][0]["sessions"] for w in s["windows"] for p in w["panes"]
    }
    assert panes[pane]["dead"] is True
    live_pane = await live.tmux("display", "-p", "-t", "main:0", "#{pane_id}")
    assert "dead" not in panes[live_pane]  # left out at its default, as in a Location


async def test_resume_across_a_disconnect(live: Live) -> None:
    url = "http://localhost/v1/events?format=ndjson"
    async with live.client.get(url) as resp:
        last = (await StreamReader(resp).event())["id"]
    await live.tmux("rename-window", "-t", "main:0", "while-away")
    await live.sync()
    async with live.client.get(url, headers={"Last-Event-ID": last}) as resp:
        ev = await StreamReader(resp).event()
        assert ev["type"] == "pane.changed" and ev["changed"] == ["window.name"]
        assert ev["location"]["window"]["name"] == "while-away"


async def test_daemon_restart_gives_reset_then_snapshot(live: Live) -> None:
    url = "http://localhost/v1/events?format=ndjson"
    async with live.client.get(url) as resp:
        last = (await StreamReader(resp).event())["id"]
    await live.stop_daemon()
    await live.start_daemon()
    async with live.client.get(url, headers={"Last-Event-ID": last}) as resp:
        reader = StreamReader(resp)
        reset = await reader.event()
        assert reset["type"] == "reset"
        assert reset["id"].split(":")[0] != last.split(":")[0]  # a new instance
        snap = await reader.event()
        assert snap["type"] == "snapshot" and len(snap["panes"]) == 1


# ------------------------------------------------------------------------------ stopping


async def test_sigterm_with_50_streams() -> None:
    rig = Live()
    rig.srv.start("main")
    proc: asyncio.subprocess.Process | None = None
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        env.update(
            PYTHONPATH=str(ROOT), XDG_CONFIG_HOME=str(rig.dir / "config"), TMUX_TMPDIR=str(rig.dir)
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "tmuxlocd",
            "serve",
            "-S",
            rig.srv.socket_path,
            "--listen",
            f"unix:{rig.socket}",
            env=env,
            cwd=ROOT,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )

        async def answers() -> bool:
            try:
                async with (
                    aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=rig.socket)) as s,
                    s.get("http://localhost/v1/health") as resp,
                ):
                    body = await resp.json()
                    return bool(body["servers"] and body["servers"][0]["observer"] == "attached")
            except (aiohttp.ClientError, OSError):
                return False

        await wait_until(answers, 20, what="the daemon to attach")
        await wait_until(
            lambda: f"[{HOOK_INDEX}]" in rig.srv.run("show-hooks", "-gw"), 10, what="its hooks"
        )
        connector = aiohttp.UnixConnector(path=rig.socket, limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            responses = [
                await session.get("http://localhost/v1/events?format=ndjson") for _ in range(50)
            ]
            readers = [StreamReader(resp) for resp in responses]
            for reader in readers:
                assert (await reader.event())["type"] == "snapshot"
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 10)
            elapsed = time.monotonic() - started
            for reader in readers:
                assert await reader.eof(timeout=2)
            for resp in responses:
                resp.release()
        assert code == 0
        # SPEC §6: stop within 2 s.  The daemon holds itself to that budget: a step still
        # running at its end is abandoned with "stop took too long".  So the test asserts
        # that every step finished (the clean streams' EOF above, no such line) and prints
        # the figures; the process exit is only checked against a hang.
        assert proc.stderr is not None
        log = (await proc.stderr.read()).decode()
        assert "stop took too long" not in log, log
        stopped = re.search(r"stopped in ([0-9.]+) s", log)
        assert stopped is not None, log
        print(f"stop: {stopped[1]} s in the daemon, {elapsed:.3f} s until the process exited")
        assert not socket_exists(rig.socket)
        assert f"[{HOOK_INDEX}]" not in rig.srv.run("show-hooks", "-gw")
        assert rig.srv.run("list-sessions", "-F", "#{session_name}").split() == ["main"]
    finally:
        if proc is not None and proc.returncode is None:
            proc.kill()
            await proc.wait()
        rig.srv.kill()
        shutil.rmtree(rig.dir, ignore_errors=True)
