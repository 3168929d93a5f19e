"""Processes that speak for several panes, as the host shows them (tmuxlocd.core.shared).

The one place that tells whether a process serves the sessions of several panes: by its
command line (Codex's shared app-server, Cline's hub) or by its sockets (an ssh connection
master listens on its ``ControlPath``; the host tells, tmuxlocd.host.system).  Identity asks
it once per process (a process's command and sockets of this kind do not change while it
lives), and only of ssh for the socket look.
"""

from __future__ import annotations

from tmuxlocd.core.shared import Shared, cmdline_kind, may_be_ssh_master
from tmuxlocd.host.system import HOST


def by_cmdline(pid: int) -> Shared | None:
    """The shared process ``pid`` is by its command line, or None."""
    kind = cmdline_kind(HOST.cmdline(pid))
    return None if kind is None else Shared(kind, pid)


def peer(pid: int, comm: str) -> Shared | None:
    """Whether the process that connected to the daemon speaks for several panes: an ssh
    connection master forwarding the daemon's socket (``-R``) for every session that shares
    it.  ``comm`` is the process's (its record's): only ssh is looked at."""
    return HOST.ssh_master(pid) if may_be_ssh_master(comm) else None


def clients_of(server: int) -> list[int] | None:
    """The processes connected to the Unix sockets process ``server`` listens on (Codex's
    shared app-server: its TUIs), by the kernel's own pairing of the two ends; None when it
    cannot be told (then no client places anyone)."""
    return HOST.clients_of(server)


def servers() -> list[Shared]:
    """This user's running processes that serve several sessions by their command line
    (Codex's shared app-server, Cline's hub): for ``tmuxlocd doctor``."""
    return [server for pid in HOST.processes() if (server := by_cmdline(pid)) is not None]
