"""What a ``kill -9`` of the daemon leaves in tmux, and who removes it.

A daemon killed outright cannot remove its hooks (``window-layout-changed[7741]`` and
``pane-died[7741]``).  Its tmux clients go with it: the control client's stdin closes with the
daemon, and tmux detaches it; the kernel ends the others, the 3.3 hook waiter (an unattached
``tmux wait-for`` client that waits in the server, not on us) first among them
(tmuxlocd.host.lifeline).  The hooks stay until the next daemon's start, which replaces them at
the same index; on 3.4+ they are a failing ``display-message`` to a client that is gone, which
shows nothing to anyone.  Where the system cannot tie a child's life to the daemon's, a waiter
left blocked exits when its channel is signalled next: the next daemon's start does that.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from tests.daemontest import PYTHON, Daemon, Rig
from tests.tmuxtest import TMUX, poll, start_time
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


def tmux_children(pid: int) -> dict[int, int]:
    """The tmux processes ``pid`` started and that still run (pid -> start time)."""
    found: dict[int, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            try:
                argv0 = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            started = start_time(int(child))
            if os.path.basename(argv0) == b"tmux" and started is not None:
                found[int(child)] = started
    return found


def still_running(processes: dict[int, int]) -> list[int]:
    return sorted(pid for pid, started in processes.items() if start_time(pid) == started)


def test_kill_9_takes_the_daemons_clients_along_and_leaves_the_hook(rig: Rig) -> None:
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

    # The clients go by themselves, with no change in tmux to wake anything; the hook stays.
    poll(lambda: control_clients(rig) == [], 10, "the control client to go")
    poll(lambda: waiters(rig.tmux.socket_path) == [], 10, "the waiter to go with its daemon")
    assert len(our_hooks(rig)) == len(HOOKS)
    if message_hooks:
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


def test_no_client_of_a_killed_daemon_or_of_the_next_outlives_its_clean_stop(rig: Rig) -> None:
    """Counted by the pids each daemon started (read from /proc before it went), by tmux's
    own list of clients, and by the waiters naming the server."""
    rig.start_tmux()
    rig.tmux.run("new-session", "-d", "-s", "other")
    first = Daemon(rig).wait_ready()
    poll(lambda: len(control_clients(rig)) == 1, 10, "the first daemon's control client")
    if "display-message" not in "".join(our_hooks(rig)):
        poll(lambda: len(waiters(rig.tmux.socket_path)) == 1, 10, "its hook waiter (3.3)")
    started = tmux_children(first.proc.pid)
    assert started, "the first daemon runs no tmux client"
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait()
    poll(lambda: still_running(started) == [], 10, "the killed daemon's tmux clients to end")

    second = Daemon(rig).wait_ready()
    poll(lambda: len(control_clients(rig)) == 1, 10, "the second daemon's control client")
    started.update(tmux_children(second.proc.pid))
    assert second.stop() == 0, second.logs()
    poll(
        lambda: (
            still_running(started) == []
            and control_clients(rig) == []
            and waiters(rig.tmux.socket_path) == []
        ),
        10,
        "no tmux client of either daemon",
    )


# A daemon as on a system where a child's life cannot be tied to it (host.lifeline).
UNTIED = (
    "import sys, tmuxlocd.host.lifeline as lifeline; lifeline._setpriv = lambda: None; "
    "from tmuxlocd.clients.cli import main; sys.exit(main(sys.argv[1:]))"
)


def untied_daemon(rig: Rig) -> Daemon:
    argv = [
        PYTHON, "-c", UNTIED, "serve", "-S", rig.tmux.socket_path,
        "--listen", f"unix:{rig.daemon_socket}", "--log-level", "debug",
    ]  # fmt: skip
    return Daemon.from_argv(rig, argv, socket=rig.daemon_socket, env=rig.env())


def test_a_waiter_left_blocked_is_woken_by_the_next_daemon(rig: Rig) -> None:
    rig.start_tmux()
    rig.tmux.run("new-session", "-d", "-s", "other")
    daemon = untied_daemon(rig).wait_ready()
    poll(lambda: len(our_hooks(rig)) == len(HOOKS), 10, "the daemon's hook")
    if "display-message" in our_hooks(rig)[0]:
        daemon.stop()
        pytest.skip("tmux 3.4+ pushes hook messages to the control client: no waiter")
    poll(lambda: len(waiters(rig.tmux.socket_path)) == 1, 10, "the hook waiter")
    (stale,) = waiters(rig.tmux.socket_path)
    os.kill(daemon.proc.pid, signal.SIGKILL)
    daemon.proc.wait()
    # Not tied to the daemon: it waits on in the server until something signals.
    assert stale in waiters(rig.tmux.socket_path)
    again = Daemon(rig).wait_ready()
    try:
        poll(lambda: stale not in waiters(rig.tmux.socket_path), 10, "the stale waiter to go")
        poll(lambda: len(waiters(rig.tmux.socket_path)) == 1, 10, "one waiter, the new one")
    finally:
        again.stop()
