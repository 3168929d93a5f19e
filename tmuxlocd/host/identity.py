"""Who is calling: the peer process of a Unix-socket request, and the pane it is in (SPEC §2).

The kernel vouches for the peer (its pid and uid: tmuxlocd.host.system), and the peer's
controlling tty (its record's ``tty_nr``) is compared with each pane's ``pane_tty`` device.
``TMUX_PANE`` is read only as a hint: terminals started from a pane inherit it.

The parsing and the ancestor walk are pure (tmuxlocd.core.caller); the host's readers around
them are thin (tmuxlocd.host.system: ``linux`` or ``portable``), and nothing here starts a
subprocess, because ``GET /v1/self`` sits on the hot path of every client.
"""

from __future__ import annotations

import os
from typing import NamedTuple

from tmuxlocd.core.answers import SelfAnswer
from tmuxlocd.core.caller import (
    Up,
    ancestors,
    changing_fields,
    environ_pane,
    nearest_up,
    reread_stat,
)
from tmuxlocd.core.procstat import ProcStat, parse_stat, placed
from tmuxlocd.core.queries import CallerFacts, Choose, View, decide_self, everyone, no_clients
from tmuxlocd.core.shared import Shared
from tmuxlocd.host import shared
from tmuxlocd.host.system import HOST


class Peer(NamedTuple):
    pid: int
    uid: int
    gid: int


# ----------------------------------------------------------------------------------------------
# Thin readers.


def peer_credentials(sock: object) -> Peer | None:
    """The peer of a connected Unix socket (the transport's ``socket`` extra), as the kernel
    vouches for it."""
    got = HOST.peer(sock)
    return Peer(*got) if got is not None else None


def read_stat(pid: int) -> ProcStat | None:
    full = read_full_stat(pid)
    return placed(full) if full is not None else None


def read_full_stat(pid: int) -> ProcStat | None:
    """The process's record (one read: this runs on every GET /v1/self)."""
    return HOST.record(pid)


def read_cmdline(pid: int) -> bytes:
    """The process's argv, NUL-separated (b"" when gone or unreadable)."""
    return HOST.cmdline(pid)


def shared_server(pid: int) -> bool:
    """Whether a live process serves the sessions of several panes by its command line
    (tmuxlocd.host.shared: Codex's shared app-server, Cline's hub): the walk up stops there."""
    return shared.by_cmdline(pid) is not None


def read_env_pane(pid: int) -> str | None:
    """``TMUX_PANE`` of a process, or None if absent or unreadable (it may exit meanwhile)."""
    block = HOST.environ(pid)
    return environ_pane(block) if block is not None else None


# A process's environment block is the environment the process was started with: it does not change
# for the life of a process, which (pid, starttime) names.  An agent asks every turn, so the
# answer is kept (for a bounded number of processes).
_ENV_PANES: dict[tuple[int, int], str | None] = {}
_ENV_PANES_MAX = 1024


def env_pane_of(stat: ProcStat | None, pid: int) -> str | None:
    if stat is None or stat.starttime == 0:
        return read_env_pane(pid)
    key = (pid, stat.starttime)
    try:
        return _ENV_PANES[key]
    except KeyError:
        pass
    value = read_env_pane(pid)
    if len(_ENV_PANES) >= _ENV_PANES_MAX:
        _ENV_PANES.clear()
    _ENV_PANES[key] = value
    return value


def tty_path(pid: int, tty_nr: int) -> str | None:
    """A path of the device ``tty_nr`` (the caller's controlling tty), if one is found."""
    return HOST.tty_path(pid, tty_nr)


# ----------------------------------------------------------------------------------------------
# The answer of GET /v1/self.


class Own(NamedTuple):
    """What a caller's own record says: read on every request, cheap.  ``shared``, as
    the environment, is read once per process (an ssh is a connection master from its start
    to its end)."""

    stat: ProcStat | None
    env_pane: str | None
    shared: Shared | None = None


# Whether a process speaks for several panes, by (pid, starttime): looked at once per
# process (for ssh: its sockets, where the host can see them), as the environment is.
_SHARED: dict[tuple[int, int], Shared | None] = {}


def shared_peer_of(full: ProcStat) -> Shared | None:
    if not full.comm or full.starttime == 0:
        return shared.peer(full.pid, full.comm)
    key = (full.pid, full.starttime)
    try:
        return _SHARED[key]
    except KeyError:
        pass
    value = shared.peer(full.pid, full.comm)
    if len(_SHARED) >= _ENV_PANES_MAX:
        _SHARED.clear()
    _SHARED[key] = value
    return value


def own_facts(pid: int) -> Own:
    full = read_full_stat(pid)
    if full is None:
        return Own(None, env_pane_of(None, pid))
    stat = placed(full)
    return Own(stat, env_pane_of(stat, pid), shared_peer_of(full))


class PeerFacts:
    """``own_facts`` of one connection's peer, its record read anew on every request.

    A keep-alive client asks many times on one connection.  On the ``linux`` host opening
    ``/proc/<pid>/stat`` (a path walk and a pid lookup) costs about as much as reading it: the
    first question opens and closes it, as ``read_stat`` does; from the second on the file
    stays open and is read with ``pread``, and only the fields that can change are parsed.  A
    one-shot client (curl per turn) thus never holds a descriptor.  An open stat file is bound
    to the process, not to its number: once the process is gone the read fails (ESRCH), even
    if the number has been given to another, so a kept file never describes a stranger.  A
    host with nothing to keep (``portable``: a sysctl per read) reads the record whole each
    time, and a record whose start time is not the first's is of another process: no facts.
    The environment (``TMUX_PANE``), fixed for a process's life, is read once.  While the
    fields that can change are the same as last time, ``read`` returns the same ``Own``
    object: equal facts, and a question made of them (``memo.Kept``) compares by identity.
    ``close`` when the connection ends.
    """

    __slots__ = ("_fd", "_first", "_last", "_last_fields", "_nothing_kept", "pid")

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd: int | None = None
        self._nothing_kept = False
        self._first: Own | None = None
        self._last_fields: tuple[bytes | int, ...] | None = None
        self._last: Own | None = None

    def read(self) -> Own:
        first = self._first
        if first is None or first.stat is None:
            self._first = first = own_facts(self.pid)
            return first
        try:
            if self._nothing_kept:
                return self._reread(first, first.stat)
            if self._fd is None:
                return Own(self._keep(first.stat), first.env_pane, first.shared)
            data = os.pread(self._fd, 4096, 0)
            fields = changing_fields(data)
            if fields == self._last_fields and self._last is not None:
                return self._last
            self._last_fields = fields
            self._last = own = Own(reread_stat(data, first.stat), first.env_pane, first.shared)
            return own
        except (OSError, ValueError, IndexError):
            return Own(None, first.env_pane, first.shared)

    def _reread(self, first: Own, was: ProcStat) -> Own:
        now = HOST.record(self.pid)
        if now is None or now.starttime != was.starttime:
            return Own(None, first.env_pane, first.shared)
        fields = (now.ppid, now.session, now.tty_nr)
        if fields == self._last_fields and self._last is not None:
            return self._last
        self._last_fields = fields
        self._last = own = Own(placed(now), first.env_pane, first.shared)
        return own

    def _keep(self, first: ProcStat) -> ProcStat | None:
        """Opens the record to keep, by number: read whole once, it must be the process first
        read (its start time), not another that took the number since."""
        fd = HOST.keep(self.pid)
        if fd is None:
            self._nothing_kept = True
            assert self._first is not None
            return self._reread(self._first, first).stat
        try:
            now = placed(parse_stat(os.pread(fd, 4096, 0)))
        except (OSError, ValueError, IndexError):
            os.close(fd)
            raise
        if (now.pid, now.starttime) != (first.pid, first.starttime):
            os.close(fd)
            return None
        self._fd = fd
        return now

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def caller_facts(pid: int, own: Own, *, choose: Choose | None = None) -> CallerFacts:
    """What ``queries.decide_self`` asks of process ``pid``, from ``own`` (its stat and
    ``TMUX_PANE``, already read); the ancestor walk (once) and the tty's path only when it
    asks: for a caller that is not in a pane.  The daemon's answer (``identify``) and the
    no-daemon one (tmuxlocd.clients.direct) are decided on these same facts."""
    stat = own.stat
    tty_nr = stat.tty_nr if stat is not None else 0

    def stat_of(p: int) -> ProcStat | None:
        # The caller's own stat was just read: reuse it for the first step of the walk.
        return stat if p == pid else read_stat(p)

    walked: list[Up] = []

    def ancestor() -> Up:
        if not walked:
            walked.append(nearest_up(pid, stat_of, skip=tty_nr, shared=shared_server))
        return walked[0]

    lineage: list[frozenset[int]] = []

    def up() -> frozenset[int]:
        if not lineage:
            lineage.append(frozenset(ancestors(pid, stat_of, shared=shared_server)))
        return lineage[0]

    return CallerFacts(
        pid=pid,
        tty_nr=tty_nr,
        env_pane=own.env_pane,
        ancestor=ancestor,
        tty_path=lambda: tty_path(pid, tty_nr),
        session=stat.session if stat is not None else 0,
        lineage=up,
        shared=own.shared,
        clients=clients_of if choose is not None else no_clients,
        choose=choose if choose is not None else everyone,
    )


def clients_of(server: int) -> list[ProcStat] | None:
    """The stats of the processes connected to ``server`` (tmuxlocd.host.shared.clients_of),
    those still running; None when that cannot be read."""
    pids = shared.clients_of(server)
    if pids is None:
        return None
    return [stat for pid in pids if (stat := read_stat(pid)) is not None]


def identify(
    view: View,
    pid: int,
    *,
    accept_ancestor: bool = False,
    known: Own | None = None,
    choose: Choose | None = None,
) -> SelfAnswer:
    """Where process ``pid`` is (``queries.decide_self``), from what the host says of it.

    Two small reads for a caller in a pane (its stat and, once per process, its
    environment: ``own_facts``, or ``known``); the ancestor walk and the tty's path only for a
    caller that is not.  ``choose``: which of a shared server's clients the caller's session
    may be placed by (the daemon's bindings, ``?session=``); without it, no client places.
    """
    mine = own_facts(pid) if known is None else known
    facts = caller_facts(pid, mine, choose=choose)
    return decide_self(view, facts, accept_ancestor=accept_ancestor)
