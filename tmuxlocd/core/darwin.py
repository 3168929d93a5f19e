"""What macOS's process table and sockets say, parsed: the pure part of tmuxlocd.host.darwin.

The bytes come from ``sysctl(KERN_PROC_PID)`` (a ``struct kinfo_proc``), ``sysctl(KERN_PROCARGS2)``
(argc, the exec path, argv, the environment) and ``getsockopt(LOCAL_PEERCRED)`` (a ``struct
xucred``); ``lsof -F pa`` says who has a file open and how.  The portable host on Linux packs
what ``/proc`` says into the same shapes (``pack_kinfo``, ``pack_procargs2``), so that every
parser here runs under the whole test suite on Linux too, not only on byte fixtures.

Layouts from xnu (``bsd/sys/sysctl.h``, ``bsd/sys/proc.h``, ``bsd/sys/ucred.h``) on an LP64 ABI
(arm64 and x86_64 alike): ``kinfo_proc`` is 648 bytes; ``p_starttime`` (a ``timeval``) at 0,
``p_stat`` at 36, ``p_pid`` 40, ``p_comm`` 243 (17 bytes), ``e_ppid`` 560, ``e_pgid`` 564,
``e_tdev`` 572, ``e_tpgid`` 576.  ``doctor --host`` compares each with a POSIX truth on the
machine it runs on.
"""

from __future__ import annotations

import struct

from tmuxlocd.core.procstat import ProcStat

KINFO_SIZE = 648
_STARTTIME = struct.Struct("=qi")  # tv_sec (time_t), tv_usec (suseconds_t, int32)
_STAT_AT = 36
_PID = struct.Struct("=i")
_PID_AT = 40
_COMM_AT = 243
_COMM_LEN = 17  # MAXCOMLEN + 1
_EPROC = struct.Struct("=ii4xii")  # e_ppid, e_pgid, (e_jobc), e_tdev, e_tpgid
_EPROC_AT = 560

NODEV = -1  # (dev_t)-1: no controlling tty
# p_stat (bsd/sys/proc.h): SIDL 1, SRUN 2, SSLEEP 3, SSTOP 4, SZOMB 5; as proc(5)'s letters.
_STATES = {1: "I", 2: "R", 3: "S", 4: "T", 5: "Z"}
_LETTERS = {v: k for k, v in _STATES.items()}


def parse_kinfo(data: bytes, session: int = 0) -> ProcStat:
    """A ``struct kinfo_proc`` as a ProcStat.  ``tty_nr`` is ``e_tdev`` (0 for NODEV: no
    tty), the same number ``stat(2)`` gives as the tty's ``st_rdev``; ``starttime`` is
    ``p_starttime`` in microseconds; ``session`` is not in the record (``e_sess`` is a kernel
    pointer) and is given by the caller (``getsid``).  ValueError on a short record (the
    process is gone: sysctl returns no bytes)."""
    if len(data) < KINFO_SIZE:
        raise ValueError(f"a kinfo_proc is {KINFO_SIZE} bytes, not {len(data)}")
    sec, usec = _STARTTIME.unpack_from(data, 0)
    (pid,) = _PID.unpack_from(data, _PID_AT)
    ppid, pgrp, tdev, tpgid = _EPROC.unpack_from(data, _EPROC_AT)
    comm = data[_COMM_AT : _COMM_AT + _COMM_LEN].split(b"\0", 1)[0]
    return ProcStat(
        pid=pid,
        ppid=ppid,
        tty_nr=0 if tdev == NODEV else tdev,
        starttime=sec * 1_000_000 + usec,
        comm=comm.decode("utf-8", "replace"),
        state=_STATES.get(data[_STAT_AT], "?"),
        pgrp=pgrp,
        # No tty: 0 on macOS, -1 on Linux; activity.decide takes either as "going away".
        tpgid=tpgid if tpgid > 0 else -1,
        session=session,
    )


def kinfo_pids(data: bytes) -> list[int]:
    """The pids of an array of ``kinfo_proc`` (``sysctl(KERN_PROC_UID)``'s answer)."""
    return [
        _PID.unpack_from(data, at + _PID_AT)[0]
        for at in range(0, len(data) - KINFO_SIZE + 1, KINFO_SIZE)
    ]


def pack_kinfo(stat: ProcStat) -> bytes:
    """The ``kinfo_proc`` bytes that ``parse_kinfo`` reads back as ``stat`` (but its CPU
    times and ``session``): fixtures, and the portable host's records on Linux."""
    buf = bytearray(KINFO_SIZE)
    _STARTTIME.pack_into(buf, 0, *divmod(stat.starttime, 1_000_000))
    buf[_STAT_AT] = _LETTERS.get(stat.state, 3)
    _PID.pack_into(buf, _PID_AT, stat.pid)
    comm = stat.comm.encode()[: _COMM_LEN - 1]
    buf[_COMM_AT : _COMM_AT + len(comm)] = comm
    tdev = stat.tty_nr if stat.tty_nr else NODEV
    _EPROC.pack_into(buf, _EPROC_AT, stat.ppid, stat.pgrp, tdev, max(stat.tpgid, 0))
    return bytes(buf)


_ARGC = struct.Struct("=i")


def split_procargs2(data: bytes) -> tuple[bytes, bytes]:
    """``KERN_PROCARGS2``'s block as (argv, environment), each NUL-separated as Linux's
    ``cmdline`` and ``environ`` are: ``int argc``, the exec path, NUL padding, ``argc``
    strings, then the environment up to an empty string (Apple's own strings follow it and
    are left out).  (b"", b"") for what is not such a block, or one without argv."""
    if len(data) < _ARGC.size:
        return b"", b""
    (argc,) = _ARGC.unpack_from(data, 0)
    end = data.find(b"\0", _ARGC.size)  # the exec path
    if argc <= 0 or end < 0:
        # No argv: the padding after the exec path runs into the empty string that ends an
        # empty environment, and Apple's strings would pass for one.  Nothing, then.
        return b"", b""
    pos = end
    while pos < len(data) and data[pos] == 0:
        pos += 1
    args: list[bytes] = []
    while len(args) < argc and pos < len(data):
        nul = data.find(b"\0", pos)
        nul = len(data) if nul < 0 else nul
        args.append(data[pos:nul])
        pos = nul + 1
    env: list[bytes] = []
    while pos < len(data):
        nul = data.find(b"\0", pos)
        nul = len(data) if nul < 0 else nul
        if nul == pos:
            break  # the empty string before Apple's strings
        env.append(data[pos:nul])
        pos = nul + 1
    joined = b"\0".join(args) + b"\0" if args else b""
    return joined, b"\0".join(env) + b"\0" if env else b""


def pack_procargs2(exec_path: bytes, argv: bytes, env: bytes) -> bytes:
    """The ``KERN_PROCARGS2`` block of a process with this argv and environment (each
    NUL-separated): fixtures, and the portable host's reads on Linux."""
    args = [a for a in argv.split(b"\0")]
    if args and args[-1] == b"":
        args.pop()
    head = _ARGC.pack(len(args)) + exec_path + b"\0" * (8 - len(exec_path) % 8)
    body = b"".join(a + b"\0" for a in args)
    envs = b"".join(e + b"\0" for e in env.split(b"\0") if e)
    return head + body + envs + b"\0ptr_munge=\0main_stack=\0"


_XUCRED = struct.Struct("=IIh")  # cr_version, cr_uid, cr_ngroups
XUCRED_SIZE = 76  # + gid_t cr_groups[16], with padding
XUCRED_VERSION = 0


def parse_xucred(data: bytes) -> int | None:
    """The uid of a ``struct xucred`` (``LOCAL_PEERCRED``), None if not one."""
    if len(data) < _XUCRED.size:
        return None
    version, uid, _ = _XUCRED.unpack_from(data, 0)
    return uid if version == XUCRED_VERSION else None


def ttys_path(dev: int) -> str | None:
    """The ``/dev/ttysNNN`` path a pty replica ``dev`` would have (its minor, ``makedev(x, y)
    = x << 24 | y``; the major is given out at boot, so only the minor is read)."""
    if dev <= 0:
        return None
    return f"/dev/ttys{dev & 0xFFFFFF:03d}"


def comm_command(comm: str) -> str:
    """What tmux on macOS calls a pane's command (``osdep-darwin.c``): the foreground group's
    ``p_comm`` as ``PROC_PIDT_SHORTBSDINFO`` gives it, at most 15 characters."""
    return comm[:15]


def parse_lsof_writers(text: str) -> list[int]:
    """The pids that ``lsof -F pa`` shows with a descriptor open for writing (access ``w`` or
    ``u``): its output is a ``p<pid>`` line, then an ``a<mode>`` line per descriptor."""
    out: list[int] = []
    pid = 0
    for line in text.splitlines():
        if line.startswith("p") and line[1:].isdigit():
            pid = int(line[1:])
        elif line[:1] == "a" and pid and ("w" in line or "u" in line) and pid not in out:
            out.append(pid)
    return out
