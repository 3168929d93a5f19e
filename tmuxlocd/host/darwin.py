"""macOS's leaves: ``sysctl`` through ctypes, ``LOCAL_PEERPID``, a kqueue exit watch,
``launch_activate_socket``.

The only code of the package that runs on a Mac alone.  What it returns is parsed in
tmuxlocd.core.darwin (pure, tested on Linux with byte fixtures and under the whole suite by
the portable host); ``tmuxlocd doctor --host`` compares each answer here with a POSIX truth
on the Mac it runs on.  Type-checked on Linux by ``mypy --strict --platform darwin``.
Nothing here is called on Linux: importing it is harmless there.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import sys

from tmuxlocd.core.darwin import KINFO_SIZE, XUCRED_SIZE, kinfo_pids, parse_xucred, ttys_path

# bsd/sys/sysctl.h
CTL_KERN = 1
KERN_ARGMAX = 8
KERN_PROC = 14
KERN_PROC_PID = 1
KERN_PROCARGS2 = 49
# bsd/sys/un.h: SOL_LOCAL 0; CPython exports LOCAL_PEERCRED but not LOCAL_PEERPID.
SOL_LOCAL = 0
LOCAL_PEERCRED = 0x001
LOCAL_PEERPID = 0x002

_libc: ctypes.CDLL | None = None


def libc() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(None, use_errno=True)
        lib.sysctl.argtypes = [
            ctypes.POINTER(ctypes.c_int),
            ctypes.c_uint,
            ctypes.c_void_p,
            ctypes.POINTER(ctypes.c_size_t),
            ctypes.c_void_p,
            ctypes.c_size_t,
        ]
        lib.sysctl.restype = ctypes.c_int
        _libc = lib
    return _libc


def sysctl(mib: tuple[int, ...], size: int) -> bytes | None:
    """The bytes ``sysctl(mib)`` returns (at most ``size``), None on an error or an empty
    answer (a process that is gone)."""
    names = (ctypes.c_int * len(mib))(*mib)
    buf = ctypes.create_string_buffer(size)
    length = ctypes.c_size_t(size)
    if libc().sysctl(names, len(mib), buf, ctypes.byref(length), None, 0) != 0:
        return None
    return buf.raw[: length.value] or None


def kinfo(pid: int) -> bytes | None:
    """``sysctl(KERN_PROC_PID)``: the process's ``struct kinfo_proc`` (any user's)."""
    return sysctl((CTL_KERN, KERN_PROC, KERN_PROC_PID, pid), KINFO_SIZE)


KERN_PROC_UID = 5


def own_processes() -> list[int]:
    """This user's pids: ``sysctl(KERN_PROC_UID)``, an array of ``kinfo_proc``."""
    mib = (CTL_KERN, KERN_PROC, KERN_PROC_UID, os.getuid())
    names = (ctypes.c_int * len(mib))(*mib)
    length = ctypes.c_size_t(0)
    if libc().sysctl(names, len(mib), None, ctypes.byref(length), None, 0) != 0:
        return []
    # The table may grow between the two calls: room for a few more.
    data = sysctl(mib, length.value + 16 * KINFO_SIZE)
    return kinfo_pids(data) if data else []


_argmax = 0


def procargs2(pid: int) -> bytes | None:
    """``sysctl(KERN_PROCARGS2)``: argc, the exec path, argv and the environment (this user's
    processes only; the environment left out of a restricted one's)."""
    global _argmax
    if not _argmax:
        raw = sysctl((CTL_KERN, KERN_ARGMAX), 4)
        _argmax = int.from_bytes(raw, sys.byteorder) if raw else 1 << 20
    return sysctl((CTL_KERN, KERN_PROCARGS2, pid), _argmax)


def peer(sock: object) -> tuple[int, int, int] | None:
    """(pid, uid, gid) of a connected Unix socket's peer: ``LOCAL_PEERPID`` (the last process
    that used the peer's socket: the sender of the first request) and ``LOCAL_PEERCRED``
    (fixed at connect())."""
    getsockopt = getattr(sock, "getsockopt", None)
    if getsockopt is None:
        return None
    try:
        pid = int.from_bytes(getsockopt(SOL_LOCAL, LOCAL_PEERPID, 4), sys.byteorder)
        cred = getsockopt(SOL_LOCAL, LOCAL_PEERCRED, XUCRED_SIZE)
    except OSError:
        return None
    uid = parse_xucred(cred)
    if uid is None:
        return None
    gid = int.from_bytes(cred[12:16], sys.byteorder) if len(cred) >= 16 else -1
    return pid, uid, gid


def backlog() -> int:
    """``kern.ipc.somaxconn`` (0 when unreadable)."""
    value = ctypes.c_int(0)
    size = ctypes.c_size_t(ctypes.sizeof(value))
    if libc().sysctlbyname(b"kern.ipc.somaxconn", ctypes.byref(value), ctypes.byref(size), None, 0):
        return 0
    return value.value


def tty_form(dev: int) -> str | None:
    return ttys_path(dev)


TTY_GLOB = ("/dev", "ttys")


def launch_sockets(name: str = "Listeners") -> list[int]:
    """The descriptors launchd holds for this job's ``Sockets`` entry ``name``
    (``launch_activate_socket``, macOS 10.10+); [] when not started by launchd (ESRCH) or
    without such an entry (ENOENT).  Called on macOS only."""
    fds = ctypes.POINTER(ctypes.c_int)()
    count = ctypes.c_size_t(0)
    lib = libc()
    err = lib.launch_activate_socket(name.encode(), ctypes.byref(fds), ctypes.byref(count))
    if err != 0:
        if err not in (errno.ESRCH, errno.ENOENT):
            raise OSError(err, f"launch_activate_socket: {os.strerror(err)}")
        return []
    try:
        return [fds[i] for i in range(count.value)]
    finally:
        lib.free(fds)


if sys.platform == "darwin":

    class KqueueQueue:
        """The portable exit watch's one queue on macOS: a kqueue, ``EVFILT_PROC``
        ``NOTE_EXIT`` per pid (one-shot).  A kqueue is readable when an event is pending, so
        it sits in the event loop as one descriptor (asyncio's own selector on macOS is a
        kqueue too)."""

        def __init__(self) -> None:
            self._kq = select.kqueue()
            self._pids: set[int] = set()

        def fileno(self) -> int:
            return self._kq.fileno()

        def _change(self, pid: int, flags: int) -> None:
            event = select.kevent(pid, select.KQ_FILTER_PROC, flags, select.KQ_NOTE_EXIT, 0, 0)
            self._kq.control([event], 0, 0)

        def add(self, pid: int) -> bool:
            if pid in self._pids:
                return True
            try:
                self._change(pid, select.KQ_EV_ADD | select.KQ_EV_ONESHOT)
            except OSError:  # ESRCH: gone already (a zombie too, to be checked on a Mac)
                return False
            self._pids.add(pid)
            return True

        def remove(self, pid: int) -> None:
            if pid in self._pids:
                self._pids.discard(pid)
                with contextlib.suppress(OSError):
                    self._change(pid, select.KQ_EV_DELETE)

        def ended(self) -> list[int]:
            events = self._kq.control(None, 64, 0)
            pids = [int(e.ident) for e in events if e.ident in self._pids]
            self._pids.difference_update(pids)
            return pids

        def close(self) -> None:
            self._pids.clear()
            self._kq.close()
