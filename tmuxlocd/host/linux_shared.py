"""Linux's view of a process's sockets (the ``linux`` host's, tmuxlocd.host.system): an ssh
connection master by its listening Unix socket (``/proc/<pid>/fd``, ``/proc/net/unix``), and
the clients of a shared server by the kernel's pairing of socket ends (``NETLINK_SOCK_DIAG``).
macOS has neither view in a form the portable host reads (libproc's ``PROC_PIDFDSOCKETINFO``
would give ``unsi_conn_so``): there the answer is "cannot tell".
"""

from __future__ import annotations

import os
import socket
import sys

from tmuxlocd.core.shared import (
    DumpError,
    Shared,
    UnixSocket,
    client_inodes,
    listening_unix,
    parse_unix_dump,
    socket_inode,
    unix_dump_request,
)
from tmuxlocd.host.linux import own_processes, read_all


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
        table = read_all("/proc/net/unix")
    except OSError:
        return None
    paths = listening_unix(table, inodes)
    return Shared("ssh_master", pid, tuple(p for p in paths if p)) if paths else None


NETLINK_SOCK_DIAG = 4


def unix_sockets() -> list[UnixSocket]:
    """Every unix socket of this network namespace, with its name and peer (one sock_diag
    dump, as ``ss -x`` makes).  OSError when the kernel refuses it."""
    if sys.platform == "linux":
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
    else:
        raise OSError("sock_diag is Linux's")


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
