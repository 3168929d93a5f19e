"""``tmuxlocd doctor --host``: each fact the host reads, for this process and two children,
beside what POSIX says of the same thing.

The portable host's macOS leaves (tmuxlocd.host.darwin: sysctl offsets, ``LOCAL_PEERPID``,
kqueue) are type-checked on Linux but only run on a Mac: this is the one command whose
output proves or disproves them there, for a bug report (docs/macos.md).  Each check is a
row: the fact, the host's answer, POSIX's, and ``ok``, ``FAIL`` or ``-`` (nothing to compare
with: no tty, not in tmux).  Exit status 1 when a row fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

from tmuxlocd.core.caller import environ_pane, pane_id_hint
from tmuxlocd.host.paths import default_socket_path
from tmuxlocd.host.sockets import socket_dir, socket_from_tmux_env
from tmuxlocd.host.system import HOST, Host

OK, FAIL, NONE = "ok", "FAIL", "-"
# A child that connects to the socket named by argv[1], says one byte, and waits for its
# stdin to close.
CHILD = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_UNIX)\n"
    "s.connect(sys.argv[1]) if len(sys.argv) > 1 else None\n"
    "s.sendall(b'!') if len(sys.argv) > 1 else None\n"
    "sys.stdin.read()\n"
)


@dataclass(frozen=True)
class Row:
    fact: str
    host: str
    posix: str
    status: str


def _row(fact: str, host: object, posix: object, *, compare: bool = True) -> Row:
    if not compare:
        return Row(fact, str(host), str(posix), NONE)
    return Row(fact, str(host), str(posix), OK if host == posix else FAIL)


def _tty_fd() -> int | None:
    for fd in (0, 1, 2):
        if os.isatty(fd):
            return fd
    return None


def own_rows(host: Host) -> list[Row]:
    """What the host says of this process, beside os.get*()."""
    me = os.getpid()
    rec = host.record(me)
    if rec is None:
        return [Row("record(self)", "None", f"pid {me}", FAIL)]
    rows = [
        _row("record.pid", rec.pid, me),
        _row("record.ppid", rec.ppid, os.getppid()),
        _row("record.pgrp", rec.pgrp, os.getpgrp()),
        _row("record.session", rec.session, os.getsid(0)),
        _row("record.starttime", rec.starttime, "> 0", compare=False),
        _row("record.comm", rec.comm, os.path.basename(sys.executable), compare=False),
    ]
    fd = _tty_fd()
    if fd is None:
        rows.append(_row("record.tty_nr", rec.tty_nr, "no tty on 0-2", compare=False))
    else:
        path = os.ttyname(fd)
        dev = os.stat(path).st_rdev
        rows += [
            _row("record.tty_nr", rec.tty_nr, dev),
            _row("record.tpgid", rec.tpgid, os.tcgetpgrp(fd)),
            _row("tty_path", host.tty_path(me, dev), path),
        ]
    argv = [os.fsdecode(a) for a in host.cmdline(me).rstrip(b"\0").split(b"\0")]
    rows.append(_row("cmdline", shlex.join(argv), shlex.join(sys.orig_argv)))
    env = host.environ(me)
    hint = pane_id_hint(os.environ.get("TMUX_PANE", ""))
    rows.append(_row("environ TMUX_PANE", environ_pane(env) if env else None, hint))
    return rows


async def _child_rows(host: Host) -> list[Row]:
    """A child over a Unix socket: the peer the host reads; its record; its exit told."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="tmuxlocd-host-") as tmp:
        path = os.path.join(tmp, "s")
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(path)
            listener.listen(1)
            listener.settimeout(10)
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-S", "-c", CHILD, path, stdin=subprocess.PIPE
            )
            try:
                conn, _ = await asyncio.to_thread(listener.accept)
                with conn:
                    conn.settimeout(10)
                    conn.recv(1)
                    got = host.peer(conn)
                rows.append(
                    _row("peer (pid, uid)", got[:2] if got else None, (child.pid, os.getuid()))
                )
                rec = host.record(child.pid)
                rows.append(_row("child record.ppid", rec.ppid if rec else None, os.getpid()))
                told = asyncio.Event()
                watch = host.watch_exit(child.pid, told.set)
                rows.append(_row("exit watch registered", watch is not None, True))
                started = time.monotonic()
                assert child.stdin is not None
                child.stdin.close()
                try:
                    await asyncio.wait_for(told.wait(), 5)
                    took = f"told in {(time.monotonic() - started) * 1000:.1f} ms"
                except TimeoutError:
                    took = "not told within 5 s"
                await child.wait()
                rows.append(_row("exit watch", took.startswith("told"), True))
                rows.append(Row("exit watch latency", took, "child exited", NONE))
                if watch is not None:
                    watch.cancel()
            finally:
                if child.returncode is None:
                    child.kill()
                    await child.wait()
    return rows


def place_rows(host: Host) -> list[Row]:
    """Where things are: tmux's socket directory (its own spelling, in a pane), the daemon's
    default socket (within macOS's 104-byte sun_path), the listen backlog."""
    rows = []
    tmux = socket_from_tmux_env(os.environ.get("TMUX"))
    ours = socket_dir()
    if tmux is not None:
        rows.append(_row("tmux socket dir", ours, os.path.dirname(tmux)))
    else:
        rows.append(_row("tmux socket dir", ours, "not in tmux", compare=False))
    default = default_socket_path()
    rows.append(_row("daemon socket < 104 bytes", len(os.fsencode(default)) < 104, True))
    rows.append(Row("daemon socket", default, "", NONE))
    rows.append(Row("listen backlog", str(host.backlog()), "", NONE))
    return rows


def check(host: Host = HOST) -> dict[str, object]:
    rows = own_rows(host) + asyncio.run(_child_rows(host)) + place_rows(host)
    return {
        "host": host.name,
        "platform": sys.platform,
        "python": sys.version.split()[0],
        "checks": [asdict(r) for r in rows],
    }


def run(as_json: bool = False, out: Callable[[str], None] = print) -> int:
    report = check()
    rows = report["checks"]
    assert isinstance(rows, list)
    if as_json:
        out(json.dumps(report, indent=2))
    else:
        out(f"host {report['host']} on {report['platform']} (Python {report['python']})")
        width = max(len(r["fact"]) for r in rows)
        for r in rows:
            posix = f"  posix={r['posix']}" if r["posix"] else ""
            out(f"{r['status']:<4} {r['fact']:<{width}}  host={r['host']}{posix}")
    return 1 if any(r["status"] == FAIL for r in rows) else 0
