"""``/proc/<pid>/stat``, parsed: the one parser of the package (and of the bench).

Pure: the host reads the line (tmuxlocd.host.identity, tmuxlocd.daemon.activity_watch), this
says what it holds.  Linux's format; another system's process table would give a ProcStat
of its own making.
"""

from __future__ import annotations

from typing import NamedTuple


class ProcStat(NamedTuple):
    """The fields read anywhere (proc(5) numbering); the first four and ``session`` are
    identity's."""

    pid: int  # (1)
    ppid: int  # (4)
    tty_nr: int  # (7): the controlling terminal's device number, 0 if none
    starttime: int = 0  # (22) clock ticks after boot: with pid, names one process
    comm: str = ""  # (2), between the first '(' and the LAST ')': it may hold both
    state: str = ""  # (3)
    pgrp: int = 0  # (5)
    tpgid: int = -1  # (8): the foreground process group of the controlling terminal
    utime: int = 0  # (14) clock ticks in user mode
    stime: int = 0  # (15) and in the kernel
    # (6) the session id: tmux's child for a pane calls setsid() before it opens the pane's
    # pty, so every process started in a pane is in the session whose id is ``pane_pid``
    # (unless it left it with setsid, and the tty with it).  Last: rows are built by position.
    session: int = 0


def parse_stat(line: str | bytes) -> ProcStat:
    """A ``/proc/<pid>/stat`` line (its bytes as read, or their text).

    ``comm`` may hold spaces and parentheses (a process can name itself ``a) b (c``), so
    the fixed fields are read after the *last* ``)``.  Only up to field 22 (starttime): the
    30 fields after it are never read.  Raises ValueError on what is not a stat line.
    """
    text = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
    head, sep, tail = text.rpartition(")")
    pid_text, paren, comm = head.partition(" (")
    fields = tail.split(None, 20)
    if not (sep and paren) or len(fields) < 6:
        raise ValueError("not a /proc/<pid>/stat line")
    # fields[0] is field 3 (state): ppid is field 4, session 6, tty_nr 7, tpgid 8, utime 14,
    # starttime 22.
    return ProcStat(
        pid=int(pid_text),
        ppid=int(fields[1]),
        tty_nr=int(fields[4]),
        starttime=int(fields[19]) if len(fields) > 19 else 0,
        comm=comm,
        state=fields[0],
        pgrp=int(fields[2]),
        tpgid=int(fields[5]),
        utime=int(fields[11]) if len(fields) > 12 else 0,
        stime=int(fields[12]) if len(fields) > 12 else 0,
        session=int(fields[3]),
    )


def placed(stat: ProcStat) -> ProcStat:
    """Only the fields that name a process and place it (pid, ppid, tty_nr, starttime,
    session): a caller's facts are compared from one request to the next (memo.Kept), and
    its CPU time and state move while its place does not."""
    return ProcStat(stat.pid, stat.ppid, stat.tty_nr, stat.starttime, session=stat.session)


def stat_or_none(line: str | bytes) -> ProcStat | None:
    """``parse_stat``, or None for what is not a stat line (a process read as it went)."""
    try:
        return parse_stat(line)
    except ValueError:
        return None
