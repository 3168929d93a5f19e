"""Test support: private tmux servers and waiting on conditions (never sleeping to wait)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from tests.tmuxbin import before_new_session

TMUX = shutil.which("tmux")


# ----------------------------------------------------------------------------------------------
# Server processes: a test never leaves one behind, even one that no longer answers.
#
# A tmux server can spin (100% CPU, answering nothing) with its socket already gone, so that
# neither ``kill-server`` nor a pid asked of it at teardown can reach it.  So its pid is
# recorded right after it starts, with the process's start time (a pid can be reused), and
# at teardown every recorded server still running, and every tmux process naming the
# private socket on its command line, is SIGKILLed.


def start_time(pid: int) -> int | None:
    """The process's start time (``/proc/<pid>/stat`` field 22), None if it is gone or a
    zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[19])


def tmux_processes(socket_path: str) -> dict[int, int]:
    """Processes of a tmux binary whose command line names ``socket_path`` (pid -> start
    time): the server started on it and any client left."""
    found: dict[int, int] = {}
    want = os.fsencode(socket_path)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if os.path.basename(argv[0]) == b"tmux" and want in argv:
            started = start_time(int(entry))
            if started is not None:
                found[int(entry)] = started
    return found


def _alive(processes: dict[int, int]) -> dict[int, int]:
    return {pid: t for pid, t in processes.items() if start_time(pid) == t}


def _wait_gone(processes: dict[int, int], timeout: float) -> dict[int, int]:
    deadline = time.monotonic() + timeout
    left = _alive(processes)
    while left and time.monotonic() < deadline:
        time.sleep(0.01)
        left = _alive(left)
    return left


def kill_leftovers(socket_path: str, recorded: dict[int, int], grace: float = 2.0) -> list[int]:
    """After ``kill-server``: SIGKILL the recorded server processes and the tmux processes of
    ``socket_path`` that are still there after ``grace`` seconds; the pids killed."""
    left = _wait_gone({**recorded, **tmux_processes(socket_path)}, grace)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    stuck = _wait_gone(left, 10.0)
    if stuck:
        raise AssertionError(f"tmux processes of {socket_path} survived SIGKILL: {sorted(stuck)}")
    return sorted(left)


def server_pid(argv: list[str]) -> int | None:
    """The pid of the server ``argv`` (a tmux command line minus the command) talks to."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    try:
        out = subprocess.run(
            [*argv, "display-message", "-p", "#{pid}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        ).stdout.strip()
    except subprocess.TimeoutExpired:
        return None
    return int(out) if out.isdigit() else None


class TmuxServer:
    """A private tmux server on its own socket (-S, under a short temp dir, null config).

    Every command goes through ``-S <socket>``: nothing here can reach the default server.
    """

    def __init__(self, directory: Path | None = None) -> None:
        assert TMUX is not None
        self.dir = directory or Path(tempfile.mkdtemp(prefix="tl-", dir="/tmp"))
        self.name = f"t{uuid.uuid4().hex[:8]}"
        self.socket_path = str(self.dir / self.name)
        self.pids: dict[int, int] = {}  # every server started here: pid -> start time
        self.killed: list[int] = []  # pids that had to be SIGKILLed at teardown

    def argv(self, *args: str) -> list[str]:
        assert TMUX is not None
        return [TMUX, "-S", self.socket_path, "-f", os.devnull, *args]

    def run(self, *args: str, check: bool = True) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        proc = subprocess.run(
            self.argv(*args), capture_output=True, text=True, env=env, timeout=20, check=False
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def start(self, session: str = "main", *, width: int = 160, height: int = 48) -> None:
        self.run(
            *before_new_session(),
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            str(width),
            "-y",
            str(height),
        )
        self.record_pid()
        # Keep tests deterministic: no automatic renames as shells start.
        self.run("set-option", "-g", "automatic-rename", "off")
        self.run("set-window-option", "-g", "automatic-rename", "off")

    def record_pid(self) -> int | None:
        """Note the server's pid right after it started (see ``kill_leftovers``)."""
        assert TMUX is not None
        pid = server_pid([TMUX, "-S", self.socket_path, "-f", os.devnull])
        started = start_time(pid) if pid is not None else None
        if pid is not None and started is not None:
            self.pids[pid] = started
        return pid

    def display(self, target: str, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", target, fmt).rstrip("\n")

    def pane_rows(self) -> set[tuple[str, ...]]:
        out = self.run(
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{window_id} #{pane_index} #{pane_active} #{pane_tty} #{pane_pid} "
            "#{pane_left} #{pane_top} #{pane_width} #{pane_height}",
        )
        return {tuple(line.split(" ")) for line in out.splitlines() if line}

    def alive(self) -> bool:
        return self.run("list-sessions", check=False) != "" or os.path.exists(self.socket_path)

    def kill(self) -> None:
        try:
            if os.path.exists(self.socket_path):
                try:
                    self.run("kill-server", check=False)
                except subprocess.TimeoutExpired:
                    pass  # a server stuck in a loop answers nothing: killed below
            self.killed += kill_leftovers(self.socket_path, self.pids)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)


# ----------------------------------------------------------------------------------------------
# Waiting: on a condition, with a deadline, never a blind sleep.  One rule for both kinds of
# caller: the predicate is tried first, then every ``interval`` until ``timeout`` seconds
# have passed, and then the failure names what was awaited.


class _Deadline:
    def __init__(self, timeout: float, what: str) -> None:
        self.timeout = timeout
        self.what = what
        self.end = time.monotonic() + timeout

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise AssertionError(f"timed out after {self.timeout} s waiting for {self.what}")


async def wait_until(
    predicate: Callable[[], bool | Awaitable[bool]],
    timeout: float = 10.0,
    what: str = "condition",
    *,
    interval: float = 0.01,
) -> None:
    """Poll ``predicate`` (plain or async) until it is true; fail after ``timeout`` s."""
    deadline = _Deadline(timeout, what)
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        deadline.check()
        await asyncio.sleep(interval)


def poll(
    predicate: Callable[[], bool],
    timeout: float = 10.0,
    what: str = "condition",
    *,
    interval: float = 0.01,
) -> None:
    """``wait_until`` for code outside an event loop (it blocks)."""
    deadline = _Deadline(timeout, what)
    while not predicate():
        deadline.check()
        time.sleep(interval)
