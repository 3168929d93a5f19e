"""Processes that speak for several panes, as the kernel shows them (tmuxlocd.core.shared).

The one place that tells whether a process serves the sessions of several panes: by its
command line (Codex's shared app-server, Cline's hub) or by its sockets (an ssh connection
master listens on its ``ControlPath``).  Identity asks it once per process (a process's
command and sockets of this kind do not change while it lives), and only of ssh for the
socket look.
"""

from __future__ import annotations

import os
import socket

from tmuxlocd.core.shared import (
    DumpError,
    Shared,
    UnixSocket,
    client_inodes,
    cmdline_kind,
    listening_unix,
    may_be_ssh_master,
    parse_unix_dump,
    socket_inode,
    unix_dump_request,
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


NETLINK_SOCK_DIAG = 4


def unix_sockets() -> list[UnixSocket]:
    """Every unix socket of this network namespace, with its name and peer (one sock_diag
    dump, as ``ss -x`` makes).  OSError when the kernel refuses it."""
    with socket.socket(
        socket.AF_NETLINK, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC, NETLINK_SOCK_DIAG
    ) as nl:
        nl.settimeout(2.0)
        nl.sendall(unix_dump_request())
        out: list[UnixSocket] = []
        while True:
            found, done = parse_unix_dump(nl.recv(1 << 16))
            out += found
            if done:
                return out


def socket_inodes(pid: int) -> set[int]:
    """The inodes of the sockets process ``pid`` holds (empty when it cannot be read)."""
    base = f"/proc/{pid}/fd"
    out: set[int] = set()
    try:
        names = os.listdir(base)
    except OSError:
        return out
    for fd in names:
        try:
            inode = socket_inode(os.readlink(f"{base}/{fd}"))
        except OSError:
            continue
        if inode is not None:
            out.add(inode)
    return out


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


def holders(inodes: set[int]) -> list[int]:
    """This user's processes that hold any of the socket ``inodes`` (every process's
    descriptors are looked at: what ``ss -p`` does)."""
    if not inodes:
        return []
    return [pid for pid in own_processes() if socket_inodes(pid) & inodes]


def clients_of(server: int) -> list[int] | None:
    """The processes connected to the Unix sockets process ``server`` listens on (Codex's
    shared app-server: its TUIs), by the kernel's own pairing of the two ends (sock_diag's
    peer inode); None when it cannot be told (sock_diag refused, descriptors unreadable)."""
    mine = socket_inodes(server)
    if not mine:
        return None
    try:
        far = client_inodes(mine, unix_sockets())
    except (OSError, ValueError, DumpError):
        return None
    return [pid for pid in holders(far) if pid != server]


def servers() -> list[Shared]:
    """This user's running processes that serve several sessions by their command line
    (Codex's shared app-server, Cline's hub): for ``tmuxlocd doctor``."""
    return [server for pid in own_processes() if (server := by_cmdline(pid)) is not None]
