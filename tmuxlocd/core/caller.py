"""Who is calling, from what /proc says of a process: the pure part of
tmuxlocd.host.identity (SPEC §2).

A ``TMUX_PANE`` that looks like a pane id, read from an environment block; a command line
that is a server of several harness sessions; the walk up the process tree to the nearest
ancestor with a tty, over a lookup the host provides; a pty's device number as a path; and
the fields of a stat line that change while a process lives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.core.shared import cmdline_kind

# The walk up from a caller with no tty met, before any ancestor with a tty, a process that
# runs the hooks and MCP servers of several sessions (Codex's shared app-server): whatever
# pane lies beyond it is the pane of whoever started that server, not the caller's.
SHARED_ANCESTOR = -1

# An ancestor chain is short; the bound only protects against a cycle in a racing /proc.
MAX_ANCESTORS = 64


def pane_id_hint(value: str) -> str | None:
    """A ``TMUX_PANE`` value when it looks like a pane id (``%N``), else None."""
    number = value[1:]
    if value[:1] == "%" and number.isascii() and number.isdigit():
        return value
    return None


def environ_pane(data: bytes) -> str | None:
    """``TMUX_PANE`` from raw ``/proc/<pid>/environ`` bytes (the first one, as getenv)."""
    # A search, not a split: it runs on every /v1/self of a new process.
    data = b"\0" + data
    start = data.find(b"\0TMUX_PANE=")
    if start < 0:
        return None
    start += 11
    end = data.find(b"\0", start)
    value = data[start:] if end < 0 else data[start:end]
    return pane_id_hint(value.decode("utf-8", "replace"))


def serves_sessions(cmdline: bytes) -> bool:
    """Whether ``/proc/<pid>/cmdline`` is that of a process that runs the hooks and MCP servers
    of several harness sessions, each maybe in another pane (``shared.cmdline_kind``: Codex's
    shared app-server, Cline's hub)."""
    return cmdline_kind(cmdline) is not None


class Up(NamedTuple):
    """What the walk up from a caller found (``nearest_up``): the nearest proper ancestor
    with a tty, its tty and session (``tty_nr`` 0: none); or a server of several sessions
    first (``tty_nr`` SHARED_ANCESTOR).  ``pid`` is that process's."""

    tty_nr: int
    session: int = 0
    pid: int = 0


NO_UP = Up(0)


def nearest_up(
    pid: int,
    stat_of: Callable[[int], ProcStat | None],
    *,
    skip: int = 0,
    limit: int = MAX_ANCESTORS,
    shared: Callable[[int], bool] | None = None,
) -> Up:
    """The nearest proper ancestor of ``pid`` that has a tty.

    Ancestors on the tty ``skip`` (the caller's own, already known not to be a pane) are
    passed over: under ``script`` the shell in between shares the caller's new pty, and the
    useful hint is the pane further up.  ``stat_of`` looks a process up (None when it is
    gone or unreadable); the walk follows ppid and stops at pid 1, at a vanished process, or
    after ``limit`` steps.  An ancestor for which ``shared`` holds (``serves_sessions``) ends
    the walk with ``SHARED_ANCESTOR``: its pane, or the one beyond it, is that of whoever
    started the server, not the caller's.
    """
    current = stat_of(pid)
    steps = 0
    while current is not None and current.ppid > 1 and steps < limit:
        current = stat_of(current.ppid)
        steps += 1
        if current is None:
            break
        if shared is not None and shared(current.pid):
            return Up(SHARED_ANCESTOR, pid=current.pid)
        if current.tty_nr not in (0, skip):
            return Up(current.tty_nr, current.session, current.pid)
    return NO_UP


def nearest_tty_ancestor(
    pid: int,
    stat_of: Callable[[int], ProcStat | None],
    *,
    skip: int = 0,
    limit: int = MAX_ANCESTORS,
    shared: Callable[[int], bool] | None = None,
) -> int:
    """The ``tty_nr`` of ``nearest_up``: 0 for none, ``SHARED_ANCESTOR`` for a server of
    several sessions first."""
    return nearest_up(pid, stat_of, skip=skip, limit=limit, shared=shared).tty_nr


def ancestors(
    pid: int,
    stat_of: Callable[[int], ProcStat | None],
    *,
    limit: int = MAX_ANCESTORS,
    shared: Callable[[int], bool] | None = None,
) -> list[int]:
    """The proper ancestors of ``pid``, nearest first, as ``nearest_tty_ancestor`` walks
    them: up to pid 1 (left out), a vanished process, ``limit`` steps, or the first for which
    ``shared`` holds (included: the walk ends there)."""
    out: list[int] = []
    current = stat_of(pid)
    while current is not None and current.ppid > 1 and len(out) < limit:
        out.append(current.ppid)
        if shared is not None and shared(current.ppid):
            break
        current = stat_of(current.ppid)
    return out


def pts_path(tty_nr: int) -> str | None:
    """The ``/dev/pts/N`` path a Unix98 pty ``tty_nr`` would have (majors 136-143), else None.

    The kernel encodes the device as ``(minor & 0xff) | (major << 8) | ((minor & ~0xff) << 12)``.
    """
    major = (tty_nr >> 8) & 0xFFF
    minor = (tty_nr & 0xFF) | ((tty_nr >> 12) & 0xFFF00)
    if 136 <= major <= 143:
        return f"/dev/pts/{(major - 136) * 256 + minor}"
    return None


def changing_fields(data: bytes) -> tuple[bytes, bytes, bytes]:
    """Of a stat line's fields that identity reads, those that can change, as bytes: ppid
    (field 4, when its parent ends), session (field 6) and tty_nr (field 7), both after
    ``setsid``."""
    fields = data.rpartition(b")")[2].split(None, 5)
    return fields[1], fields[3], fields[4]


def reread_stat(data: bytes, first: ProcStat) -> ProcStat:
    """A later stat line of the process ``first`` was read from: only the fields that can
    change are parsed, up to field 7 instead of 22."""
    ppid, session, tty_nr = changing_fields(data)
    return first._replace(ppid=int(ppid), tty_nr=int(tty_nr), session=int(session))
