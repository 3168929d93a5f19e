"""Processes that speak for several panes (tmuxlocd.core.shared, tmuxlocd.host.shared): the
sock_diag dump parsed from bytes, the session bindings as a property, and the kernel's
pairing of a real server's accepted sockets with its real clients."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.core.shared import (
    NLMSG_DONE,
    NLMSG_HDR,
    SOCK_DIAG_BY_FAMILY,
    TCP_LISTEN,
    UNBINDABLE,
    UNIX_DIAG_NAME,
    UNIX_DIAG_PEER,
    DumpError,
    Shared,
    UnixSocket,
    choose_bound,
    client_inodes,
    cmdline_kind,
    listening_unix,
    parse_unix_dump,
    socket_inode,
    unix_dump_request,
)
from tmuxlocd.host import linux_shared, shared
from tmuxlocd.host.system import HOST


def _attr(kind: int, value: bytes) -> bytes:
    raw = struct.pack("=HH", 4 + len(value), kind) + value
    return raw + b"\0" * (-len(raw) % 4)


def _message(inode: int, state: int, name: bytes = b"", peer: int = 0) -> bytes:
    body = struct.pack("=BBBBIII", 1, 1, state, 0, inode, 0, 0)
    if name:
        body += _attr(UNIX_DIAG_NAME, name)
    if peer:
        body += _attr(UNIX_DIAG_PEER, struct.pack("=I", peer))
    return NLMSG_HDR.pack(NLMSG_HDR.size + len(body), SOCK_DIAG_BY_FAMILY, 2, 1, 0) + body


DONE = NLMSG_HDR.pack(NLMSG_HDR.size + 4, NLMSG_DONE, 2, 1, 0) + b"\0" * 4


def test_a_dump_parsed_from_its_bytes() -> None:
    data = (
        _message(10, TCP_LISTEN, b"/run/cs.sock")
        + _message(11, 1, b"/run/cs.sock", peer=21)
        + _message(21, 1, peer=11)
        + _message(30, 1, b"\0abstract")
    )
    sockets, done = parse_unix_dump(data)
    assert not done
    assert sockets == [
        UnixSocket(10, TCP_LISTEN, "/run/cs.sock", 0),
        UnixSocket(11, 1, "/run/cs.sock", 21),
        UnixSocket(21, 1, "", 11),
        UnixSocket(30, 1, "@abstract", 0),
    ]
    assert parse_unix_dump(DONE) == ([], True)
    # The server holds 10 (listening) and 11 (accepted): its client is at 21.
    assert client_inodes({10, 11}, sockets) == {21}
    assert client_inodes({21}, sockets) == set()  # a client accepted nothing


def test_a_dump_error_and_garbage() -> None:
    error = NLMSG_HDR.pack(NLMSG_HDR.size + 4, 2, 0, 1, 0) + struct.pack("=i", -13)
    with pytest.raises(DumpError):
        parse_unix_dump(error)
    with pytest.raises(ValueError):
        parse_unix_dump(NLMSG_HDR.pack(4, 20, 0, 1, 0))
    assert len(unix_dump_request()) == NLMSG_HDR.size + 24


def test_proc_net_unix_listeners_and_fd_links() -> None:
    table = (
        b"Num       RefCount Protocol Flags    Type St Inode Path\n"
        b"0000000000000000: 00000002 00000000 00010000 0001 01 4242 /tmp/cm-abc\n"
        b"0000000000000000: 00000003 00000000 00000000 0001 03 4243 /tmp/cm-abc\n"
        b"0000000000000000: 00000002 00000000 00010000 0001 01 5555\n"
        b"garbage\n"
    )
    assert listening_unix(table, {4242, 4243}) == ["/tmp/cm-abc"]
    assert listening_unix(table, {5555}) == [""]
    assert listening_unix(table, {4243}) == []
    assert socket_inode("socket:[4242]") == 4242
    assert socket_inode("pipe:[4242]") is None and socket_inode("socket:[x]") is None


@pytest.mark.parametrize(
    ("argv", "kind"),
    [
        (["cline", "--cline-hub-daemon", "--port", "25463"], "cline_hub"),
        (["codex", "app-server", "--listen", "unix://"], "codex_app_server"),
        (["codex", "app-server"], None),
        (["ssh", "-M", "host"], None),
    ],
)
def test_command_lines_of_shared_servers(argv: list[str], kind: str | None) -> None:
    assert cmdline_kind(b"\0".join(a.encode() for a in argv) + b"\0") == kind


def _stat(pid: int, start: int = 0) -> ProcStat:
    return ProcStat(pid, 1, 34816 + pid, start or pid * 10, session=pid)


@given(
    events=st.lists(
        st.tuples(
            st.sets(st.integers(1, 4)),  # the clients connected at this hook
            st.booleans(),  # whether exactly one of them is in one pane (the sole one)
            st.booleans(),  # the session's start (rebind)
        ),
        min_size=1,
        max_size=8,
    )
)
def test_a_session_is_placed_only_by_the_client_it_began_with(
    events: list[tuple[set[int], bool, bool]],
) -> None:
    """Across any sequence of hooks: a session is placed by one client at most, only by the
    one that was the sole client when it (last) started, and never once bound otherwise."""
    bound = None
    began_with: int | None = None  # the client the session last began beside, alone
    for connected, has_sole, start in events:
        clients = [_stat(p) for p in sorted(connected)]
        sole = clients[0].pid if clients and has_sole and len(clients) == 1 else 0
        first_seen = bound is None
        chosen, bound = choose_bound(bound, clients, sole, rebind=start)
        if first_seen or start:
            if sole:
                began_with = sole
            elif first_seen:
                began_with = None
        assert len(chosen) <= 1
        if chosen:
            assert chosen[0].pid == began_with and chosen[0].pid in connected
        if began_with is None:
            assert chosen == [] and bound == UNBINDABLE


def test_a_reused_pid_is_not_the_bound_client() -> None:
    chosen, bound = choose_bound(None, [_stat(7, 100)], 7)
    assert chosen == [_stat(7, 100)] and bound == (7, 100)
    assert choose_bound(bound, [_stat(7, 999)], 7) == ([], bound)  # another process as 7
    assert choose_bound(bound, [_stat(7, 100), _stat(8)], 0)[0] == [_stat(7, 100)]


# ------------------------------------------------------------------------------ the kernel

SERVER = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])
s.listen(8)
print("ready", flush=True)
conns = []
for line in sys.stdin:
    conns.append(s.accept()[0])
    print("accepted", flush=True)
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    path = str(tmp_path / "srv.sock")
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    try:
        yield proc, path
    finally:
        proc.kill()
        proc.wait()


def _connect(proc: subprocess.Popen[str], path: str) -> socket.socket:
    assert proc.stdin is not None and proc.stdout is not None
    client = socket.socket(socket.AF_UNIX)
    client.connect(path)
    proc.stdin.write("accept\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "accepted\n"
    return client


def test_the_clients_of_a_real_server(server: tuple[subprocess.Popen[str], str]) -> None:
    proc, path = server
    clients_of = linux_shared.clients_of
    assert clients_of(proc.pid) == []  # listening, nobody connected
    with _connect(proc, path):
        assert clients_of(proc.pid) == [os.getpid()]  # this test process
        # ... and not a process that merely holds a socket of its own.
        with socket.socket(socket.AF_UNIX):
            assert clients_of(proc.pid) == [os.getpid()]
        # The host's answer: the same on Linux's; the portable host cannot tell (None), so
        # that no client places anyone.
        assert shared.clients_of(proc.pid) == ([os.getpid()] if HOST.name == "linux" else None)
    assert clients_of(proc.pid) == []  # closed: the server's end has no peer now
    assert clients_of(2**22 + 7) is None  # no such process


def test_an_ssh_master_is_told_by_its_listening_socket(
    server: tuple[subprocess.Popen[str], str],
) -> None:
    proc, path = server
    master = linux_shared.ssh_master(proc.pid)
    assert master is not None and master.kind == "ssh_master" and master.paths == (path,)
    assert linux_shared.ssh_master(os.getpid()) is None  # listens on nothing
    assert shared.peer(proc.pid, "python3") is None  # only ssh is looked at
    if HOST.name == "linux":
        assert shared.peer(proc.pid, "ssh") == master
    else:
        # The portable host cannot see listening sockets: every ssh may be a master.
        assert shared.peer(proc.pid, "ssh") == Shared("ssh_master", proc.pid, (), proven=False)
        assert shared.peer(os.getpid(), "ssh") is not None
