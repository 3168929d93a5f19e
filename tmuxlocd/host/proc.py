"""A pane's activity as the host reads it (tmuxlocd.core.activity decides).

The record of the pane's process and the command of the group in front of its terminal, by
the host's rule (tmuxlocd.host.system): argv[0] on Linux as tmux there reads it, the
15-character ``comm`` on macOS as tmux there reads it.
"""

from __future__ import annotations

from tmuxlocd.core import activity
from tmuxlocd.host.system import HOST


def read_pane(pane_pid: int) -> activity.Reading | None:
    """One pane's activity (tmuxlocd.core.activity.decide): two small reads."""
    if pane_pid <= 0:
        return activity.Reading(activity=activity.UNKNOWN, foreground=None)
    stat = HOST.record(pane_pid)
    if stat is None:
        return activity.decide(pane_pid, None, None, None)
    whose = activity.foreground_pid(pane_pid, stat)
    if HOST.comm_rule:
        front = stat if whose == pane_pid else HOST.record(whose)
        comm = HOST.command(front) if front is not None else None
        return activity.decide(pane_pid, stat, None, comm)
    if whose == pane_pid:
        return activity.decide(pane_pid, stat, HOST.cmdline(whose), stat.comm)
    # The leader's record too: its comm names it while its cmdline is empty (inside exec()),
    # and tells a command not yet settled (tmuxlocd.core.activity.decide).
    cmdline = HOST.cmdline(whose)
    front = HOST.record(whose)
    comm = front.comm if front is not None else None
    return activity.decide(pane_pid, stat, cmdline, comm, front)


def running(pid: int) -> bool:
    """Whether process ``pid`` is there (a zombie counts: not yet reaped)."""
    return HOST.record(pid) is not None
