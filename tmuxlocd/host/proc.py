"""What Linux's /proc says of a process, and the descriptor that says when it ends.

The one reader of /proc files (identity's stat, environ and cmdline; a pane's activity) and
of pidfds.  Another system would answer these from its own process table (sysctl, libproc)
and kqueue's EVFILT_PROC, here.
"""

from __future__ import annotations

import os

from tmuxlocd.core import activity
from tmuxlocd.core.procstat import stat_or_none


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


def read_pane(pane_pid: int) -> activity.Reading | None:
    """One pane's activity (tmuxlocd.core.activity.decide) from /proc: two small reads."""
    if pane_pid <= 0:
        return activity.Reading(activity=activity.UNKNOWN, foreground=None)
    raw = read(f"/proc/{pane_pid}/stat")
    stat = stat_or_none(raw) if raw else None
    whose = activity.foreground_pid(pane_pid, stat)
    cmdline = read(f"/proc/{whose}/cmdline") if stat is not None else None
    comm = stat.comm if stat is not None and whose == pane_pid else None
    return activity.decide(pane_pid, stat, cmdline, comm)


def pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` ends (Linux 5.3+)."""
    try:
        return os.pidfd_open(pid)
    except OSError:  # gone already, or not in our pid namespace
        return None
