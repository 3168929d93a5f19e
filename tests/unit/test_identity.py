"""Identity parsing: /proc stat and environ text, the ancestor walk, pty device numbers."""

from __future__ import annotations

import os
import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core.caller import (
    SHARED_ANCESTOR,
    ancestors,
    environ_pane,
    nearest_tty_ancestor,
    pane_id_hint,
    pts_path,
    reread_stat,
    serves_sessions,
)
from tmuxlocd.core.procstat import ProcStat, parse_stat, placed
from tmuxlocd.host.identity import (
    PeerFacts,
    peer_credentials,
    read_stat,
    tty_path,
)

# Field 7 is tty_nr; the rest of a real line follows it.
_TAIL = "0 -1 4194560 123 0 0 0 1 2 0 0 20 0 1 0 12345 1000 200 18446744073709551615"


@pytest.mark.parametrize(
    "comm",
    ["bash", "my prog", "a) S 9 9 9 1 (b", ")", "((", "x ) 1 2 3 4 5"],
    ids=["plain", "space", "fake-fields", "paren", "open-parens", "digits"],
)
def test_parse_stat_reads_after_the_last_paren(comm: str) -> None:
    line = f"4321 ({comm}) S 77 4321 4321 34816 {_TAIL}\n"
    stat = parse_stat(line)
    assert (stat.pid, stat.ppid, stat.tty_nr, stat.comm) == (4321, 77, 34816, comm)
    # _TAIL: field 8 (tpgid) is 0, 14 and 15 (utime, stime) are 0 and 1.
    assert (stat.state, stat.pgrp, stat.tpgid, stat.utime, stat.stime) == ("S", 4321, 0, 0, 1)


def test_parse_stat_of_this_process() -> None:
    with open(f"/proc/{os.getpid()}/stat") as f:
        st = parse_stat(f.read())
    assert st.pid == os.getpid()
    assert st.ppid == os.getppid()
    # What identity keeps: the fields that place the process (its CPU time moves meanwhile).
    assert read_stat(os.getpid()) == placed(st)


@pytest.mark.parametrize("text", ["", "garbage", "12 (x) S", "x (y) S 1 2 3 4"])
def test_parse_stat_rejects_what_is_not_a_stat_line(text: str) -> None:
    with pytest.raises((ValueError, IndexError)):
        parse_stat(text)


def test_read_stat_of_a_missing_process_is_none() -> None:
    assert read_stat(2**22 + 12345) is None


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("%3", "%3"),
        ("%120", "%120"),
        ("3", None),
        ("%", None),
        ("%x", None),
        ("", None),
        ("%3 ", None),
        ("%²", None),
    ],
)
def test_pane_id_hint(value: str, hint: str | None) -> None:
    assert pane_id_hint(value) == hint


@pytest.mark.parametrize(
    ("data", "hint"),
    [
        (b"TMUX_PANE=%3\0A=1\0", "%3"),
        (b"A=1\0TMUX_PANE=%12", "%12"),
        (b"A=1\0TMUX_PANE=%1\0TMUX_PANE=%2\0", "%1"),
        (b"XTMUX_PANE=%1\0", None),
        (b"A=TMUX_PANE=%1\0", None),
        (b"TMUX_PANE=\0", None),
        (b"", None),
    ],
)
def test_environ_pane(data: bytes, hint: str | None) -> None:
    assert environ_pane(data) == hint


def _table(*rows: tuple[int, int, int]) -> dict[int, ProcStat]:
    return {pid: ProcStat(pid, ppid, tty) for pid, ppid, tty in rows}


def test_ancestor_walk_finds_the_nearest_tty() -> None:
    table = _table((50, 40, 0), (40, 30, 0), (30, 20, 34817), (20, 1, 34818))
    assert nearest_tty_ancestor(50, table.get) == 34817


def test_ancestor_walk_ignores_the_process_itself() -> None:
    table = _table((50, 40, 34999), (40, 1, 34817))
    assert nearest_tty_ancestor(50, table.get) == 34817


def test_ancestor_walk_passes_over_the_callers_own_tty() -> None:
    # script/ssh -t: the caller and the shell above it share a new pty; the pane is above.
    table = _table((50, 40, 34999), (40, 30, 34999), (30, 20, 34817), (20, 1, 0))
    assert nearest_tty_ancestor(50, table.get, skip=34999) == 34817
    assert nearest_tty_ancestor(50, table.get) == 34999


def test_ancestor_walk_without_tty_ancestors() -> None:
    table = _table((50, 40, 0), (40, 1, 0))
    assert nearest_tty_ancestor(50, table.get) == 0


def test_ancestor_walk_stops_at_a_vanished_parent() -> None:
    table = _table((50, 40, 0))
    assert nearest_tty_ancestor(50, table.get) == 0
    assert nearest_tty_ancestor(99, table.get) == 0


# Codex's shared app-server as its daemon starts it (codex-rs/app-server-daemon), and the
# command lines that are not it.
@pytest.mark.parametrize(
    ("argv", "shared"),
    [
        (["codex", "app-server", "--listen", "unix://"], True),
        (
            [
                "~/.codex/packages/standalone/current/codex",
                "app-server",
                "--listen",
                "unix://",
                "--managed-daemon",
            ],
            True,
        ),
        (["codex", "--enable", "remote_control", "app-server", "--listen", "unix://"], True),
        (["codex", "app-server", "--listen=unix:///tmp/s.sock"], True),
        (["codex", "app-server", "--managed-daemon"], True),
        (["codex", "app-server", "--listen", "ws://127.0.0.1:4500"], True),
        (["codex", "app-server"], False),  # stdio: one client
        (["codex", "app-server", "--listen", "stdio://"], False),
        (["codex", "app-server", "pid-update-loop"], False),
        (["codex"], False),
        (["codex", "resume", "abc"], False),
        (["app-server", "--listen", "unix://"], False),  # the name of the program itself
        (["python3", "-c", "print()", "--listen", "unix://"], False),
        ([], False),
    ],
)
def test_serves_sessions(argv: list[str], shared: bool) -> None:
    cmdline = b"".join(a.encode() + b"\0" for a in argv)
    assert serves_sessions(cmdline) is shared


def test_ancestor_walk_stops_at_a_server_of_several_sessions() -> None:
    # hook (50) < codex app-server (40, setsid, no tty) < the first TUI (30, in a pane)
    table = _table((50, 40, 0), (40, 30, 0), (30, 20, 34817), (20, 1, 34817))
    assert nearest_tty_ancestor(50, table.get, shared={40}.__contains__) == SHARED_ANCESTOR
    assert nearest_tty_ancestor(50, table.get, shared={41}.__contains__) == 34817
    assert nearest_tty_ancestor(50, table.get) == 34817
    # the daemon re-parented to init: nothing either way, but said as it is
    table = _table((50, 40, 0), (40, 1, 0))
    assert nearest_tty_ancestor(50, table.get, shared={40}.__contains__) == SHARED_ANCESTOR
    # the caller itself is never asked; one with a tty before the server is its own pane
    table = _table((50, 40, 0), (40, 30, 34999), (30, 1, 0))
    assert nearest_tty_ancestor(50, table.get, shared={50, 30}.__contains__) == 34999
    # a server run in a pane: that pane is its starter's, not its client's
    table = _table((50, 40, 0), (40, 30, 34999), (30, 1, 34817))
    assert nearest_tty_ancestor(50, table.get, shared={40}.__contains__) == SHARED_ANCESTOR


def test_ancestors_are_the_walk_up_to_a_server_of_several_sessions() -> None:
    # hook (50) < hookclock (45) < codex app-server (40) < the first TUI (30) < shell (20)
    table = _table((50, 45, 0), (45, 40, 0), (40, 30, 0), (30, 20, 34817), (20, 1, 34817))
    assert ancestors(50, table.get, shared={40}.__contains__) == [45, 40]
    assert ancestors(50, table.get) == [45, 40, 30, 20]  # pid 1 left out
    assert ancestors(50, _table((50, 40, 0)).get) == [40]  # then a vanished parent
    assert ancestors(99, table.get) == []
    assert ancestors(50, _table((50, 40, 0), (40, 50, 0)).get, limit=5) == [40, 50, 40, 50, 40]


def test_ancestor_walk_survives_a_cycle() -> None:
    table = _table((50, 40, 0), (40, 50, 0))
    assert nearest_tty_ancestor(50, table.get) == 0


@pytest.mark.parametrize(
    ("tty_nr", "path"),
    [
        (0x20889C, "/dev/pts/668"),  # measured: minor above 255
        ((136 << 8) | 5, "/dev/pts/5"),
        ((137 << 8) | 1, "/dev/pts/257"),
        ((4 << 8) | 1, None),  # /dev/tty1, not a pty
        (0, None),
    ],
)
def test_pts_path(tty_nr: int, path: str | None) -> None:
    assert pts_path(tty_nr) == path


def test_tty_path_of_a_real_pty() -> None:
    master, slave = os.openpty()
    try:
        name = os.ttyname(slave)
        rdev = os.fstat(slave).st_rdev
        assert pts_path(rdev) == name
        assert tty_path(os.getpid(), rdev) == name
    finally:
        os.close(master)
        os.close(slave)


def test_peer_credentials_of_a_socketpair() -> None:
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        peer = peer_credentials(a)
    assert peer is not None
    assert (peer.pid, peer.uid, peer.gid) == (os.getpid(), os.getuid(), os.getgid())


def test_peer_credentials_of_something_else() -> None:
    assert peer_credentials(object()) is None
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # Not connected: the kernel has no peer to report (or reports nobody).
        peer = peer_credentials(s)
        assert peer is None or peer.pid == 0


@given(
    comm=st.text(
        alphabet=st.characters(blacklist_characters="\0\n", codec="utf-8"),
        max_size=16,
    ),
    ppid=st.integers(0, 2**22),
    session=st.integers(0, 2**22),
    tty_nr=st.integers(0, 2**31 - 1),
    starttime=st.integers(0, 2**40),
)
def test_a_reread_stat_line_gives_what_a_full_parse_gives(
    comm: str, ppid: int, session: int, tty_nr: int, starttime: int
) -> None:
    # PeerFacts parses a kept process's later stat lines only up to tty_nr.
    def line(ppid: int, session: int, tty_nr: int) -> bytes:
        fields = [str(ppid), "9", str(session), str(tty_nr)] + ["0"] * 14
        fields += [str(starttime), "1", "2"]
        return f"4321 ({comm}) S {' '.join(fields)}\n".encode()

    first = parse_stat(line(ppid, session, tty_nr))
    assert first == ProcStat(
        pid=4321,
        ppid=ppid,
        tty_nr=tty_nr,
        starttime=starttime,
        comm=comm,
        state="S",
        pgrp=9,
        tpgid=0,
        session=session,
    )
    assert reread_stat(line(ppid, session, tty_nr), first) == first
    # After setsid: a new session, no tty; after its parent ended: ppid 1.
    assert reread_stat(line(1, 4321, 0), first) == first._replace(ppid=1, tty_nr=0, session=4321)


def test_peer_facts_keep_the_file_of_the_process_first_read_only() -> None:
    facts = PeerFacts(os.getpid())
    first = facts.read()
    assert first.stat is not None and first.stat.pid == os.getpid()
    assert facts.read() == first  # the second read keeps the file, and reads the same
    facts.close()
    # Had the number been given to another process in between (another start time), the
    # file opened by number is not kept and nothing is said of the stranger.
    other = PeerFacts(os.getpid())
    mine = other.read()
    assert mine.stat is not None
    other._first = mine._replace(stat=mine.stat._replace(starttime=mine.stat.starttime + 1))
    assert other.read().stat is None
    assert other._fd is None
