"""Who is calling, from what /proc says of a process: the pure part of
tmuxlocd.host.identity (SPEC §2).

A ``TMUX_PANE`` that looks like a pane id, read from an environment block; a command line
that is a server of several harness sessions; the walk up the process tree to the nearest
ancestor with a tty, over a lookup the host provides; a pty's device number as a path; and
the fields of a stat line that change while a process lives.
"""

from __future__ import annotations

from collections.abc import Callable

from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.core.queries import SHARED_ANCESTOR

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
    of several harness sessions, each maybe in another pane: Codex's shared app-server.

    Codex's TUI starts it detached (``setsid``) as ``codex [--enable remote_control]
    app-server --listen unix://``, later with ``--managed-daemon`` (``command_args`` and
    ``start_inner`` in ``codex-rs/app-server-daemon/src/backend/``), and later TUIs attach to
    it over its control socket.  One listening on a WebSocket (``ws://``, ``wss://``) serves
    several clients too; one on stdio (an editor's, or a TUI's own) serves one and is not one
    of these."""
    args = cmdline.rstrip(b"\0").split(b"\0")
    if b"app-server" not in args[1:]:
        return False
    rest = args[args.index(b"app-server", 1) + 1 :]
    if b"--managed-daemon" in rest:
        return True
    for i, arg in enumerate(rest):
        if arg == b"--listen" and i + 1 < len(rest):
            value = rest[i + 1]
        elif arg.startswith(b"--listen="):
            value = arg[len(b"--listen=") :]
        else:
            continue
        if value.startswith((b"unix://", b"ws://", b"wss://")):
            return True
    return False


def nearest_tty_ancestor(
    pid: int,
    stat_of: Callable[[int], ProcStat | None],
    *,
    skip: int = 0,
    limit: int = MAX_ANCESTORS,
    shared: Callable[[int], bool] | None = None,
) -> int:
    """The ``tty_nr`` of the nearest proper ancestor of ``pid`` that has one, else 0.

    Ancestors on the tty ``skip`` (the caller's own, already known not to be a pane) are
    passed over: under ``script`` the shell in between shares the caller's new pty, and the
    useful hint is the pane further up.  (Under ``ssh -t`` there is none: the chain goes
    up through sshd, not the pane.)  ``stat_of`` looks a process up
    (None when it is gone or unreadable); the walk follows ppid and stops at pid 1, at a
    vanished process, or after ``limit`` steps.  An ancestor for which ``shared`` holds
    (``serves_sessions``) ends the walk with ``SHARED_ANCESTOR``: its pane, or the one beyond
    it, is that of whoever started the server, not the caller's.
    """
    current = stat_of(pid)
    steps = 0
    while current is not None and current.ppid > 1 and steps < limit:
        current = stat_of(current.ppid)
        steps += 1
        if current is None:
            break
        if shared is not None and shared(current.pid):
            return SHARED_ANCESTOR
        if current.tty_nr not in (0, skip):
            return current.tty_nr
    return 0


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


def changing_fields(data: bytes) -> tuple[bytes, bytes]:
    """Of a stat line's fields that identity reads, those that can change, as bytes: ppid
    (field 4, when its parent ends) and tty_nr (field 7, after ``setsid``)."""
    fields = data.rpartition(b")")[2].split(None, 5)
    return fields[1], fields[4]


def reread_stat(data: bytes, first: ProcStat) -> ProcStat:
    """A later stat line of the process ``first`` was read from: only the fields that can
    change are parsed, up to field 7 instead of 22."""
    ppid, tty_nr = changing_fields(data)
    return first._replace(ppid=int(ppid), tty_nr=int(tty_nr))
