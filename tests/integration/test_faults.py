"""Fault injection against a daemon running as ``python -m tmuxlocd serve``.

Each test breaks something (the tmux server killed mid-burst or stopped, the daemon's own
control client or hook waiter killed, the daemon killed and restarted under its subscribers,
subscribers that never read, a client that opens thousands of connections) and then checks
that the daemon is alive, its memory bounded, and its model (``/v1/tree`` and a subscriber's
replayed stream) equal to what tmux itself says.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import shutil
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from tests.soak import (
    TMUX,
    Daemon,
    Server,
    Stream,
    Truth,
    api_tree,
    check_against_tmux,
    open_fds,
    read_truth,
    tmux,
    tmux_ok,
)
from tests.tmuxtest import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
    pytest.mark.timeout(120),
]

RSS_GROWTH_KIB = 40 * 1024  # what a fault may add to the daemon's memory, at most


@dataclass
class Rig:
    server: Server
    daemon: Daemon
    stream: Stream
    rss0: int

    @property
    def sock(self) -> str:
        return self.server.socket_path

    async def check(
        self, stream: Stream | None = None, *, panes_listing: bool = False, neighbors: bool = False
    ) -> Truth | None:
        return await check_against_tmux(
            self.daemon,
            stream or self.stream,
            self.sock,
            panes_listing=panes_listing,
            neighbors=neighbors,
        )

    async def healthy(self) -> None:
        """After a fault: alive, model right (stream and tree), memory bounded."""
        assert self.daemon.alive(), "the daemon died:\n" + self.daemon.log_tail()
        await self.check(panes_listing=True, neighbors=True)
        rss = self.daemon.rss_kib()
        assert rss < self.rss0 + RSS_GROWTH_KIB, f"daemon RSS {rss} KiB (started at {self.rss0})"

    async def control_clients(self) -> list[tuple[int, str]]:
        rc, out, _ = await tmux(
            self.sock, "list-clients", "-F", "#{client_control_mode} #{client_pid} #{client_name}"
        )
        rows = [line.split(" ") for line in out.splitlines()] if rc == 0 else []
        return [(int(pid), name) for flag, pid, name in rows if flag == "1"]

    def waiters(self) -> list[int]:
        """Processes of ``tmux ... wait-for`` on this server (the daemon's hook waiter)."""
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except OSError:
                continue
            if b"wait-for" in argv and self.sock.encode() in argv:
                found.append(int(entry))
        return found

    def health_of(self, health: dict[str, object]) -> dict[str, object]:
        servers = health["servers"]
        assert isinstance(servers, list)
        return next(s for s in servers if s["socket_path"] == self.sock)


async def start_server() -> Server:
    server = Server()
    await server.start("A")
    sock = server.socket_path
    await tmux_ok(
        sock,
        "new-session",
        "-d",
        "-s",
        "B",
        "-x",
        "120",
        "-y",
        "40",
        ";",
        "split-window",
        "-d",
        "-t",
        "A:0",
        ";",
        "split-window",
        "-d",
        "-h",
        "-t",
        "B:0",
        ";",
        "new-window",
        "-d",
        "-t",
        "B:",
    )
    return server


@pytest.fixture
async def rig(request: pytest.FixtureRequest) -> AsyncIterator[Rig]:
    server = await start_server()
    marker = request.node.get_closest_marker("daemon_args")
    daemon = Daemon([server.socket_path], extra=marker.args if marker else ())
    stream = Stream(daemon)
    try:
        await daemon.start()
        await stream.open()
        r = Rig(server, daemon, stream, daemon.rss_kib())
        await r.check()
        yield r
        errors = [e for e in daemon.log_errors() if "Too many open files" not in e]
        assert not errors, "the daemon logged errors:\n" + "\n".join(errors[:5])
    finally:
        await stream.close()
        await daemon.stop()
        server.kill()
        daemon.cleanup()


BURST = [
    ("split-window", "-d", "-t", "A:0"),
    ("select-layout", "-t", "A:0", "tiled"),
    ("split-window", "-d", "-h", "-t", "B:0"),
    ("rename-window", "-t", "A:0", "burst"),
    ("kill-pane", "-t", "A:0.1"),
    ("new-window", "-d", "-t", "B:"),
    ("swap-window", "-s", "B:0", "-t", "B:1"),
    ("resize-pane", "-Z", "-t", "B:0.0"),
    ("kill-pane", "-t", "B:0.1"),
]


async def burst(sock: str, count: int, started: asyncio.Event | None = None) -> int:
    """Run operations back to back until ``count`` or until the server is gone."""
    done = 0
    for i in range(count):
        rc, _, err = await tmux(sock, *BURST[i % len(BURST)])
        done += 1
        if started is not None and done == 10:
            started.set()
        if rc != 0 and ("no server" in err or "server exited" in err or "error connecting" in err):
            break
    if started is not None:
        started.set()
    return done


async def test_tmux_server_sigkill_mid_burst(rig: Rig) -> None:
    truth = await read_truth(rig.sock)
    assert truth is not None and truth.pid is not None
    started = asyncio.Event()
    task = asyncio.create_task(burst(rig.sock, 400, started))
    await started.wait()
    os.kill(truth.pid, signal.SIGKILL)
    ran = await task
    assert ran < 400, "the burst did not notice the server die"
    await wait_until(lambda: rig.sock in rig.stream.down, 10, "server.down on the stream")
    running, _, sessions = api_tree(await rig.daemon.tree(), rig.sock)
    assert not running and sessions == {}
    assert rig.stream.locations(rig.sock) == {}, "panes left in the stream after server.down"
    entry = rig.health_of(await rig.daemon.health())
    assert entry["running"] is False and entry["panes"] == 0 and entry["observer"] == "down"
    # The daemon never starts a server: still down a moment later.
    assert await read_truth(rig.sock) is None
    # Up again: attached and right, with server.up on the stream.
    await rig.server.start("A")
    await tmux_ok(rig.sock, "new-session", "-d", "-s", "B2")
    await wait_until(lambda: rig.sock not in rig.stream.down, 10, "server.up on the stream")
    await rig.healthy()
    entry = rig.health_of(await rig.daemon.health())
    assert entry["observer"] == "attached"


async def test_observer_control_client_sigkill(rig: Rig) -> None:
    ((pid, _),) = await rig.control_clients()
    task = asyncio.create_task(burst(rig.sock, 30))
    os.kill(pid, signal.SIGKILL)
    await task

    async def replaced() -> bool:
        clients = await rig.control_clients()
        return len(clients) == 1 and clients[0][0] != pid

    await wait_until(replaced, 10, "a new control client (and only one)")
    await rig.healthy()
    assert rig.sock not in rig.stream.down and rig.stream.types["server.down"] == 0


async def test_hook_waiter_sigkill(rig: Rig) -> None:
    """tmux 3.3 hooks wake a separate ``wait-for`` client; killed, it is started again."""
    waiters = rig.waiters()
    if not waiters:
        pytest.skip("this tmux delivers hooks as messages, no waiter process")
    for pid in waiters:
        os.kill(pid, signal.SIGKILL)

    def replaced() -> bool:
        now = rig.waiters()
        return len(now) == 1 and now[0] not in waiters

    await wait_until(replaced, 10, "a new hook waiter (and only one)")
    await burst(rig.sock, 20)
    await rig.healthy()


async def test_one_hook_waiter_serves_many_changes(rig: Rig) -> None:
    """tmux 3.3: one waiter client serves a chain of wake-ups (a tmux client costs the
    server far more than a command), and the next one takes over when it is used up, with
    no change in another session missed."""
    from tmuxlocd.core.attach import WAITER_CHAIN

    def counted(kind: str, before: int) -> Callable[[], bool]:
        return lambda: rig.stream.types[kind] > before

    waiters = rig.waiters()
    if not waiters:
        pytest.skip("this tmux delivers hooks as messages, no waiter process")
    for step in range(WAITER_CHAIN // 2 + 4):  # a split and a kill: two wake-ups a step
        added = rig.stream.types["pane.added"]
        removed = rig.stream.types["pane.removed"]
        pane = await tmux_ok(rig.sock, "split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "B:1")
        await wait_until(counted("pane.added", added), 10, f"the split {step}")
        await tmux_ok(rig.sock, "kill-pane", "-t", pane.strip())
        await wait_until(counted("pane.removed", removed), 10, f"the kill {step}")
        if step == WAITER_CHAIN // 4:
            assert rig.waiters() == waiters, "a new waiter client within its chain"
    await wait_until(lambda: len(rig.waiters()) == 1, 10, "one waiter, the next one")
    assert rig.waiters() != waiters
    await rig.healthy()


async def test_tmux_server_stopped_then_continued(rig: Rig) -> None:
    truth = await read_truth(rig.sock)
    assert truth is not None and truth.pid is not None
    await burst(rig.sock, 10)
    os.kill(truth.pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    try:
        # Changes queued while it is stopped: they happen when it continues.
        queued = asyncio.create_task(burst(rig.sock, 6))
        sync = asyncio.create_task(rig.daemon.sync())
        # For the 5 s it is stopped, the daemon keeps answering everyone else: a daemon that
        # waited on tmux would not answer until SIGCONT, which comes only after this loop,
        # so the deadline turns that into a failure (the slowest answer is printed).
        slowest = 0.0
        answered = 0
        while time.monotonic() - stopped_at < 5.0:
            t0 = time.monotonic()
            async with asyncio.timeout(30):
                health = await rig.daemon.health()
                await rig.daemon.tree()
            slowest = max(slowest, time.monotonic() - t0)
            assert health["status"] == "ok"
            answered += 1
            await asyncio.sleep(0.2)  # the fault's duration, paced: nothing is awaited here
        assert answered >= 2, "the daemon answered only once while tmux was stopped"
        print(f"\n{answered} rounds answered while tmux was stopped, slowest {slowest:.3f} s")
        assert not sync.done() or sync.exception() is None
    finally:
        os.kill(truth.pid, signal.SIGCONT)
    await queued
    async with asyncio.timeout(15):
        await sync
    await rig.healthy()
    assert rig.stream.types["server.down"] == 0


async def test_daemon_sigkill_and_restart_under_subscribers(rig: Rig) -> None:
    # Three more subscribers: one resuming with Last-Event-ID, one with ?since=, one
    # filtered to a session; all of them must end up right.
    by_header = rig.stream
    by_since = Stream(rig.daemon)
    scoped = Stream(rig.daemon, {"session": "$0"})
    await by_since.open()
    await scoped.open()
    await burst(rig.sock, 8)
    await rig.check()
    await by_since.wait_for(await rig.daemon.sync())
    control_before = await rig.control_clients()
    # tmux 3.3 wakes a separate `wait-for` waiter; 3.4+ sends hooks as messages (none).
    waiters_before = len(rig.waiters())
    assert len(control_before) == 1 and waiters_before <= 1

    await rig.daemon.kill()
    for s in (by_header, by_since, scoped):
        await wait_until(s.ended.is_set, 5, "the stream to end with the daemon")

    # The control client goes with the daemon (its stdin closes).
    async def no_control_client() -> bool:
        return await rig.control_clients() == []

    await wait_until(no_control_client, 5, "the dead daemon's control client to go")
    # Changes nobody is watching; renames only, which fire none of the hooks the dead daemon
    # left behind (a hook would wake its orphaned waiter, hiding a leak).
    await tmux_ok(
        rig.sock,
        "rename-window",
        "-t",
        "A:0",
        "while down",
        ";",
        "rename-session",
        "-t",
        "B",
        "B while down",
    )

    await rig.daemon.start()  # same socket path: the stale socket file is replaced
    await wait_until(
        lambda: len(rig.waiters()) == waiters_before,
        5,
        f"{waiters_before} hook waiter(s), not the dead daemon's too: {rig.waiters()}",
    )
    last = by_header.last_id
    assert last is not None
    await by_header.open(last)
    by_since.params["since"] = by_since.last_id or ""
    await by_since.open()
    await scoped.open(scoped.last_id)
    await rig.healthy()
    for s in (by_header, by_since, scoped):
        await s.wait_for(await rig.daemon.sync())
        assert s.first_types[:2] == ["reset", "snapshot"], s.first_types
        assert not s.problems, s.problems
    await rig.check(by_since)
    truth = await read_truth(rig.sock)
    assert truth is not None
    want = {p for p, loc in truth.locations().items() if loc[0] == "$0"}
    assert set(scoped.locations(rig.sock)) == want
    await by_since.close()
    await scoped.close()

    # An exact resume within one instance replays the later events, with no snapshot.
    await rig.stream.close()
    last = rig.stream.last_id
    await burst(rig.sock, 5)
    await rig.daemon.sync()
    await rig.stream.open(last)
    await rig.check()
    assert "snapshot" not in rig.stream.first_types and "reset" not in rig.stream.first_types


async def connect_unix(path: str, timeout: float = 10.0) -> socket.socket:
    """Connect, waiting while the daemon's backlog is full (a Unix socket then refuses with
    EAGAIN instead of queueing; asyncio would hand back an unconnected socket)."""
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(path)
            return sock
        except BlockingIOError:
            sock.close()
            if time.monotonic() > deadline:
                raise AssertionError(f"the daemon accepted nothing for {timeout} s") from None
            await asyncio.sleep(0.005)


def socket_files(directory: str) -> list[str]:
    return [os.path.join(directory, n) for n in os.listdir(directory)]


def raise_nofile(want: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"needs {want} file descriptors, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))


async def raw_stream(
    path: str, query: str = "format=ndjson"
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_unix_connection(path, limit=1 << 22)
    writer.write(f"GET /v1/events?{query} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    await writer.drain()
    return reader, writer


class LightReader:
    """A subscriber that reads everything and only looks for one marker (cheap enough to run
    140 of in the test process)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.tail = b""
        self.bytes = 0
        self.found = asyncio.Event()
        self.marker = b""
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while True:
            chunk = await self.reader.read(1 << 20)
            if not chunk:
                return
            self.bytes += len(chunk)
            self.tail = self.tail[-4096:] + chunk
            if self.marker and self.marker in self.tail:
                self.found.set()

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        self.writer.close()


def stuck_stream(path: str) -> socket.socket:
    """A subscriber that never reads: a plain blocking socket nobody calls recv() on (an
    asyncio stream would read into its own buffer behind our back)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(path)
    sock.sendall(b"GET /v1/events?format=ndjson HTTP/1.1\r\nHost: localhost\r\n\r\n")
    sock.setblocking(False)
    return sock


async def read_until_lagged(sock: socket.socket, timeout: float) -> bytes:
    """What a subscriber that stopped reading gets when it reads again: the events that were
    already on their way, then `lagged` and a snapshot (or the end of the connection)."""
    loop = asyncio.get_running_loop()
    seen = b""
    async with asyncio.timeout(timeout):
        while True:
            _, sep, rest = seen.partition(b'"type":"lagged"')
            if sep and b'"type":"snapshot"' in rest:
                return seen
            chunk = await loop.sock_recv(sock, 1 << 20)
            if not chunk:
                return seen
            seen += chunk


# Longer than this test can take on any machine: the stuck streams must still be there when
# they read again (test_stuck_streams_are_dropped checks the timeout itself).
@pytest.mark.daemon_args("--stream-write-timeout", "3600")
async def test_subscribers_that_never_read(rig: Rig) -> None:
    """150 subscribers read, 50 never do, while thousands of events are published."""
    raise_nofile(4096)
    sock = rig.sock
    # A window of 40 panes: each rename is 40 pane.changed events.
    await tmux_ok(sock, "new-session", "-d", "-s", "big", "-x", "250", "-y", "100")
    for _ in range(13):
        await tmux_ok(
            sock,
            *(
                a
                for _ in range(3)
                for a in (
                    "split-window",
                    "-d",
                    "-t",
                    "big:0",
                    ";",
                    "select-layout",
                    "-t",
                    "big:0",
                    "tiled",
                    ";",
                )
            ),
        )
    await rig.check()
    stuck = [stuck_stream(rig.daemon.sock) for _ in range(50)]
    checked = [Stream(rig.daemon) for _ in range(10)]
    for r in checked:
        await r.open()
    light = [LightReader(*await raw_stream(rig.daemon.sock)) for _ in range(140)]
    rss_start = peak = rig.daemon.rss_kib()
    renames = 120  # 120 x 40 = 4,800 events: more than a subscriber's queue (4,096)
    for i in range(renames):
        name = "final-marker" if i == renames - 1 else f"n{i}"
        if i == renames - 1:
            for reader in light:
                reader.marker = b'"name":"final-marker"'
        await tmux_ok(sock, "rename-window", "-t", "big:0", name)
        seq = await rig.daemon.sync()
        if i % 20 == 0:
            peak = max(peak, rig.daemon.rss_kib())
    # The readers have everything (the deadlines only turn a reader left behind into a
    # failure; how long catching up took is printed).
    t0 = time.monotonic()
    for r in checked:
        await r.wait_for(seq, timeout=20)
        assert not r.problems, r.problems
    async with asyncio.timeout(20):
        for lr in light:
            await lr.found.wait()
    catch_up = time.monotonic() - t0
    peak = max(peak, rig.daemon.rss_kib())
    print(f"\n{len(checked) + len(light)} readers caught up in {catch_up:.2f} s")
    assert peak < rss_start + 60 * 1024, f"daemon RSS grew from {rss_start} to {peak} KiB"
    assert (await rig.daemon.health())["subscribers"] >= 201
    # The stuck ones read again: the events already on their way, then `lagged` and a
    # fresh snapshot.
    for sock_ in stuck[:25]:
        seen = await read_until_lagged(sock_, 20)
        assert b'"type":"lagged"' in seen, f"no lagged after {len(seen)} bytes"
        assert len(seen) < 2 << 20, f"{len(seen)} bytes were on their way: not bounded"
    await rig.check()
    for r in checked:
        await r.close()
    for lr in light:
        await lr.close()
    for sock_ in stuck:
        sock_.close()
    await wait_until(lambda: one_subscriber(rig), 10, "the streams to end")
    await rig.healthy()


TILED = ("select-layout", "-t", "big:0", "tiled", ";")


@pytest.mark.daemon_args("--stream-write-timeout", "2", "--log-level", "debug")
async def test_stuck_streams_are_dropped(rig: Rig) -> None:
    """A subscriber that never reads again is dropped once a write to it has waited the
    write timeout: it costs nothing for ever.  Those that read go on."""
    sock = rig.sock
    # A window of 25 panes: each rename is 25 pane.changed events of about 900 bytes, so a
    # few renames fill a stuck stream's socket and its buffer.
    await tmux_ok(sock, "new-session", "-d", "-s", "big", "-x", "250", "-y", "100")
    for _ in range(8):
        await tmux_ok(
            sock,
            *(a for _ in range(3) for a in ("split-window", "-d", "-t", "big:0", ";", *TILED)),
        )
    stuck = [stuck_stream(rig.daemon.sock) for _ in range(5)]
    reader = Stream(rig.daemon)
    await reader.open()
    assert (await rig.daemon.health())["subscribers"] == 7
    try:
        seq = ""
        for i in range(40):
            await tmux_ok(sock, "rename-window", "-t", "big:0", f"r{i}")
            seq = await rig.daemon.sync()
            if (await rig.daemon.health())["subscribers"] == 2:
                break  # the stuck ones are gone already: no need to publish more
        await wait_until(lambda: subscribers_are(rig, 2), 60, "the stuck streams to be dropped")
        # Each was ended by the daemon, which said why; the readers have everything.
        loop = asyncio.get_running_loop()
        for sock_ in stuck:
            async with asyncio.timeout(10):
                while await loop.sock_recv(sock_, 1 << 20):
                    pass
        log = await asyncio.to_thread(Path(rig.daemon.log_path).read_text, errors="replace")
        assert log.count("stream reader stalled; closed") == 5, rig.daemon.log_tail()
        await reader.wait_for(seq, timeout=20)
        assert not reader.problems, reader.problems
    finally:
        for sock_ in stuck:
            sock_.close()
        await reader.close()
    await wait_until(lambda: one_subscriber(rig), 10, "the streams to end")
    await rig.healthy()


async def subscribers_are(rig: Rig, n: int) -> bool:
    return bool((await rig.daemon.health())["subscribers"] == n)


async def one_subscriber(rig: Rig) -> bool:
    """Only the rig's own stream is left."""
    health = await rig.daemon.health()
    return bool(health["subscribers"] == 1)


async def test_two_thousand_connections(rig: Rig) -> None:
    """One client opens 2,000 connections: 1,100 ask for streams (1,000 at most are served,
    the rest get 503 too_many_streams), 900 just sit there.  Others are still answered.

    The daemon runs with a soft limit of 1,024 open files, a common default: it must raise
    it itself to hold its 1,000 streams."""
    raise_nofile(6000)
    await rig.daemon.stop()
    rig.daemon.nofile = 1024
    await rig.daemon.start()
    await rig.stream.open()
    await rig.check()
    fds0 = open_fds(rig.daemon.pid)
    opened: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    statuses: dict[int, int] = {}
    try:
        for i in range(2000):
            # A blocking connect: with the daemon's backlog full it waits to be accepted
            # (asyncio's non-blocking connect would give up on a Unix socket, unconnected).
            reader, writer = await asyncio.open_unix_connection(
                sock=await connect_unix(rig.daemon.sock)
            )
            opened.append((reader, writer))
            if i < 1100:
                writer.write(b"GET /v1/events?format=ndjson HTTP/1.1\r\nHost: x\r\n\r\n")
        for reader, _ in opened[:1100]:
            async with asyncio.timeout(20):
                line = await reader.readline()
            status = int(line.split(b" ")[1])
            statuses[status] = statuses.get(status, 0) + 1
            if status == 503:
                head = await reader.readuntil(b"\r\n\r\n")
                assert b"Retry-After" in head
        # 1,000 streams in all: the rig's own and 999 of these.
        assert statuses == {200: 999, 503: 101}, statuses
        # Everyone else is still served, with all of those connections open.
        t0 = time.monotonic()
        health = await rig.daemon.health()
        print(f"\nhealth with 1,100 connections open: {time.monotonic() - t0:.3f} s")
        assert health["subscribers"] == 1000
        status, body = await rig.daemon.get("/v1/events", params={"format": "ndjson"})
        assert status == 503 and body["error"]["code"] == "too_many_streams"
        await burst(rig.sock, 6)
        await rig.check()
    finally:
        for _, writer in opened:
            writer.close()
    await wait_until(lambda: one_subscriber(rig), 15, "the streams to end")

    def fds_released() -> bool:
        return open_fds(rig.daemon.pid) < fds0 + 20

    await wait_until(fds_released, 15, "the daemon to close the connections")
    await rig.healthy()


async def test_reconnect_storm_after_a_restart(rig: Rig) -> None:
    """The daemon restarts and its 1,000 subscribers reconnect in one burst, each resuming
    with ``Last-Event-ID``: no connect is refused (a full Unix backlog refuses with EAGAIN at
    once), and every one gets its stream (``reset``, then a snapshot)."""
    raise_nofile(6000)
    await rig.stream.close()
    last = rig.stream.last_id
    assert last is not None
    await rig.daemon.kill()
    await rig.daemon.start()
    count = 1000  # SPEC §6's most concurrent streams, all of them at once
    socks: list[socket.socket] = []
    refused = 0
    # One tight burst, nothing awaited in between: the daemon can only queue them.
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(rig.daemon.sock)
        except BlockingIOError:
            sock.close()
            refused += 1
        else:
            socks.append(sock)
    request = (
        f"GET /v1/events?format=ndjson HTTP/1.1\r\nHost: localhost\r\nLast-Event-ID: {last}\r\n\r\n"
    ).encode()

    async def resume(sock: socket.socket) -> tuple[int, list[str]]:
        reader, writer = await asyncio.open_unix_connection(sock=sock, limit=1 << 22)
        try:
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ")[1])
            body = b""
            while status == 200 and body.count(b"\n") < 2:
                size = int(await reader.readuntil(b"\r\n"), 16)  # chunked
                body += (await reader.readexactly(size + 2))[:-2]
            types = [json.loads(line)["type"] for line in body.split(b"\n")[:2]]
            return status, types
        finally:
            writer.close()

    try:
        assert refused == 0, f"{refused} of {count} connects refused (listen backlog full)"
        async with asyncio.timeout(60):
            answers = await asyncio.gather(*(resume(sock) for sock in socks))
    finally:
        for sock in socks:
            sock.close()
    assert [a for a in answers if a != (200, ["reset", "snapshot"])] == []
    await wait_until(lambda: one_subscriber_or_none(rig), 15, "the streams to end")
    await rig.stream.open()
    await rig.healthy()


async def one_subscriber_or_none(rig: Rig) -> bool:
    health = await rig.daemon.health()
    return bool(health["subscribers"] == 0)


def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


def free_tcp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class SseClient:
    """An EventSource as browsers and the npm ``eventsource`` package are: SSE over TCP with
    a bearer token read once, resuming with ``Last-Event-ID`` whenever the stream ends, and
    closing for good on a 401 (as EventSource does on any status but 200)."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.last_id: str | None = None
        self.events: list[tuple[str, str, dict[str, object]]] = []  # (id, event, data)
        self.statuses: list[int] = []
        self.connected = asyncio.Event()
        self.ended = asyncio.Event()
        self.closed_for_good = False
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None)) as http:
            while True:
                headers = {"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"}
                if self.last_id is not None:
                    headers["Last-Event-ID"] = self.last_id
                try:
                    async with http.get(self.url, headers=headers) as resp:
                        self.statuses.append(resp.status)
                        if resp.status != 200:
                            self.closed_for_good = True
                            self.ended.set()
                            return
                        self.connected.set()
                        await self._read(resp)
                except (aiohttp.ClientError, ConnectionError):
                    pass
                self.connected.clear()
                self.ended.set()
                await asyncio.sleep(0.05)  # EventSource's reconnection delay, shortened

    async def _read(self, resp: aiohttp.ClientResponse) -> None:
        ident = kind = ""
        data: list[str] = []
        async for raw in resp.content:
            line = raw.decode().rstrip("\n")
            if not line:
                if data:
                    if ident:
                        self.last_id = ident
                    self.events.append((ident, kind or "message", json.loads("\n".join(data))))
                ident = kind = ""
                data = []
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(":")
                value = value.removeprefix(" ")
                if field == "id":
                    ident = value
                elif field == "event":
                    kind = value
                elif field == "data":
                    data.append(value)

    def kinds_since(self, start: int) -> list[str]:
        return [kind for _, kind, _ in self.events[start:]]

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


async def test_tcp_subscriber_resumes_across_a_restart(rig: Rig) -> None:
    """The token is kept across restarts: an SSE client on the TCP listener resumes with
    ``Last-Event-ID`` after the daemon restarted (and gets ``reset`` and a snapshot), with
    the token it read before; it changes only on ``tmuxlocd token --rotate``."""
    port, token = await with_tcp_listener(rig)
    token_file = os.path.join(rig.daemon.dir, "token")
    client = SseClient(f"http://127.0.0.1:{port}/v1/events", token)
    try:
        async with asyncio.timeout(10):
            await client.connected.wait()
        await burst(rig.sock, 5)
        seq = await rig.daemon.sync()
        await wait_until(lambda: client.last_id == seq, 10, "the TCP subscriber to catch up")
        assert client.kinds_since(0)[0] == "snapshot"
        before = len(client.events)
        client.ended.clear()
        # A clean restart, then a crash and a restart: resumed each time.
        for how in ("stop", "kill"):
            await (rig.daemon.stop() if how == "stop" else rig.daemon.kill())
            async with asyncio.timeout(10):
                await client.ended.wait()
            await rig.daemon.start()
            await wait_until(
                lambda: client.connected.is_set() or client.closed_for_good,
                10,
                f"the TCP subscriber to reconnect after a {how}",
            )
            assert not client.closed_for_good, f"refused after a {how}: {client.statuses}"
            await wait_until(
                lambda n=before: len(client.events) >= n + 2,  # type: ignore[misc]
                10,
                f"reset and snapshot after a {how}",
            )
            assert client.kinds_since(before)[:2] == ["reset", "snapshot"], client.events[before:]
            assert not client.closed_for_good, client.statuses
            assert read_text(token_file) == token
            truth = await read_truth(rig.sock)
            assert truth is not None
            snapshot = client.events[before + 1][2]
            panes = snapshot["panes"]
            assert isinstance(panes, list)
            assert {p["pane"]["id"] for p in panes} == set(truth.panes)
            await burst(rig.sock, 3)
            seq = await rig.daemon.sync()
            await wait_until(
                lambda s=seq: client.last_id == s,  # type: ignore[misc]
                10,
                "events after the resume",
            )
            before = len(client.events)
            client.ended.clear()
        # Rotated on request: the holder of the old token is refused (and, as an
        # EventSource, closes for good), the new token is let in.
        new = await rotate_token(rig.daemon.sock)
        assert new != token
        await rig.daemon.stop()
        await rig.daemon.start()
        async with asyncio.timeout(10):
            await client.ended.wait()
        await wait_until(lambda: client.closed_for_good, 10, "the old token to be refused")
        assert client.statuses[-1] == 401
    finally:
        await client.close()
    fresh = SseClient(f"http://127.0.0.1:{port}/v1/events", new)
    try:
        async with asyncio.timeout(10):
            await fresh.connected.wait()
    finally:
        await fresh.close()
    await rig.stream.open()
    await rig.healthy()


NODE = shutil.which("node")
NODE_MODULES = os.environ.get("TMUXLOCD_TEST_NODE_MODULES", "")
EVENTSOURCE_CLIENT = str(Path(__file__).parent / "node" / "eventsource_client.mjs")


async def rotate_token(daemon_socket: str) -> str:
    """``tmuxlocd token --rotate`` for the daemon on ``daemon_socket``; the new token."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tmuxlocd",
        "token",
        "--rotate",
        env={**os.environ, "TMUXLOCD_SOCKET": daemon_socket},
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await proc.communicate()
    assert proc.returncode == 0
    return out.decode().strip()


async def with_tcp_listener(rig: Rig) -> tuple[int, str]:
    """Restart the rig's daemon with a TCP listener too; its port and token."""
    port = free_tcp_port()
    await rig.stream.close()
    await rig.daemon.stop()
    rig.daemon.extra = [*rig.daemon.extra, "--listen", f"tcp:127.0.0.1:{port}"]
    await rig.daemon.start()
    await rig.stream.open()
    return port, read_text(os.path.join(rig.daemon.dir, "token"))


@pytest.mark.skipif(
    NODE is None or not os.path.isdir(os.path.join(NODE_MODULES, "eventsource")),
    reason="needs node and the npm package eventsource in $TMUXLOCD_TEST_NODE_MODULES "
    "(.ci/run installs it when npm is there)",
)
async def test_npm_eventsource_resumes_across_a_restart(rig: Rig) -> None:
    """The real thing: npm's ``eventsource`` on the TCP listener, with the bearer token,
    across a daemon restart (it resumes with ``Last-Event-ID`` by itself) and a rotation of
    the token (401: it closes for good)."""
    assert NODE is not None
    port, token = await with_tcp_listener(rig)
    proc = await asyncio.create_subprocess_exec(
        NODE,
        EVENTSOURCE_CLIENT,
        f"http://127.0.0.1:{port}/v1/events",
        env={
            **os.environ,
            "TMUXLOCD_TEST_TOKEN": token,
            "TMUXLOCD_TEST_NODE_MODULES": NODE_MODULES,
        },
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    seen: list[dict[str, object]] = []

    async def read() -> None:
        assert proc.stdout is not None
        async for line in proc.stdout:
            seen.append(json.loads(line))

    reader = asyncio.create_task(read())

    def events(start: int = 0) -> list[tuple[object, object]]:
        return [(e["type"], e["id"]) for e in seen[start:] if e["kind"] == "event"]

    def closed_for_good() -> bool:
        return any(e["kind"] == "error" and e["readyState"] == 2 for e in seen)

    try:
        await wait_until(lambda: bool(events()), 15, "the first event")
        assert events()[0][0] == "snapshot"
        await burst(rig.sock, 4)
        seq = await rig.daemon.sync()
        await wait_until(lambda: events()[-1][1] == seq, 10, "the events of the burst")
        mark = len(seen)
        await rig.daemon.stop()
        await rig.daemon.start()
        # EventSource waits its reconnection time (3 s by default) before resuming.
        await wait_until(
            lambda: len(events(mark)) >= 2 or closed_for_good(),
            20,
            "eventsource to resume after the restart",
        )
        assert not closed_for_good(), seen[mark:]
        assert [t for t, _ in events(mark)[:2]] == ["reset", "snapshot"], seen[mark:]
        await rotate_token(rig.daemon.sock)
        await rig.daemon.stop()
        await rig.daemon.start()
        await wait_until(closed_for_good, 20, "eventsource to be refused with the old token")
        refused = [e for e in seen if e["kind"] == "error" and e["readyState"] == 2]
        assert refused[0]["code"] == 401, refused
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            async with asyncio.timeout(10):
                await proc.wait()
        except TimeoutError:
            proc.kill()
            await proc.wait()
        await reader
    await rig.stream.open()
    await rig.healthy()


async def test_sigterm_under_load(rig: Rig) -> None:
    """SIGTERM with 300 streams open (100 of them not reading) and tmux busy: the daemon
    stops, every step of it inside its budget (SPEC §6: 2 s, past which the daemon abandons
    what is left with "stop took too long"), and removes its socket, its hooks and its tmux
    clients.  How long it took is printed."""
    from tmuxlocd.daemon.observer import HOOK_INDEX

    raise_nofile(4096)
    stuck = [stuck_stream(rig.daemon.sock) for _ in range(100)]
    readers = [LightReader(*await raw_stream(rig.daemon.sock)) for _ in range(200)]
    busy = asyncio.create_task(burst(rig.sock, 60))
    for i in range(30):
        await tmux_ok(rig.sock, "rename-window", "-t", "A:0", f"load{i}")
    hooks = await tmux_ok(rig.sock, "show-hooks", "-gw")
    assert f"[{HOOK_INDEX}]" in hooks
    proc = rig.daemon.proc
    assert proc is not None
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    async with asyncio.timeout(10):
        status = await proc.wait()
    took = time.monotonic() - t0
    await busy
    assert status == 0, rig.daemon.log_tail()
    assert "stop took too long" not in rig.daemon.log_tail(), rig.daemon.log_tail()
    print(f"\nstop under load: {took:.3f} s until the process exited")
    assert rig.daemon.sock not in socket_files(rig.daemon.dir), "socket file left behind"
    assert f"[{HOOK_INDEX}]" not in await tmux_ok(rig.sock, "show-hooks", "-gw")
    assert f"[{HOOK_INDEX}]" not in await tmux_ok(rig.sock, "show-hooks", "-g")
    assert await rig.control_clients() == []
    await wait_until(lambda: rig.waiters() == [], 5, "the hook waiter to go")
    # Every stream was ended (EOF), the readers' as well as the stuck ones'.
    async with asyncio.timeout(10):
        for lr in readers:
            await lr.task
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(10):
        for sock_ in stuck:
            while await loop.sock_recv(sock_, 1 << 20):
                pass
            sock_.close()
    for lr in readers:
        await lr.close()
    # Started again for the fixture's own checks.
    await rig.daemon.start()
    await rig.stream.open()
    await rig.healthy()


async def test_notify_flood(rig: Rig) -> None:
    """Hooks call POST /v1/notify; 3,000 of them at once are coalesced, not queued."""

    async def notify_many(n: int) -> list[int]:
        statuses = []
        for i in range(n):
            status, _ = await rig.daemon.request(
                "POST",
                "/v1/notify",
                json={"hook": "window-layout-changed", "server": rig.sock, "target": f"@{i % 5}"},
            )
            statuses.append(status)
        return statuses

    task = asyncio.create_task(burst(rig.sock, 40))
    results = await asyncio.gather(*(notify_many(100) for _ in range(30)))
    await task
    assert {s for r in results for s in r} == {202}
    await rig.healthy()


async def test_tmux_segfault_with_a_control_client(rig: Rig) -> None:
    """tmux 3.3a segfaults when a session whose current window is linked into it twice loses
    that window, if any control-mode client is attached (control_notify_session_window_changed
    reads the destroyed session's current window).  Without a control client it survives: the
    daemon's mere presence exposes this.  The daemon must report the server down, and come
    back right when it is started again.  (On a tmux without the bug: just right.)"""
    await tmux_ok(rig.sock, "new-session", "-d", "-s", "C")
    await tmux_ok(rig.sock, "link-window", "-d", "-s", "C:0", "-t", "C:1")
    await rig.check()
    await tmux(rig.sock, "kill-window", "-t", "C:0")
    if await read_truth(rig.sock) is None:
        await wait_until(lambda: rig.sock in rig.stream.down, 10, "server.down on the stream")
        assert rig.stream.locations(rig.sock) == {}
        await rig.server.start("A")
    await rig.healthy()


async def test_safety_net_after_every_reattach(rig: Rig) -> None:
    """The digest (the only thing that catches a silent respawn-pane) works after each of
    several re-attachments.  tmux 3.3a may run a new control client's first commands before
    its attach completes, and then refuses the subscription ("no current client")."""
    for round_ in range(6):
        ((pid, _),) = await rig.control_clients()
        os.kill(pid, signal.SIGKILL)

        async def replaced(old: int = pid) -> bool:
            clients = await rig.control_clients()
            return len(clients) == 1 and clients[0][0] != old

        await wait_until(replaced, 10, "a new control client")
        target = "B:0.0" if round_ % 2 else "A:0.0"
        await tmux_ok(rig.sock, "respawn-pane", "-k", "-t", target)
        truth = await read_truth(rig.sock)
        assert truth is not None
        pane = (
            await tmux_ok(rig.sock, "display-message", "-p", "-t", target, "#{pane_id}")
        ).strip()
        new_pid = truth.panes[pane][4]

        async def seen(pane: str = pane, new_pid: int = new_pid) -> bool:
            status, body = await rig.daemon.get(f"/v1/panes/{pane[1:]}")
            return status == 200 and body["pane"]["pid"] == new_pid

        await wait_until(seen, 4, f"the respawn of {pane} seen without /v1/sync (round {round_})")
    await rig.healthy()


# A tmux defect (every release from 3.2a to 3.6b): a session with one window linked at two
# indexes, both on its last-window stack, renumbered (``move-window -r``, or
# ``renumber-windows on`` and a window closing): ``session_renumber_windows`` inserts the one
# new winlink into the stack twice, making a cycle, and the next ``session_destroy`` (the
# session killed, or the server exiting) loops for ever at 100% CPU, answering nothing.
SPIN = (
    "new-window",
    "-d",
    "-t",
    "S:1",
    ";",
    "link-window",
    "-d",
    "-s",
    "S:1",
    "-t",
    "S:2",
    ";",
    "select-window",
    "-t",
    "S:1",
    ";",
    "select-window",
    "-t",
    "S:2",
    ";",
    "select-window",
    "-t",
    "S:0",
    ";",
    "move-window",
    "-r",
    "-t",
    "S",
)


async def test_tmux_spinning_in_session_destroy(rig: Rig) -> None:
    """A tmux server that spins for ever: the daemon keeps answering from its model, its
    barrier gives up instead of waiting on it, and nothing is left behind (the fixture
    kills the server by the pid it recorded at start, whatever state it is in)."""
    await tmux_ok(rig.sock, "new-session", "-d", "-s", "S")
    await tmux_ok(rig.sock, *SPIN)
    await rig.check()
    try:
        await tmux(rig.sock, "kill-session", "-t", "S", timeout=3)
    except TimeoutError:
        spinning = True
    else:
        spinning = False  # a tmux without the defect
    if spinning:
        # Deadlines here catch a daemon that waits on tmux; they measure nothing.
        for _ in range(3):
            async with asyncio.timeout(5):
                health = await rig.daemon.health()
                await rig.daemon.tree()
            assert rig.health_of(health)["running"] is True
        async with asyncio.timeout(20):
            status, body = await rig.daemon.request("POST", "/v1/sync")
        # never a 200: nothing was re-read
        assert status == 503 and body["error"]["code"] == "sync_failed", (status, body)
        health = await rig.daemon.health()
        assert health["status"] == "degraded", health
        assert rig.health_of(health)["observer"] == "error"
        assert "no answer within" in str(rig.health_of(health)["last_error"])
        rig.server.sigkill()  # as a user would
        await wait_until(lambda: rig.sock in rig.stream.down, 10, "server.down on the stream")
        await rig.server.start("A")
    await rig.healthy()
