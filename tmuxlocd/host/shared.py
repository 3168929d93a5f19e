"""Processes that speak for several panes, as the kernel shows them (tmuxlocd.core.shared).

The one place that tells whether a process serves the sessions of several panes: by its
command line (Codex's shared app-server, Cline's hub) or by its sockets (an ssh connection
master listens on its ``ControlPath``).  Identity asks it once per process (a process's
command and sockets of this kind do not change while it lives), and only of ssh for the
socket look.
"""

from __future__ import annotations

import os

from tmuxlocd.core.shared import (
    Shared,
    cmdline_kind,
    listening_unix,
    may_be_ssh_master,
    socket_inode,
)
from tmuxlocd.host import proc


def by_cmdline(pid: int) -> Shared | None:
    """The shared process ``pid`` is by its command line, or None."""
    kind = cmdline_kind(proc.read(f"/proc/{pid}/cmdline") or b"")
    return None if kind is None else Shared(kind, pid)


def ssh_master(pid: int) -> Shared | None:
    """``pid`` as an ssh connection master: a process that listens on a Unix socket (its
    control socket).  None when it listens on none, or when its descriptors cannot be read
    (then it is no master this daemon could see: another user's, or gone)."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return None
    inodes = {n for link in links if (n := socket_inode(link)) is not None}
    if not inodes:
        return None
    try:
        table = proc.read_all("/proc/net/unix")
    except OSError:
        return None
    paths = listening_unix(table, inodes)
    return Shared("ssh_master", pid, tuple(p for p in paths if p)) if paths else None


def peer(pid: int, comm: str) -> Shared | None:
    """Whether the process that connected to the daemon speaks for several panes: an ssh
    connection master forwarding the daemon's socket (``-R``) for every session that shares
    it.  ``comm`` is the process's (stat field 2): only ssh is looked at."""
    return ssh_master(pid) if may_be_ssh_master(comm) else None
