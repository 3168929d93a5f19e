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

from typing import Literal, NamedTuple

Kind = Literal["ssh_master", "codex_app_server", "cline_hub"]

# /proc/net/unix's Flags column: __SO_ACCEPTCON, a socket that listen() was called on.
_ACCEPTCON = 0x10000


class Shared(NamedTuple):
    """A process that serves sessions in several panes: what it is, its pid, and the
    listening sockets it was told by (an ssh master's ``ControlPath``)."""

    kind: Kind
    pid: int
    paths: tuple[str, ...] = ()

    def hint(self) -> str:
        """One line for the user: what the process is and what to do about it."""
        if self.kind == "ssh_master":
            where = f" (control socket {self.paths[0]})" if self.paths else ""
            return (
                f"the caller is ssh pid {self.pid}, a connection master{where}: connections "
                "forwarded by every ssh that shares it come from it, so which pane a "
                "request is for cannot be told; run the ssh that carries -R with "
                "-o ControlMaster=no"
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
