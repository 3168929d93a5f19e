"""macOS's shapes, parsed (tmuxlocd.core.darwin): byte fixtures laid out by hand at xnu's
offsets, not by the packer under test; then the packer against the parser on live records."""

from __future__ import annotations

import os
import struct

import pytest

from tmuxlocd.core.darwin import (
    KINFO_SIZE,
    comm_command,
    pack_kinfo,
    pack_procargs2,
    parse_kinfo,
    parse_lsof_writers,
    parse_xucred,
    split_procargs2,
    ttys_path,
)
from tmuxlocd.core.procstat import ProcStat, parse_stat


def kinfo_fixture(
    *,
    pid: int,
    ppid: int,
    pgid: int,
    tdev: int,
    tpgid: int,
    comm: bytes,
    stat: int = 2,
    start: tuple[int, int] = (1_765_000_000, 250_000),
) -> bytes:
    """A ``struct kinfo_proc`` as sysctl(KERN_PROC_PID) fills it on LP64 macOS (the fields
    read; the rest zero, as they would be of no use)."""
    buf = bytearray(KINFO_SIZE)
    struct.pack_into("=qi", buf, 0, *start)  # kp_proc.p_starttime (timeval)
    buf[36] = stat  # p_stat
    struct.pack_into("=i", buf, 40, pid)  # p_pid
    buf[243 : 243 + len(comm)] = comm  # p_comm[17]
    struct.pack_into("=ii", buf, 560, ppid, pgid)  # kp_eproc.e_ppid, e_pgid
    struct.pack_into("=h", buf, 568, 1)  # e_jobc
    struct.pack_into("=ii", buf, 572, tdev, tpgid)  # e_tdev, e_tpgid
    return bytes(buf)


def test_a_kinfo_proc_is_read_at_xnus_offsets() -> None:
    tdev = (16 << 24) | 3  # makedev(16, 3): /dev/ttys003
    data = kinfo_fixture(pid=4242, ppid=4200, pgid=4242, tdev=tdev, tpgid=4250, comm=b"claude\0")
    got = parse_kinfo(data, session=4100)
    assert got == ProcStat(
        pid=4242,
        ppid=4200,
        tty_nr=tdev,
        starttime=1_765_000_000_250_000,
        comm="claude",
        state="R",
        pgrp=4242,
        tpgid=4250,
        session=4100,
    )


def test_no_tty_and_a_zombie() -> None:
    data = kinfo_fixture(pid=7, ppid=1, pgid=7, tdev=-1, tpgid=0, comm=b"launchd", stat=5)
    got = parse_kinfo(data)
    assert got.tty_nr == 0  # NODEV: no controlling tty, as Linux's 0
    assert got.tpgid == -1  # no foreground group: as Linux says it
    assert got.state == "Z"  # SZOMB, which activity.decide reads as going away


def test_a_full_comm_and_a_short_record() -> None:
    data = kinfo_fixture(pid=1, ppid=0, pgid=1, tdev=-1, tpgid=0, comm=b"a-sixteen-chars!")
    assert parse_kinfo(data).comm == "a-sixteen-chars!"
    with pytest.raises(ValueError):
        parse_kinfo(b"")  # sysctl's answer for a process that is gone


def test_the_packer_round_trips_a_live_record() -> None:
    with open(f"/proc/{os.getpid()}/stat", "rb") as f:
        live = parse_stat(f.read())
    back = parse_kinfo(pack_kinfo(live), session=live.session)
    assert back == live._replace(utime=0, stime=0, tpgid=live.tpgid if live.tpgid > 0 else -1)


# A KERN_PROCARGS2 block as macOS lays it out: argc, the exec path, NUL padding, argv, the
# environment, an empty string, Apple's strings.
PROCARGS2 = (
    struct.pack("=i", 3)
    + b"/opt/homebrew/bin/node\0\0\0\0\0\0"
    + b"node\0/Users/ann/.npm/bin/codex\0--yolo\0"
    + b"HOME=/Users/ann\0TMUX_PANE=%12\0TERM=tmux-256color\0"
    + b"\0"
    + b"ptr_munge=\0main_stack=\0executable_file=0x1a,0x2b\0"
)


def test_procargs2_splits_into_argv_and_environment() -> None:
    argv, env = split_procargs2(PROCARGS2)
    assert argv == b"node\0/Users/ann/.npm/bin/codex\0--yolo\0"
    assert env == b"HOME=/Users/ann\0TMUX_PANE=%12\0TERM=tmux-256color\0"


def test_procargs2_of_a_restricted_process_has_no_environment() -> None:
    # macOS leaves the environment out of a CS_RESTRICT process's block.
    block = struct.pack("=i", 1) + b"/bin/ls\0\0ls\0\0"
    assert split_procargs2(block) == (b"ls\0", b"")
    assert split_procargs2(b"") == (b"", b"")
    assert split_procargs2(struct.pack("=i", -1) + b"x\0") == (b"", b"")


def test_an_apple_string_is_never_the_environment() -> None:
    block = struct.pack("=i", 1) + b"/bin/sh\0\0sh\0\0TMUX_PANE=%9\0"
    assert split_procargs2(block) == (b"sh\0", b"")


def test_the_procargs2_packer_round_trips() -> None:
    block = pack_procargs2(b"/usr/bin/python3", b"python3\0-c\0x y\0", b"A=1\0B=2\0")
    assert split_procargs2(block) == (b"python3\0-c\0x y\0", b"A=1\0B=2\0")
    assert split_procargs2(pack_procargs2(b"/x", b"", b"")) == (b"", b"")


def test_xucred() -> None:
    # struct xucred: cr_version, cr_uid, cr_ngroups, (pad), cr_groups[16]: 76 bytes.
    raw = struct.pack("=IIh2x16I", 0, 501, 2, 20, 12, *([0] * 14))
    assert len(raw) == 76
    assert parse_xucred(raw) == 501
    assert parse_xucred(struct.pack("=IIh2x16I", 1, 501, 0, *([0] * 16))) is None  # version
    assert parse_xucred(b"\0\0") is None


def test_ttys_path_and_the_command_rule() -> None:
    assert ttys_path((16 << 24) | 3) == "/dev/ttys003"
    assert ttys_path((16 << 24) | 511) == "/dev/ttys511"
    assert ttys_path(0) is None
    # tmux on macOS: the foreground group's p_comm, at most 15 characters.
    assert comm_command("a-sixteen-chars!") == "a-sixteen-chars"
    assert comm_command("vim") == "vim"


def test_lsof_writers() -> None:
    out = "p123\nf4\naw\nf5\nar\np456\nf3\nar\np789\nf9\nau\nf10\naw\n"
    assert parse_lsof_writers(out) == [123, 789]
    assert parse_lsof_writers("") == []
