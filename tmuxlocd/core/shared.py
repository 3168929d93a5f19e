"""Processes that speak for several panes: the pure part of tmuxlocd.host.shared.

A tty proves a caller's pane only when the process that asks (or whose hooks ask) serves
one pane.  Three kinds of process serve several, each seen once started from one pane:

- an **ssh connection master** (``ControlMaster``): every connection forwarded with ``-R``
  by any session that shares it comes out of the master, whose tty is the pane it was
  started in (or none, under ``ControlPersist``).  The kernel tells a master by its
  listening Unix socket (its ``ControlPath``), and nothing tells which session a forwarded
  connection belongs to;
- **Codex's shared app-server** (``codex app-server --listen unix://`` or
  ``--managed-daemon``): it runs the hooks and MCP servers of every TUI attached to it;
- **Cline's hub** (``cline --cline-hub-daemon``): it runs every later session's hooks.

Pure: command lines, ``comm`` and ``/proc/net/unix`` text in, decisions out.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Literal, NamedTuple

from tmuxlocd.core.procstat import ProcStat

Kind = Literal["ssh_master", "codex_app_server", "cline_hub"]

# /proc/net/unix's Flags column: __SO_ACCEPTCON, a socket that listen() was called on.
_ACCEPTCON = 0x10000


class Shared(NamedTuple):
    """A process that serves sessions in several panes: what it is, its pid, and the
    listening sockets it was told by (an ssh master's ``ControlPath``)."""

    kind: Kind
    pid: int
    paths: tuple[str, ...] = ()
    # False: an ssh this host cannot prove is no master (the portable host has no view of
    # its listening sockets), taken as one: fail safe, it places no one.
    proven: bool = True

    def hint(self) -> str:
        """One line for the user: what the process is and what to do about it."""
        if self.kind == "ssh_master" and not self.proven:
            return (
                f"the caller is ssh pid {self.pid}, which may be a connection master carrying "
                "the sessions of several panes: this system's host cannot see its listening "
                "sockets, so which pane a request is for cannot be told (see docs/macos.md)"
            )
        if self.kind == "ssh_master":
            where = f" (control socket {self.paths[0]})" if self.paths else ""
            return (
                f"the caller is ssh pid {self.pid}, a connection master{where}: connections "
                "forwarded by every ssh that shares it come from it, so which pane a "
                "request is for cannot be told; run the ssh that carries -R with "
                "-o ControlPath=none (ControlMaster=no still joins a running master)"
            )
        name = "Codex's shared app-server" if self.kind == "codex_app_server" else "Cline's hub"
        return (
            f"below pid {self.pid}, {name}, which runs the sessions of several panes: "
            "which pane this session is in cannot be told"
        )


def cmdline_kind(cmdline: bytes) -> Kind | None:
    """The kind of a process that serves several sessions, by its ``/proc/<pid>/cmdline``
    (NUL-separated); None for any other."""
    args = cmdline.rstrip(b"\0").split(b"\0")
    if b"--cline-hub-daemon" in args[1:]:
        return "cline_hub"
    if serves_sessions(args):
        return "codex_app_server"
    return None


def serves_sessions(args: list[bytes]) -> bool:
    """Whether ``args`` (a command line's words) are those of Codex's shared app-server.

    Codex's TUI starts it detached (``setsid``) as ``codex [--enable remote_control]
    app-server --listen unix://``, later with ``--managed-daemon`` (``command_args`` and
    ``start_inner`` in ``codex-rs/app-server-daemon/src/backend/``), and later TUIs attach to
    it over its control socket.  One listening on a WebSocket (``ws://``, ``wss://``) serves
    several clients too; one on stdio (an editor's, or a TUI's own) serves one and is not one
    of these."""
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


def may_be_ssh_master(comm: str) -> bool:
    """Whether a process by this ``comm`` is worth the look at its sockets: ssh only (the
    look reads its descriptors and ``/proc/net/unix``)."""
    return comm == "ssh"


def listening_unix(table: bytes, inodes: set[int]) -> list[str]:
    """The paths of the listening sockets among ``inodes`` in ``/proc/net/unix`` text
    (``Num RefCount Protocol Flags Type St Inode Path``); an unnamed one as ``""``."""
    out: list[str] = []
    for line in table.split(b"\n")[1:]:
        fields = line.split(None, 7)
        if len(fields) < 7:
            continue
        try:
            flags = int(fields[3], 16)
            inode = int(fields[6])
        except ValueError:
            continue
        if flags & _ACCEPTCON and inode in inodes:
            path = fields[7] if len(fields) > 7 else b""
            out.append(path.decode("utf-8", "replace"))
    return out


def socket_inode(link: str) -> int | None:
    """The inode of a ``/proc/<pid>/fd/N`` link to a socket (``socket:[12345]``)."""
    if link.startswith("socket:[") and link.endswith("]"):
        number = link[8:-1]
        if number.isdigit():
            return int(number)
    return None


# ----------------------------------------------------------------------------------------------
# Who is connected to a server: the kernel's unix sockets, as NETLINK_SOCK_DIAG dumps them
# (what ``ss -xp`` reads).  The request and the parse are pure; host/shared.py sends one.

NLMSG_HDR = struct.Struct("=IHHII")  # len, type, flags, seq, pid
NLMSG_DONE = 3
NLMSG_ERROR = 2
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 0x1
NLM_F_DUMP = 0x300
_UNIX_DIAG_REQ = struct.Struct("=BBHIIIII")  # family, protocol, pad, states, ino, show, cookie
_UNIX_DIAG_MSG = struct.Struct("=BBBBIII")  # family, type, state, pad, ino, cookie
_RTA = struct.Struct("=HH")  # len, type
UDIAG_SHOW_NAME = 0x01
UDIAG_SHOW_PEER = 0x04
UNIX_DIAG_NAME = 0
UNIX_DIAG_PEER = 2
AF_UNIX = 1
TCP_LISTEN = 10  # the state a listening unix socket is dumped with


class UnixSocket(NamedTuple):
    """One unix socket as sock_diag tells it: its inode, state, bound name (an accepted
    connection carries its listener's), and its peer's inode (0: none)."""

    inode: int
    state: int
    name: str
    peer: int


def unix_dump_request(seq: int = 1) -> bytes:
    """A sock_diag request for every unix socket, with its name and peer."""
    body = _UNIX_DIAG_REQ.pack(
        AF_UNIX, 0, 0, 0xFFFFFFFF, 0, UDIAG_SHOW_NAME | UDIAG_SHOW_PEER, 0xFFFFFFFF, 0xFFFFFFFF
    )
    head = NLMSG_HDR.pack(
        NLMSG_HDR.size + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, seq, 0
    )
    return head + body


class DumpError(Exception):
    """The kernel answered the dump with an error (its errno)."""


def parse_unix_dump(data: bytes) -> tuple[list[UnixSocket], bool]:
    """The sockets in one read of the dump's answer, and whether it was the last part
    (NLMSG_DONE).  Raises DumpError on an NLMSG_ERROR, ValueError on what is not one."""
    out: list[UnixSocket] = []
    offset = 0
    while offset + NLMSG_HDR.size <= len(data):
        length, kind, _flags, _seq, _pid = NLMSG_HDR.unpack_from(data, offset)
        if length < NLMSG_HDR.size or offset + length > len(data):
            raise ValueError(f"a netlink message of {length} bytes at {offset}")
        if kind == NLMSG_DONE:
            return out, True
        if kind == NLMSG_ERROR:
            (errno,) = struct.unpack_from("=i", data, offset + NLMSG_HDR.size)
            raise DumpError(-errno)
        if kind == SOCK_DIAG_BY_FAMILY:
            out.append(_unix_message(data[offset + NLMSG_HDR.size : offset + length]))
        offset += (length + 3) & ~3
    return out, False


def _unix_message(body: bytes) -> UnixSocket:
    _family, _type, state, _pad, inode, _c0, _c1 = _UNIX_DIAG_MSG.unpack_from(body, 0)
    name, peer = "", 0
    offset = _UNIX_DIAG_MSG.size
    while offset + _RTA.size <= len(body):
        length, kind = _RTA.unpack_from(body, offset)
        if length < _RTA.size:
            break
        value = body[offset + _RTA.size : offset + length]
        if kind == UNIX_DIAG_NAME:
            # A path, NUL-padded; an abstract name starts with NUL (shown as '@', as ss does).
            name = (
                ("@" + value[1:].decode("utf-8", "replace"))
                if value[:1] == b"\0"
                else (value.rstrip(b"\0").decode("utf-8", "replace"))
            )
        elif kind == UNIX_DIAG_PEER and len(value) >= 4:
            (peer,) = struct.unpack_from("=I", value)
        offset += (length + 3) & ~3
    return UnixSocket(inode, state, name, peer)


def client_inodes(server: set[int], sockets: list[UnixSocket]) -> set[int]:
    """The inodes at the far end of the connections a server accepted: ``server`` is the
    set of its socket inodes; an accepted connection is one of them that carries the name of
    one of its listening sockets (the kernel gives it its listener's address)."""
    mine = [s for s in sockets if s.inode in server]
    listening = {s.name for s in mine if s.state == TCP_LISTEN and s.name}
    return {s.peer for s in mine if s.state != TCP_LISTEN and s.name in listening and s.peer}


# ----------------------------------------------------------------------------------------------
# Binding a harness session to the one client of a shared server.
#
# A TUI that quits (or is killed) while its turn runs leaves that turn running in Codex's
# shared app-server (measured: its Stop hook ran after the TUI was gone), so "the server's
# one client now" is not "this session's client".  A session is bound when it is first seen
# (or starts anew: a resume) while exactly one client in one pane is connected, and is
# placed from then on by that client alone, while it is connected (the same pid and start
# time), however many others connect.  First seen with none or several: never placed (until
# it starts anew).

Binding = tuple[int, int]  # (pid, starttime) of the client; UNBINDABLE: none can be told
UNBINDABLE: Binding = (0, 0)


def choose_bound(
    bound: Binding | None,
    clients: Sequence[ProcStat],
    sole: int,
    *,
    rebind: bool = False,
) -> tuple[list[ProcStat], Binding]:
    """Of a shared server's ``clients``, those the session may be placed by, and its binding
    after this question: ``bound`` is its binding so far (None: never seen), ``sole`` the pid
    of the one client in one pane (0: none), ``rebind`` the session's start."""
    if bound is None or rebind:
        first = [c for c in clients if c.pid == sole]
        if not first:
            return [], UNBINDABLE if bound is None else bound
        lead = first[0]
        return first, (lead.pid, lead.starttime)
    if bound == UNBINDABLE:
        return [], bound
    return [c for c in clients if (c.pid, c.starttime) == bound], bound
