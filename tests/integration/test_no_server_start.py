"""The daemon never starts a tmux server (SPEC §1), whatever a script does to the one it
watches, and leaves no socket file that was not there.

The window: the observer probes a server (plain clients), then attaches its control client
(``attach-session``, a command that starts a server when none answers).  A script's
``kill-server`` and unlink of the socket in between (libtmux's teardown does both) once
brought a server back on a fresh socket file, which stayed when that server exited.  Here
the race is driven, not waited for: the kill runs inside the observer, right after its
probe answered and right before its attach.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from tests.tmuxtest import TMUX, TmuxServer, wait_until
from tmuxlocd.daemon.config import Config
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.daemon.observer import ServerObserver, Watcher

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
    pytest.mark.timeout(60),
]


def processes_naming(path: str) -> list[int]:
    """Processes whose command line names ``path`` anywhere: a tmux client, or a server
    (which rewrites its title to ``tmux: server (<path>)``)."""
    want = os.fsencode(path)
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if want in cmdline:
            found.append(int(entry.name))
    return found


def traces(path: str) -> list[str]:
    """What a tmux client started on ``path`` after its server went would leave."""
    found = [f"the socket file {path}"] if os.path.lexists(path) else []
    return found + [f"process {pid}" for pid in processes_naming(path)]


def kill_and_unlink(srv: TmuxServer) -> None:
    """What a script's teardown does: ``kill-server``, then remove the socket file."""
    srv.run("kill-server")
    Path(srv.socket_path).unlink(missing_ok=True)


async def test_a_server_killed_between_probe_and_attach_is_not_started_again(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    srv = TmuxServer()
    hub = Hub()
    watcher = Watcher(hub, Config(socket_path=(srv.socket_path,)))
    killed = asyncio.Event()
    after_kill: list[bool] = []  # one entry per attempt that began after the kill
    probe = ServerObserver._probe_sessions
    attempt = ServerObserver._attempt

    async def probe_then_kill(self: ServerObserver) -> list[tuple[str, int]] | None:
        sessions = await probe(self)
        if sessions and not killed.is_set():
            kill_and_unlink(srv)  # between the probe's answer and the attach
            killed.set()
        return sessions

    async def counted(self: ServerObserver) -> bool:
        began_after = killed.is_set()
        try:
            return await attempt(self)
        finally:
            after_kill.append(began_after)

    monkeypatch.setattr(ServerObserver, "_probe_sessions", probe_then_kill)
    monkeypatch.setattr(ServerObserver, "_attempt", counted)
    caplog.set_level(logging.INFO, logger="tmuxlocd.daemon.observer")
    try:
        srv.start("A")
        await watcher.start()
        await wait_until(killed.is_set, 10, "the kill between the probe and the attach")
        # The attempt that attached after the kill ended, and two more after it (each probes
        # the path and finds nothing): long enough for a server started by any of them to
        # have made its socket.
        await wait_until(lambda: len(after_kill) >= 3, 20, "three attempts after the kill")
        observer = watcher.observers[srv.socket_path]
        assert traces(srv.socket_path) == []
        # Reported as a server that went away, not as a failure to read it.
        assert hub.server(srv.socket_path).observer == "down"
        assert not hub.server(srv.socket_path).state.running
        assert observer.error is None
        assert "cannot read tmux" not in caplog.text
    finally:
        await watcher.stop()
        srv.kill()  # kills a server that the old attach started, if any
