"""The host: what the operating system says of processes, sockets and their ends (SPEC §2).

Two implementations of one interface (``Host``):

- ``linux`` (the default on Linux, the fastest): /proc read directly, a stat file kept open
  per keep-alive connection, a pidfd per watched process in the event loop, ssh masters by
  their listening sockets and a shared server's clients by sock_diag (tmuxlocd.host.linux,
  tmuxlocd.host.linux_shared);
- ``portable`` (the default elsewhere: macOS): only what macOS offers too.  A process's
  record is a ``kinfo_proc`` and its arguments a ``KERN_PROCARGS2`` block, parsed by
  tmuxlocd.core.darwin; one queue for every exit watch (a kqueue on macOS, an epoll of pidfds
  on Linux: only "register a pid" differs); the session id by ``getsid``; no view of listening
  sockets or socket pairs, so an ssh that may be a connection master and a shared server's
  clients are "cannot tell" (the answer is then no pane, never a guess).

``TMUXLOCD_HOST=portable`` (or ``linux``) forces one: CI runs the whole suite under each, so
that nearly all of what macOS runs is tested on Linux; the leaves that only a Mac runs
(tmuxlocd.host.darwin) are checked there by ``tmuxlocd doctor --host``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Protocol

from tmuxlocd.core.darwin import comm_command, parse_kinfo, parse_lsof_writers, split_procargs2
from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.core.shared import Shared

NAMES = ("linux", "portable")


class Exit(Protocol):
    def cancel(self) -> None: ...


class Queue(Protocol):
    """One descriptor that says when any of its pids ended (kqueue, epoll of pidfds)."""

    def fileno(self) -> int: ...
    def add(self, pid: int) -> bool: ...
    def remove(self, pid: int) -> None: ...
    def ended(self) -> list[int]: ...
    def close(self) -> None: ...


class Leaves(Protocol):
    """What the portable host asks of the system's leaves (tmuxlocd.host.darwin on macOS,
    tmuxlocd.host.linux's macOS-shaped reads on Linux)."""

    TTY_GLOB: tuple[str, str]

    def kinfo(self, pid: int) -> bytes | None: ...
    def procargs2(self, pid: int) -> bytes | None: ...
    def peer(self, sock: object) -> tuple[int, int, int] | None: ...
    def backlog(self) -> int: ...
    def own_processes(self) -> list[int]: ...
    def tty_form(self, dev: int) -> str | None: ...


class Host(Protocol):
    name: str
    comm_rule: bool  # a pane's command is ``command(record)``, not argv[0] (tmux on macOS)

    def peer(self, sock: object) -> tuple[int, int, int] | None:
        """(pid, uid, gid) of a connected Unix socket's peer."""

    def record(self, pid: int) -> ProcStat | None:
        """The process's record (ppid, tty, session, start time, comm, state, pgrp, tpgid);
        None when it is gone or unreadable."""

    def cmdline(self, pid: int) -> bytes:
        """Its argv, NUL-separated (b"" when unreadable)."""

    def environ(self, pid: int) -> bytes | None:
        """Its environment block, NUL-separated (None when unreadable)."""

    def tty_path(self, pid: int, dev: int) -> str | None:
        """A path of the tty device ``dev`` (the controlling tty of ``pid``)."""

    def keep(self, pid: int) -> int | None:
        """A descriptor to re-read the record of ``pid`` from (``linux``), or None: re-read it
        whole each time."""

    def watch_exit(self, pid: int, callback: Callable[[], None]) -> Exit | None:
        """Call ``callback`` once in the running loop when ``pid`` ends; None if it is gone
        already.  ``cancel`` ends the watch (harmless after the call)."""

    def ssh_master(self, pid: int) -> Shared | None:
        """``pid`` (an ssh) as a connection master, or None when it is known not to be one."""

    def clients_of(self, server: int) -> list[int] | None:
        """The processes connected to the Unix sockets ``server`` listens on; None when that
        cannot be told."""

    def writers(self, path: str, pids: Sequence[int] | None) -> list[int]:
        """This user's processes among ``pids`` (None: all) with ``path`` open for writing."""

    def backlog(self) -> int:
        """The system's largest listen backlog (0 when unknown)."""

    def processes(self) -> list[int]:
        """This user's pids now."""

    def command(self, record: ProcStat) -> str:
        """What tmux on this system calls the command of a pane whose foreground group leader
        has ``record``, when ``comm_rule``: macOS's tmux gives the 15-character ``comm``."""


class LinuxHost:
    name = "linux"
    comm_rule = False

    def __init__(self) -> None:
        from tmuxlocd.host import linux, linux_shared

        self._l = linux
        self._s = linux_shared
        self.peer = linux.peer
        self.record = linux.record
        self.cmdline = linux.cmdline
        self.environ = linux.environ
        self.tty_path = linux.tty_path
        self.watch_exit = linux.watch_exit
        self.writers = linux.writers
        self.backlog = linux.backlog
        self.processes = linux.own_processes
        self.ssh_master = linux_shared.ssh_master
        self.clients_of = linux_shared.clients_of

    def keep(self, pid: int) -> int | None:
        return os.open(self._l.stat_path(pid), os.O_RDONLY | os.O_CLOEXEC)

    def command(self, record: ProcStat) -> str:
        return record.comm


class QueueExit:
    __slots__ = ("_owner", "callback", "pid")

    def __init__(self, owner: QueueExits, pid: int, callback: Callable[[], None]) -> None:
        self._owner = owner
        self.pid = pid
        self.callback: Callable[[], None] | None = callback

    def cancel(self) -> None:
        if self.callback is not None:
            self.callback = None
            self._owner.forget(self)


class QueueExits:
    """Every exit watch of the ``portable`` host through one queue (written once for kqueue
    and epoll): the queue sits in the running loop while a pid is watched, and each pid's
    watchers are called once when it ends."""

    def __init__(self, make: Callable[[], Queue]) -> None:
        self._make = make
        self._queue: Queue | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._by_pid: dict[int, list[QueueExit]] = {}

    def watch(self, pid: int, callback: Callable[[], None]) -> QueueExit | None:
        loop = asyncio.get_running_loop()
        if self._queue is not None and self._loop is not loop:
            self._close()  # a loop that ended with watches left (a test's): start afresh
        if self._queue is None:
            self._queue = self._make()
            self._loop = loop
            loop.add_reader(self._queue.fileno(), self._drain)
        if not self._queue.add(pid):
            if not self._by_pid:
                self._close()
            return None
        handle = QueueExit(self, pid, callback)
        self._by_pid.setdefault(pid, []).append(handle)
        return handle

    def forget(self, handle: QueueExit) -> None:
        handles = self._by_pid.get(handle.pid)
        if handles is None or handle not in handles:
            return
        handles.remove(handle)
        if not handles:
            del self._by_pid[handle.pid]
            if self._queue is not None:
                self._queue.remove(handle.pid)
        if not self._by_pid:
            self._close()

    def _drain(self) -> None:
        if self._queue is None:
            return
        for pid in self._queue.ended():
            for handle in self._by_pid.pop(pid, []):
                callback, handle.callback = handle.callback, None
                if callback is not None:
                    callback()
        if not self._by_pid:
            self._close()

    def _close(self) -> None:
        queue, self._queue = self._queue, None
        if queue is None:
            return
        if self._loop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError, ValueError):
                self._loop.remove_reader(queue.fileno())
        self._loop = None
        for handles in self._by_pid.values():
            for handle in handles:
                handle.callback = None
        self._by_pid.clear()
        queue.close()


class PortableHost:
    """What macOS offers, on whichever system runs it (on Linux: read from /proc into
    macOS's shapes)."""

    name = "portable"

    def __init__(self) -> None:
        if sys.platform == "darwin":
            from tmuxlocd.host import darwin

            leaves: Leaves = darwin
            make_queue: Callable[[], Queue] = darwin.KqueueQueue
            self.comm_rule = True
        else:
            from tmuxlocd.host import linux

            leaves = linux
            make_queue = linux.EpollQueue
            self.comm_rule = False
        self._leaves = leaves
        self.peer = leaves.peer
        self.backlog = leaves.backlog
        self.processes = leaves.own_processes
        self._exits = QueueExits(make_queue)

    def record(self, pid: int) -> ProcStat | None:
        data = self._leaves.kinfo(pid)
        if data is None:
            return None
        try:
            session = os.getsid(pid)
        except OSError:
            return None  # gone between the two reads
        try:
            return parse_kinfo(data, session)
        except ValueError:
            return None

    def cmdline(self, pid: int) -> bytes:
        data = self._leaves.procargs2(pid)
        return split_procargs2(data)[0] if data else b""

    def environ(self, pid: int) -> bytes | None:
        data = self._leaves.procargs2(pid)
        return split_procargs2(data)[1] if data else None

    def tty_path(self, pid: int, dev: int) -> str | None:
        guess = self._leaves.tty_form(dev)
        if guess is not None and _same_device(guess, dev):
            return guess
        directory, prefix = self._leaves.TTY_GLOB
        with contextlib.suppress(OSError):
            for name in sorted(os.listdir(directory)):
                path = os.path.join(directory, name)
                if name.startswith(prefix) and _same_device(path, dev):
                    return path
        return None

    def keep(self, pid: int) -> int | None:
        return None

    def watch_exit(self, pid: int, callback: Callable[[], None]) -> Exit | None:
        return self._exits.watch(pid, callback)

    def ssh_master(self, pid: int) -> Shared | None:
        # No portable view of a process's listening sockets: an ssh that forwards the
        # daemon's socket may be a connection master carrying several panes' sessions, and
        # nothing here can prove it is not, so it places no one.
        return Shared("ssh_master", pid, (), proven=False)

    def clients_of(self, server: int) -> list[int] | None:
        return None  # no portable view of which sockets are paired: cannot be told

    def writers(self, path: str, pids: Sequence[int] | None) -> list[int]:
        lsof = shutil.which("lsof")
        if lsof is None:
            return []
        # -a: every selection at once (lsof ORs them otherwise).
        argv = [lsof, "-w", "-F", "pa", "-a", "-u", str(os.getuid())]
        if pids is not None:
            if not pids:
                return []
            argv += ["-p", ",".join(map(str, pids))]
        try:
            out = subprocess.run(
                [*argv, "--", path], capture_output=True, text=True, timeout=10, check=False
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            return []
        return parse_lsof_writers(out)

    def command(self, record: ProcStat) -> str:
        return comm_command(record.comm)


def _same_device(path: str, dev: int) -> bool:
    try:
        return os.stat(path).st_rdev == dev
    except OSError:
        return False


def choose(env: str | None = None, platform: str = sys.platform) -> Host:
    """``$TMUXLOCD_HOST`` (``linux`` | ``portable``), else ``linux`` on Linux, ``portable``
    elsewhere; ValueError for another name, or ``linux`` off Linux."""
    name = env if env is not None else os.environ.get("TMUXLOCD_HOST", "")
    if not name:
        name = "linux" if platform == "linux" else "portable"
    if name == "linux" and platform == "linux":
        return LinuxHost()
    if name == "portable":
        return PortableHost()
    raise ValueError(f"TMUXLOCD_HOST={name!r}: expected one of {', '.join(NAMES)}")


HOST: Host = choose()
