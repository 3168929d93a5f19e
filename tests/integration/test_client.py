"""The typed clients against a real daemon: every call, errors, ``accept_ancestor``, and the
change stream surviving a cut connection and a daemon restart."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tests.daemontest import PYTHON, Daemon, Rig, private_rig, running_daemon
from tests.tmuxtest import TMUX, poll
from tmuxlocd.clients.client import (
    AsyncClient,
    Client,
    ClientError,
    DaemonUnavailable,
    DirectionNeighbors,
    PaneList,
    PaneNeighbors,
    PaneSummaryList,
)
from tmuxlocd.core.events import Event, PaneAdded, PaneRemoved, Reset, SnapshotEvent

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with private_rig(split=True) as rig:  # %0 left, %1 right
        yield rig


@pytest.fixture(scope="module")
def daemon(rig: Rig) -> Iterator[Daemon]:
    with running_daemon(rig) as d:
        yield d


class Proxy:
    """A Unix-socket relay in front of the daemon whose connections can be cut at will, and
    which keeps the head of every request it relayed."""

    def __init__(self, listen: str, target: str) -> None:
        self.target = target
        self.requests: list[bytes] = []
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.srv.bind(listen)
        self.srv.listen(16)
        self.path = listen
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self.srv.accept()
            except OSError:
                return
            up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            up.connect(self.target)
            with self.lock:
                self.conns += [down, up]
            threading.Thread(target=self._pump, args=(down, up, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        first = record
        try:
            while data := src.recv(65536):
                if first:
                    with self.lock:
                        self.requests.append(data)
                    first = False
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def cut(self) -> None:
        """Drop every relayed connection, as a network hiccup or a proxy restart would."""
        with self.lock:
            conns, self.conns = self.conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        self.srv.close()
        self.cut()


@pytest.fixture
def proxy(rig: Rig, daemon: Daemon, tmp_path: Path) -> Iterator[Proxy]:
    p = Proxy(str(rig.root / f"proxy-{tmp_path.name[-8:]}.sock"), rig.daemon_socket)
    try:
        yield p
    finally:
        p.close()


def last_event_id(request: bytes) -> str | None:
    for line in request.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"last-event-id":
            return value.strip().decode()
    return None


# ----------------------------------------------------------------------------------------------
# Snapshot calls.


def test_sync_client_calls(rig: Rig, daemon: Daemon) -> None:
    with Client(rig.daemon_socket) as c:
        health = c.health()
        assert health.status == "ok"
        assert [s.socket_path for s in health.servers] == [rig.tmux.socket_path]
        loc = c.location("%0")
        assert loc.pane.id == "%0" and loc.neighbors.right == ("%1",)
        # "0" and "%0" are one URL: the daemon answers 304 and the decoded answer is reused.
        assert c.location("0") is loc
        n = c.neighbors(None, "%0")
        assert isinstance(n, PaneNeighbors) and [e.id for e in n.right] == ["%1"]
        d = c.neighbors("left", "%1")
        assert isinstance(d, DirectionNeighbors) and d.direction == "left"
        assert [(e.id, e.index, e.shared) for e in d.panes] == [("%0", 0, 48)]
        full = c.panes("all")
        assert isinstance(full, PaneList) and full.total >= 2
        assert {p.pane.id for p in full.panes} >= {"%0", "%1"}
        summary = c.panes("all", "summary", limit=1)
        assert isinstance(summary, PaneSummaryList)
        assert len(summary.panes) == 1 and summary.truncated is (summary.total > 1)
        tree = c.tree()
        assert tree.servers[0].socket_path == rig.tmux.socket_path
        assert c.sync()
        c.notify(hook="test", server=rig.tmux.socket_path)
        text = c.text("%0", turn=2, neighbors=True)
        assert text is not None and text.startswith("tmux location (turn 2):\n")
        assert text.endswith("right %1\n")


def test_etag_revalidation(rig: Rig, daemon: Daemon) -> None:
    with Client(rig.daemon_socket) as c:
        first = c.location("%1")
        assert "/v1/panes/1" in c._etags
        assert c.location("%1") is first  # 304: the decoded answer is reused
        rig.tmux.run("rename-window", "-t", "@0", "etag")
        c.sync()
        try:
            second = c.location("%1")
            assert second.window.name == "etag" and second is not first
        finally:
            rig.tmux.run("rename-window", "-t", "@0", "main0")
            c.sync()


def test_sync_client_errors(rig: Rig, daemon: Daemon, tmp_path: Path) -> None:
    with Client(rig.daemon_socket) as c:
        with pytest.raises(ClientError) as exc:
            c.location("%999")
        assert (exc.value.status, exc.value.code) == (404, "not_found")
        info = c.where_am_i()  # this test process is in none of the private server's panes
        assert info.inside_tmux is False and info.location is None
        assert info.reason in ("no_controlling_tty", "tty_not_a_pane")
        with pytest.raises(ClientError) as exc:
            c.panes("window")
        assert exc.value.code == "not_in_a_pane"
        assert c.text() is None
        with pytest.raises(ValueError):
            c.location("bogus")
    with Client(str(tmp_path / "none.sock")) as c, pytest.raises(DaemonUnavailable):
        c.where_am_i()


def test_keepalive_survives_an_idle_close(rig: Rig, daemon: Daemon, proxy: Proxy) -> None:
    """A keep-alive connection the far end dropped while idle is reopened transparently."""
    with Client(proxy.path) as c:
        assert c.health().status == "ok"
        proxy.cut()
        assert c.health().status == "ok"
    assert len(proxy.requests) == 2


def test_accept_ancestor_from_a_process_without_tty(rig: Rig, daemon: Daemon) -> None:
    """A process that left its pane's session is placed by its ancestor only when asked."""
    code = (
        "import os, json; os.setsid(); from tmuxlocd.clients.client import Client; "
        "a = Client().where_am_i(); b = Client(accept_ancestor=True).where_am_i(); "
        "print(json.dumps([a.inside_tmux, a.reason, a.caller.ancestor_pane, b.inside_tmux, "
        "b.verified_by, b.location.pane.id if b.location else None]))"
    )
    run = rig.run_in_pane(f'{PYTHON} -c "{code}"')
    assert run.rc == 0, run.err
    assert json.loads(run.out) == [
        False,
        "no_controlling_tty",
        run.pane,
        True,
        "ancestor",
        run.pane,
    ]


async def test_async_client_calls(rig: Rig, daemon: Daemon, tmp_path: Path) -> None:
    async with AsyncClient(rig.daemon_socket) as c:
        assert (await c.health()).status == "ok"
        loc = await c.location("%0")
        assert loc.pane.id == "%0"
        assert await c.location("%0") is loc
        n = await c.neighbors("right", "%0")
        assert [e.id for e in n.panes] == ["%1"]
        assert (await c.panes("all", "summary")).total >= 2
        assert (await c.tree()).servers[0].running is True
        assert await c.sync()
        await c.notify(hook="test")
        assert (await c.where_am_i()).inside_tmux is False
        assert await c.text() is None
        with pytest.raises(ClientError) as exc:
            await c.location("%999")
        assert exc.value.code == "not_found"
    async with AsyncClient(str(tmp_path / "none.sock")) as c:
        with pytest.raises(DaemonUnavailable):
            await c.health()
        with pytest.raises(DaemonUnavailable):
            await anext(aiter(c.events()))


# ----------------------------------------------------------------------------------------------
# Change streams: resuming.


def _split(rig: Rig, target: str) -> str:
    return rig.tmux.run("split-window", "-d", "-t", target, "-P", "-F", "#{pane_id}").strip()


def test_sync_events_resume_after_a_cut(rig: Rig, daemon: Daemon, proxy: Proxy) -> None:
    with Client(proxy.path) as c:
        events = c.events(window="@0")
        first = next(events)
        assert isinstance(first, SnapshotEvent)
        a = _split(rig, "%1")
        seen: list[Event] = []
        while not any(isinstance(e, PaneAdded) and e.location.pane.id == a for e in seen):
            seen.append(next(events))
        before = seen[-1].id
        proxy.cut()
        b = _split(rig, "%1")  # while the stream is down, or just after: either way replayed
        after: list[Event] = []
        while not any(isinstance(e, PaneAdded) and e.location.pane.id == b for e in after):
            after.append(next(events))
        assert not any(isinstance(e, (SnapshotEvent, Reset)) for e in after), after
        assert len(proxy.requests) == 2
        assert last_event_id(proxy.requests[1]) is not None
        assert last_event_id(proxy.requests[0]) is None
        # Resumed exactly after the last event handed out before the cut (or a later one
        # that reached the client before the cut).
        assert _seq(last_event_id(proxy.requests[1])) >= _seq(before)
        events.close()
    for pane in (a, b):
        rig.tmux.run("kill-pane", "-t", pane)


def _seq(event_id: str | None) -> int:
    assert event_id is not None
    return int(event_id.rpartition(":")[2])


async def test_async_events_resume_after_a_cut(rig: Rig, daemon: Daemon, proxy: Proxy) -> None:
    async with AsyncClient(proxy.path) as c:
        events = c.events(window="@0", format="sse")
        first = await anext(events)
        assert isinstance(first, SnapshotEvent)
        a = _split(rig, "%1")
        seen = await _until(events, lambda e: isinstance(e, PaneAdded) and e.location.pane.id == a)
        handed = seen[-1].id
        proxy.cut()
        rig.tmux.run("kill-pane", "-t", a)
        after = await _until(events, lambda e: isinstance(e, PaneRemoved) and e.pane == a)
        assert not any(isinstance(e, (SnapshotEvent, Reset)) for e in after), after
        assert _seq(last_event_id(proxy.requests[-1])) >= _seq(handed)
        await events.aclose()


async def _until(
    events: AsyncIterator[Event], done: Callable[[Event], bool], timeout: float = 10.0
) -> list[Event]:
    out: list[Event] = []
    async with asyncio.timeout(timeout):
        while not out or not done(out[-1]):
            out.append(await anext(events))
    return out


async def test_events_after_a_daemon_restart() -> None:
    """A new daemon instance does not know the old ids: the client hands over reset, then a
    fresh snapshot, without the caller doing anything."""
    rig = Rig()
    daemon: Daemon | None = None
    try:
        rig.start_tmux()
        daemon = Daemon(rig).wait_ready()
        async with AsyncClient(rig.daemon_socket) as c:
            events = c.events(pane="%0")
            first = await anext(events)
            assert isinstance(first, SnapshotEvent)
            old_instance = first.id.rpartition(":")[0]
            assert daemon.stop() == 0, daemon.logs()
            daemon = Daemon(rig)
            got = [await anext(events), await anext(events)]
            assert isinstance(got[0], Reset) and isinstance(got[1], SnapshotEvent)
            assert got[0].id.rpartition(":")[0] != old_instance
            assert [p.pane.id for p in got[1].panes] == ["%0"]
            await events.aclose()
        poll(daemon.healthy, 10, "the new daemon")
    finally:
        if daemon is not None:
            daemon.stop()
        rig.cleanup()
