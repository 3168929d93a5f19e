"""The two hosts (tmuxlocd.host.system) against each other and against POSIX: the same facts
of real processes, ttys and sockets from the ``linux`` host's /proc and the ``portable``
host's macOS-shaped reads; the exit watch of each (a pidfd each; one queue for all)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tmuxlocd.host.system import Host, LinuxHost, PortableHost, QueueExits, choose


@pytest.fixture(params=["linux", "portable"])
def host(request: pytest.FixtureRequest) -> Host:
    return choose(request.param, "linux")


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    """A process that runs until its stdin closes, in a session of its own."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"],
        stdin=subprocess.PIPE,
        start_new_session=True,
        env={**os.environ, "TMUX_PANE": "%77"},
    )
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_choose() -> None:
    assert choose("", "linux").name == "linux"
    assert choose("portable", "linux").name == "portable"
    with pytest.raises(ValueError, match="TMUXLOCD_HOST"):
        choose("bsd", "linux")
    with pytest.raises(ValueError):
        choose("linux", "darwin")  # /proc is Linux's


def test_records_agree_with_posix(host: Host, child: subprocess.Popen[bytes]) -> None:
    me = host.record(os.getpid())
    assert me is not None
    assert (me.pid, me.ppid, me.pgrp, me.session) == (
        os.getpid(),
        os.getppid(),
        os.getpgrp(),
        os.getsid(0),
    )
    theirs = host.record(child.pid)
    assert theirs is not None
    assert (theirs.ppid, theirs.session, theirs.tty_nr) == (os.getpid(), child.pid, 0)
    assert theirs.comm.startswith("python")
    assert host.record(2**22 + 7) is None


def test_both_hosts_say_the_same(child: subprocess.Popen[bytes]) -> None:
    linux, portable = LinuxHost(), PortableHost()
    for pid in (os.getpid(), child.pid):
        a, b = linux.record(pid), portable.record(pid)
        assert a is not None and b is not None
        # CPU times are not in a kinfo_proc; everything identity and activity read is.
        assert a._replace(utime=0, stime=0) == b
        assert linux.cmdline(pid) == portable.cmdline(pid)
    assert b"TMUX_PANE=%77\0" in (portable.environ(child.pid) or b"")
    assert linux.environ(child.pid) == portable.environ(child.pid)


def test_tty_path(host: Host) -> None:
    main, replica = os.openpty()
    try:
        dev = os.fstat(replica).st_rdev
        assert host.tty_path(os.getpid(), dev) == os.ttyname(replica)
    finally:
        os.close(main)
        os.close(replica)


def test_peer(host: Host) -> None:
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert host.peer(a) == (os.getpid(), os.getuid(), os.getgid())
    assert host.peer(object()) is None


async def wait_ended(ended: asyncio.Event) -> None:
    await asyncio.wait_for(ended.wait(), 10)


async def test_an_exit_is_told_once(host: Host, child: subprocess.Popen[bytes]) -> None:
    ended = asyncio.Event()
    calls: list[int] = []

    def told() -> None:
        calls.append(child.pid)
        ended.set()

    watch = host.watch_exit(child.pid, told)
    assert watch is not None
    assert not ended.is_set()
    assert child.stdin is not None
    child.stdin.close()  # the child reads EOF and ends
    await wait_ended(ended)
    child.wait()
    watch.cancel()  # harmless after the call
    assert calls == [child.pid]


async def test_a_cancelled_watch_is_not_told(host: Host, child: subprocess.Popen[bytes]) -> None:
    ended = asyncio.Event()
    quiet = host.watch_exit(child.pid, lambda: pytest.fail("a cancelled watch was told"))
    loud = host.watch_exit(child.pid, ended.set)  # a second watch of the same process
    assert quiet is not None and loud is not None
    quiet.cancel()
    assert child.stdin is not None
    child.stdin.close()
    await wait_ended(ended)


async def test_a_process_gone_is_not_watched(host: Host) -> None:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await proc.wait()  # reaped: no such process any more
    assert host.watch_exit(proc.pid, lambda: None) is None


async def test_the_queue_is_in_the_loop_only_while_a_pid_is_watched(
    child: subprocess.Popen[bytes],
) -> None:
    from tmuxlocd.host.linux import EpollQueue

    made: list[EpollQueue] = []

    def make() -> EpollQueue:
        made.append(EpollQueue())
        return made[-1]

    exits = QueueExits(make)
    first = exits.watch(child.pid, lambda: None)
    second = exits.watch(os.getpid(), lambda: None)
    assert first is not None and second is not None and len(made) == 1
    fd = made[0].fileno()
    first.cancel()
    os.fstat(fd)  # still open: one pid left
    second.cancel()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed with its last watch
    again = exits.watch(child.pid, lambda: None)
    assert again is not None and len(made) == 2
    again.cancel()
