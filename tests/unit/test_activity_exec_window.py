"""A command caught inside exec(): its name is in ``comm`` but its cmdline is still empty.

Measured on Linux 6.x (a child exec()ing ``sleep`` read in a loop): about 1 read in 4 of a
freshly started command sees an empty cmdline with comm already ``sleep``.  A busy answer
read there once said ``busy`` with no command at all.  The host now falls back to comm and
marks the reading pending; the watch reads again a moment later before it tells anyone.

The process reads are scripted here (``proc.read_pane``); the hub, the watch, its timers and
its exit watches are the daemon's own, on processes this test started.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.api.apitest import L1, A, Win, make_state
from tests.tmuxtest import poll
from tmuxlocd.core import activity
from tmuxlocd.core.activity import Activity, Reading
from tmuxlocd.core.procstat import ProcStat, stat_or_none
from tmuxlocd.daemon.activity_watch import PENDING_READS, ActivityWatcher
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.host import proc
from tmuxlocd.host.system import HOST


@pytest.fixture
def front() -> Iterator[int]:
    """A process to stand in front of the pane's terminal (its exit watch must be real)."""
    child = subprocess.Popen(["sleep", "300"])
    # Popen returns once exec() is past its point of no return, which is before the new
    # arguments are in place: the very window this file is about.  Settled first.
    poll(lambda: HOST.cmdline(child.pid) == b"sleep\x00300\x00", 10, "sleep's arguments")
    yield child.pid
    child.kill()
    child.wait()


@pytest.fixture
async def watcher() -> AsyncIterator[tuple[ActivityWatcher, Hub]]:
    hub = Hub()
    # The pane's process is this test's own: alive for the whole test.
    hub.update(
        make_state(
            A,
            sessions={"$1": "work"},
            links=[("$1", "@5", 1, True)],
            windows=[Win("@5", L1, pids={"%7": os.getpid()})],
        )
    )
    watch = ActivityWatcher(hub, None, period=0.02)
    yield watch, hub
    await watch.close()


def script(monkeypatch: pytest.MonkeyPatch, readings: list[Reading]) -> list[Reading]:
    """``proc.read_pane`` answers ``readings`` in turn, then the last one for ever."""
    told: list[Reading] = []

    def read_pane(pid: int) -> Reading:
        reading = readings[min(len(told), len(readings) - 1)]
        told.append(reading)
        return reading

    monkeypatch.setattr(proc, "read_pane", read_pane)
    return told


IDLE = Reading(activity=Activity(command="bash", busy=False), foreground=None)


def busy(command: str, fg: int, *, pending: bool = False) -> Reading:
    return Reading(activity=Activity(command=command, busy=True), foreground=fg, pending=pending)


async def test_a_busy_answer_waits_for_the_arguments(
    watcher: tuple[ActivityWatcher, Hub], front: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    watch, hub = watcher
    long_name = "a-command-named-long"  # comm keeps 15 characters: "a-command-named"
    told = script(
        monkeypatch,
        [IDLE, busy(long_name[:15], front, pending=True), busy(long_name, front)],
    )
    loc = hub.locations_of(A)["%7"]
    result = await watch.wait(loc, "busy", 5.0)
    assert result.outcome == "busy"
    assert result.activity == Activity(command=long_name, busy=True)
    assert [r.pending for r in told[:3]] == [False, True, False]


async def test_a_command_that_stays_pending_is_told_by_its_comm(
    watcher: tuple[ActivityWatcher, Hub], front: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never held for ever: after PENDING_READS re-reads, comm's name is what is known."""
    watch, hub = watcher
    told = script(monkeypatch, [IDLE, busy("sleep", front, pending=True)])
    loc = hub.locations_of(A)["%7"]
    result = await watch.wait(loc, "busy", 5.0)
    assert result.outcome == "busy" and result.activity == Activity(command="sleep", busy=True)
    # The first read (idle), the pending one, its re-reads; the tick may have read between.
    assert len([r for r in told if r.pending]) >= PENDING_READS + 1


PANE = stat_or_none(
    "19796 (bash) S 19795 19796 19796 34818 19850 4194304 421 2821 0 0 0 0 2 1 20 0 1 0 "
    "1285412 4702208 852 18446744073709551615 1 1 0 0 0 0 65536 3686404 1266761467 1 0 0 17 1"
)


def front_stat(comm: str, ppid: int = 19796) -> ProcStat:
    """The foreground leader's record (pid 19850, in its own group, the pane's terminal)."""
    line = (
        f"19850 ({comm}) S {ppid} 19850 19796 34818 19850 4194304 0 0 0 0 0 0 0 0 20 0 1 0 "
        "1285500 4702208 852 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1"
    )
    stat = stat_or_none(line)
    assert stat is not None
    return stat


@pytest.mark.parametrize(
    ("cmdline", "comm", "ppid", "pending", "command"),
    [
        # The three states of a start, as read with bash in a tmux pane:
        (b"bash\0", "bash", 19796, True, "bash"),  # forked, not yet exec()ed
        (b"bash\0", "sleep", 19796, True, "bash"),  # inside exec(): comm renamed
        (b"", "sleep", 19796, True, "sleep"),  # inside exec(): no arguments yet
        # Settled:
        (b"sleep\x002\0", "sleep", 19796, False, "sleep"),
        (b"/usr/bin/python3\0-c\0", "python3", 19796, False, "python3"),
        (b"-zsh\0", "zsh", 19796, False, "zsh"),
        # comm keeps 15 characters of a longer name.
        (b"a-command-named-long\0", "a-command-named", 19796, False, "a-command-named-long"),
        # A shell's subshell of a job, not the pane's child: not the fork of a start.
        (b"bash\0", "bash", 4000, False, "bash"),
    ],
)
def test_decide_tells_a_start_not_yet_settled(
    cmdline: bytes, comm: str, ppid: int, pending: bool, command: str
) -> None:
    reading = activity.decide(19796, PANE, cmdline, comm, front_stat(comm, ppid))
    assert reading is not None and reading.foreground == 19850
    assert reading.pending is pending
    assert reading.activity == Activity(command=command, busy=True)


def test_decide_without_the_leaders_record() -> None:
    mid_exec = activity.decide(19796, PANE, b"", "sleep")
    assert mid_exec is not None and mid_exec.pending
    assert mid_exec.activity == Activity(command="sleep", busy=True)
    done = activity.decide(19796, PANE, b"sleep\x002\0", None)
    assert done is not None and not done.pending
    # Unreadable (None) is not an exec() caught half-way.
    unread = activity.decide(19796, PANE, None, None)
    assert unread is not None and not unread.pending


def test_the_host_gives_comm_for_a_process_inside_exec(
    front: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``proc.read_pane`` on a real process in front of a (stand-in) pane: settled, then
    with its cmdline read empty, answered with its comm, pending."""
    if HOST.comm_rule:
        pytest.skip("this host names a command by comm alone (macOS's rule): no cmdline read")
    own = HOST.record(os.getpid())
    assert own is not None
    # This process's record, with the terminal's foreground group moved to ``front``.
    in_front = own._replace(tpgid=front)
    real_record = HOST.record

    def record(pid: int) -> object:
        return in_front if pid == os.getpid() else real_record(pid)

    monkeypatch.setattr(HOST, "record", record)
    settled = proc.read_pane(os.getpid())
    assert settled is not None and not settled.pending and settled.foreground == front
    assert settled.activity == Activity(command="sleep", busy=True)
    monkeypatch.setattr(HOST, "cmdline", lambda pid: b"")
    reading = proc.read_pane(os.getpid())
    assert reading is not None and reading.pending and reading.foreground == front
    assert reading.activity == Activity(command="sleep", busy=True)
