"""What a ``kill -9`` of the daemon leaves in tmux, and who removes it.

A daemon killed outright cannot remove its hooks (``window-layout-changed[7741]`` and
``pane-died[7741]``) or, on tmux 3.3, its hook waiter (an unattached ``tmux wait-for``
client). Its control client goes by itself: its stdin closes with the daemon, and tmux
detaches it. The waiter exits at the first layout change in a session other than the one the
daemon was attached to (the hook wakes it). The hook stays until the next daemon's start,
which replaces it at the same index and wakes any waiter still blocked; on 3.4+ it is a
failing ``display-message`` to a client that is gone, which shows nothing to anyone.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.daemontest import Daemon, Rig
from tests.tmuxtest import TMUX, poll
from tmuxlocd.daemon.observer import HOOK_INDEX, HOOKS

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
    pytest.mark.timeout(60),
]


def waiters(socket_path: str) -> list[int]:
    """The pids of hook waiters (``tmux -S <socket> wait-for ...``) on this server."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if socket_path.encode() in argv and any(a.startswith(b"wait") for a in argv):
            found.append(int(entry.name))
    return found


def our_hooks(rig: Rig) -> list[str]:
    return [
        line for line in rig.tmux.run("show-hooks", "-gw").splitlines() if f"[{HOOK_INDEX}]" in line
    ]


def control_clients(rig: Rig) -> list[str]:
    out = rig.tmux.run("list-clients", "-F", "#{client_name} #{client_control_mode}")
    return [line.split()[0] for line in out.splitlines() if line.endswith(" 1")]


def test_kill_9_leftovers_go_with_the_first_change_or_the_next_daemon(rig: Rig) -> None:
    rig.start_tmux()
    rig.tmux.run("new-session", "-d", "-s", "other")
    daemon = Daemon(rig).wait_ready()
    poll(
        lambda: len(our_hooks(rig)) == len(HOOKS) and len(control_clients(rig)) == 1,
        10,
        "the daemon's hook and control client",
    )
    old_client = control_clients(rig)[0]
    message_hooks = "display-message" in our_hooks(rig)[0]
    if not message_hooks:
        poll(lambda: len(waiters(rig.tmux.socket_path)) == 1, 10, "the hook waiter (3.3)")
    os.kill(daemon.proc.pid, signal.SIGKILL)
    daemon.proc.wait()

    # The control client goes by itself; the hook stays.
    poll(lambda: control_clients(rig) == [], 10, "the control client to go")
    assert len(our_hooks(rig)) == len(HOOKS)
    if not message_hooks:
        # the waiter stays until the first layout change elsewhere, then exits
        assert len(waiters(rig.tmux.socket_path)) == 1
        rig.tmux.run("split-window", "-d", "-t", "other:")
        poll(lambda: waiters(rig.tmux.socket_path) == [], 10, "the waiter to exit")
    else:
        # a hook firing for a client that is gone fails quietly: nothing in the messages
        rig.tmux.run("split-window", "-d", "-t", "other:")
        # (3.4 and 3.5 let only a client read the message log; 3.6 lets anyone)
        messages = rig.tmux.run("show-messages", check=False)
        assert "can't find client" not in messages

    # The next daemon replaces the hook at the same index (one entry, its own client).
    again = Daemon(rig).wait_ready()
    try:
        poll(lambda: len(control_clients(rig)) == 1, 10, "the new control client")
        new_client = control_clients(rig)[0]
        poll(
            lambda: (
                len(our_hooks(rig)) == len(HOOKS)
                and (not message_hooks or new_client in our_hooks(rig)[0])
            ),
            10,
            "its hook",
        )
        assert message_hooks or old_client not in our_hooks(rig)[0]
        if not message_hooks:
            poll(lambda: len(waiters(rig.tmux.socket_path)) == 1, 10, "one waiter, its own")
    finally:
        again.stop()
    poll(
        lambda: our_hooks(rig) == [] and waiters(rig.tmux.socket_path) == [],
        10,
        "a clean stop to remove everything",
    )


def test_a_waiter_left_blocked_is_woken_by_the_next_daemon(rig: Rig) -> None:
    rig.start_tmux()
    rig.tmux.run("new-session", "-d", "-s", "other")
    daemon = Daemon(rig).wait_ready()
    poll(lambda: len(our_hooks(rig)) == len(HOOKS), 10, "the daemon's hook")
    if "display-message" in our_hooks(rig)[0]:
        daemon.stop()
        pytest.skip("tmux 3.4+ pushes hook messages to the control client: no waiter")
    poll(lambda: len(waiters(rig.tmux.socket_path)) == 1, 10, "the hook waiter")
    (stale,) = waiters(rig.tmux.socket_path)
    os.kill(daemon.proc.pid, signal.SIGKILL)
    daemon.proc.wait()
    again = Daemon(rig).wait_ready()
    try:
        poll(lambda: stale not in waiters(rig.tmux.socket_path), 10, "the stale waiter to go")
        poll(lambda: len(waiters(rig.tmux.socket_path)) == 1, 10, "one waiter, the new one")
    finally:
        again.stop()
