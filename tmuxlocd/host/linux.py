"""Linux's leaves: /proc, pidfds, ``SO_PEERCRED``, ``/dev/pts``, sock_diag.

The only module of the package (with tmuxlocd.host.linux_shared) that names them
(tests/unit/test_host_seam.py): the ``linux`` host (tmuxlocd.host.system) reads them directly,
the fastest way; the ``portable`` host, forced on Linux, reads them only through the shapes
macOS gives (``kinfo``, ``procargs2``: tmuxlocd.core.darwin), so that Linux's test runs
exercise macOS's parsers and logic.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import socket
import struct
import sys
from collections.abc import Callable, Sequence

from tmuxlocd.core.caller import pts_path
from tmuxlocd.core.darwin import pack_kinfo, pack_procargs2
from tmuxlocd.core.procstat import ProcStat, parse_stat

_PEERCRED = struct.Struct("3i")
SOMAXCONN_PATH = "/proc/sys/net/core/somaxconn"
TTY_GLOB = ("/dev/pts", "")  # (directory, name prefix) of the ptys, for a scan


def read(path: str, size: int = 4096) -> bytes | None:
    """One read of a /proc file (its first ``size`` bytes): None when it is gone or unreadable.
    ``os.open``/``os.read``: /proc files are small, and a buffered file costs several times
    as much on a request's path."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, size)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_all(path: str) -> bytes:
    """A whole /proc file, however long (an environment); OSError when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def peer(sock: object) -> tuple[int, int, int] | None:
    """``SO_PEERCRED`` of a connected Unix socket: (pid, uid, gid), fixed at connect()."""
    getsockopt = getattr(sock, "getsockopt", None)
    if getsockopt is None:
        return None
    if sys.platform == "linux":  # (the name is Linux's: for mypy --platform darwin)
        try:
            raw = getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
        except OSError:
            return None
        pid, uid, gid = _PEERCRED.unpack(raw)
        return pid, uid, gid
    else:
        return None


def record(pid: int) -> ProcStat | None:
    """``/proc/<pid>/stat``, parsed; one read (a stat line is well under 4 KiB)."""
    data = read(f"/proc/{pid}/stat")
    try:
        return parse_stat(data) if data else None
    except ValueError:
        return None


def stat_path(pid: int) -> str:
    return f"/proc/{pid}/stat"


def cmdline(pid: int) -> bytes:
    """The start of ``/proc/<pid>/cmdline`` (b"" when gone or unreadable)."""
    return read(f"/proc/{pid}/cmdline") or b""


def environ(pid: int) -> bytes | None:
    """``/proc/<pid>/environ``, whole; None when unreadable."""
    try:
        return read_all(f"/proc/{pid}/environ")
    except OSError:
        return None


def _same_device(path: str, dev: int) -> bool:
    try:
        return os.stat(path).st_rdev == dev
    except OSError:
        return False


def tty_path(pid: int, dev: int) -> str | None:
    """A path of the device ``dev`` (a caller's controlling tty): the ``/dev/pts`` guess, else
    what the process's standard descriptors point at."""
    guess = pts_path(dev)
    if guess is not None and _same_device(guess, dev):
        return guess
    for fd in (0, 1, 2):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("/dev/") and _same_device(target, dev):
            return target
    return None


def own_processes() -> list[int]:
    """The pids of this user's processes, as /proc lists them now."""
    uid = os.getuid()
    found: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            if os.stat(f"/proc/{name}").st_uid == uid:
                found.append(int(name))
        except OSError:
            continue
    return found


def backlog() -> int:
    """``net.core.somaxconn`` (0 when unreadable)."""
    try:
        with open(SOMAXCONN_PATH) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 0


# ----------------------------------------------------------------------------------------------
# The portable host's view of /proc: what macOS's sysctls would return for the process.


def kinfo(pid: int) -> bytes | None:
    """``/proc/<pid>/stat`` as the ``struct kinfo_proc`` bytes ``sysctl(KERN_PROC_PID)`` gives
    on macOS (None: gone, as sysctl's empty answer)."""
    stat = record(pid)
    return pack_kinfo(stat) if stat is not None else None


def procargs2(pid: int) -> bytes | None:
    """``/proc/<pid>/cmdline`` and ``environ`` as the block ``sysctl(KERN_PROCARGS2)`` gives
    on macOS (the environment left out when unreadable, as macOS leaves it out of a
    restricted process's)."""
    try:
        argv = read_all(f"/proc/{pid}/cmdline")
    except OSError:
        return None
    try:
        exe = os.fsencode(os.readlink(f"/proc/{pid}/exe"))
    except OSError:
        exe = argv.split(b"\0", 1)[0]
    return pack_procargs2(exe, argv, environ(pid) or b"")


def tty_form(dev: int) -> str | None:
    """The path a pty ``dev`` would have here (macOS: ``core.darwin.ttys_path``)."""
    return pts_path(dev)


# ----------------------------------------------------------------------------------------------
# Process exits.


def pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` ends (Linux 5.3+)."""
    if sys.platform == "linux":
        try:
            return os.pidfd_open(pid)
        except OSError:  # gone already, or not in our pid namespace
            return None
    else:
        return None


class PidfdExit:
    """One process's end, told once in the running loop (``linux`` host): a pidfd of its
    own in the loop's epoll set."""

    __slots__ = ("_fd", "_loop")

    def __init__(self, fd: int, callback: Callable[[], None]) -> None:
        self._fd: int | None = fd
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._fire, callback)

    def _fire(self, callback: Callable[[], None]) -> None:
        self.cancel()
        callback()

    def cancel(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(RuntimeError, ValueError):
            self._loop.remove_reader(fd)
        os.close(fd)


def watch_exit(pid: int, callback: Callable[[], None]) -> PidfdExit | None:
    fd = pidfd(pid)
    if fd is None:
        return None
    try:
        return PidfdExit(fd, callback)
    except (OSError, ValueError):
        os.close(fd)
        return None


if sys.platform == "linux":

    class EpollQueue:
        """The portable exit watch's one queue on Linux: an epoll set of pidfds, by pid.  macOS's
        is a kqueue (tmuxlocd.host.darwin.KqueueQueue); only ``add`` differs in kind."""

        def __init__(self) -> None:
            self._ep = select.epoll()
            self._by_fd: dict[int, int] = {}
            self._by_pid: dict[int, int] = {}

        def fileno(self) -> int:
            return self._ep.fileno()

        def add(self, pid: int) -> bool:
            if pid in self._by_pid:
                return True
            fd = pidfd(pid)
            if fd is None:
                return False
            self._ep.register(fd, select.EPOLLIN)
            self._by_fd[fd] = pid
            self._by_pid[pid] = fd
            return True

        def remove(self, pid: int) -> None:
            fd = self._by_pid.pop(pid, None)
            if fd is not None:
                del self._by_fd[fd]
                with contextlib.suppress(OSError):
                    self._ep.unregister(fd)
                os.close(fd)

        def ended(self) -> list[int]:
            """The pids whose end is told now; each is then no longer in the queue (as a kevent
            with EV_ONESHOT)."""
            pids = [self._by_fd[fd] for fd, _ in self._ep.poll(0) if fd in self._by_fd]
            for pid in pids:
                self.remove(pid)
            return pids

        def close(self) -> None:
            for pid in list(self._by_pid):
                self.remove(pid)
            self._ep.close()


# ----------------------------------------------------------------------------------------------
# Who writes a file (the context hook's fallback).


def writers(path: str, pids: Sequence[int] | None) -> list[int]:
    """This user's processes among ``pids`` (every process: None) that have ``path`` (already
    resolved) open for writing: ``/proc/<pid>/fd`` and ``fdinfo``."""
    from tmuxlocd.core.harness import opened_for_writing

    if pids is None:
        try:
            pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
        except OSError:
            return []
    uid = os.getuid()
    out: list[int] = []
    for pid in pids:
        base = f"/proc/{pid}"
        try:
            if os.stat(base).st_uid != uid:
                continue
            fds = os.listdir(base + "/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{base}/fd/{fd}") != path:
                    continue
                with open(f"{base}/fdinfo/{fd}", "rb") as f:
                    info = f.read(4096)
            except OSError:
                continue
            if opened_for_writing(info):
                out.append(pid)
                break
    return out
