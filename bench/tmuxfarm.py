"""Private tmux servers of a given number of panes, and control-mode peers for them.

Every tmux command here names the server's own socket (``-S``) and no config file: nothing
can reach a server the benchmark did not start.  Panes run ``sleep`` (no shell), so 1,000
panes cost little memory and no CPU.  Windows are large (400x200) and re-tiled after each
split, because ``split-window`` fails once panes get too small.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

PROBE_PANES = 4  # the probe's window: the probe and three others (B6 asks for <= 4)
PANE_CMD = ("sleep", "1000000")
WIDTH, HEIGHT = 400, 200

# What an agent lists to learn where things are: every location-related format variable.
LOCATION_FIELDS = (
    "session_id",
    "session_name",
    "session_attached",
    "session_windows",
    "window_id",
    "window_index",
    "window_name",
    "window_active",
    "window_zoomed_flag",
    "window_layout",
    "window_visible_layout",
    "window_panes",
    "window_width",
    "window_height",
    "window_flags",
    "pane_id",
    "pane_index",
    "pane_active",
    "pane_tty",
    "pane_pid",
    "pane_left",
    "pane_top",
    "pane_right",
    "pane_bottom",
    "pane_width",
    "pane_height",
    "pane_at_left",
    "pane_at_right",
    "pane_at_top",
    "pane_at_bottom",
    "pane_dead",
    "pane_in_mode",
    "pane_current_command",
    "pane_current_path",
    "pane_title",
)
# TAB: tmux 3.4+ escapes other control characters in command output (\037 for \x1f).
SEP = "\t"


def clean_env() -> dict[str, str]:
    """Our environment minus tmux's: a command must never find an outer server."""
    return {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}


def plan(total: int) -> list[list[int]]:
    """Pane counts per window, per session; session 0 starts with the probe's window."""
    if total < PROBE_PANES + 2:
        raise ValueError(f"need at least {PROBE_PANES + 2} panes")
    rest = total - PROBE_PANES
    per = 3 if total <= 20 else 10 if total <= 200 else 25
    windows = [per] * (rest // per) + ([rest % per] if rest % per else [])
    nsess = max(2, math.ceil((len(windows) + 1) / 8))
    sessions: list[list[int]] = [[PROBE_PANES]] + [[] for _ in range(nsess - 1)]
    for i, count in enumerate(windows):
        sessions[(i + 1) % nsess].append(count)
    return [s for s in sessions if s]


class Farm:
    """One private tmux server holding ``total`` panes, one of them running the probe."""

    def __init__(self, tmux: str, total: int) -> None:
        self.tmux = tmux
        self.total = total
        # Short path: Unix socket paths are limited to about 100 bytes.
        self.dir = Path(tempfile.mkdtemp(prefix="tlb-", dir="/tmp"))
        self.socket = str(self.dir / "tmux")
        self.env = clean_env()
        self.pid = 0

    def argv(self, *args: str) -> list[str]:
        return [self.tmux, "-S", self.socket, "-f", os.devnull, *args]

    def run(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run(
            self.argv(*args),
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:3])} ...: {proc.stderr.strip()}")
        return proc.stdout

    async def arun(self, *args: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            *self.argv(*args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env,
        )
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args[:3])} ...: {err.decode().strip()}")
        return out.decode()

    def build(self, probe_argv: Sequence[str], cwd: str) -> None:
        for s, windows in enumerate(plan(self.total)):
            for w, count in enumerate(windows):
                name = "probe" if (s, w) == (0, 0) else f"w{s}_{w}"
                cmd = list(probe_argv) if name == "probe" else list(PANE_CMD)
                if w == 0:
                    args = [
                        "new-session",
                        "-d",
                        "-s",
                        f"s{s}",
                        "-x",
                        str(WIDTH),
                        "-y",
                        str(HEIGHT),
                        "-n",
                        name,
                        "-c",
                        cwd,
                        *cmd,
                    ]
                    if s == 0:
                        args += [";", "set-option", "-g", "default-size", f"{WIDTH}x{HEIGHT}"]
                else:
                    args = ["new-window", "-d", "-t", f"s{s}:", "-n", name, *PANE_CMD]
                target = f"s{s}:{name}"
                for _ in range(count - 1):
                    args += [
                        ";",
                        "split-window",
                        "-d",
                        "-t",
                        target,
                        *PANE_CMD,
                        ";",
                        "select-layout",
                        "-t",
                        target,
                        "tiled",
                    ]
                self.run(*args)
        self.pid = int(self.run("display-message", "-p", "#{pid}").strip())
        have = len(self.run("list-panes", "-a", "-F", "#{pane_id}").split())
        if have != self.total:
            raise RuntimeError(f"built {have} panes, wanted {self.total}")

    def panes(self) -> list[dict[str, str]]:
        fields = (
            "pane_id",
            "window_id",
            "window_name",
            "session_id",
            "session_name",
            "pane_index",
            "pane_tty",
        )
        out = self.run("list-panes", "-a", "-F", SEP.join(f"#{{{f}}}" for f in fields))
        return [dict(zip(fields, line.split(SEP), strict=True)) for line in out.splitlines()]

    def dump_json_rows(self, fields: Sequence[str]) -> list[dict[str, str]]:
        """``list-panes -a`` with ``fields``, as an agent would turn it into JSON."""
        out = self.run("list-panes", "-a", "-F", SEP.join(f"#{{{f}}}" for f in fields))
        return [dict(zip(fields, line.split(SEP), strict=True)) for line in out.splitlines()]

    def kill(self) -> None:
        if os.path.exists(self.socket):
            self.run("kill-server", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


class Bus:
    """Wakes whoever waits on any recorder's new data; remembers when data last came."""

    def __init__(self) -> None:
        self._waiters: list[asyncio.Future[None]] = []
        self.last = time.perf_counter()

    def notify(self) -> None:
        self.last = time.perf_counter()
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def wait_for(self, cond: Callable[[], bool], timeout: float) -> bool:
        deadline = time.perf_counter() + timeout
        while not cond():
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return False
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await asyncio.wait_for(fut, remaining)
            except TimeoutError:
                return cond()
        return True

    async def quiet(self, period: float, timeout: float = 5.0) -> bool:
        """Until nothing arrived for ``period`` seconds (stray events of the last step)."""
        deadline = time.perf_counter() + timeout
        while True:
            now = time.perf_counter()
            gap = now - self.last
            if gap >= period:
                return True
            if now > deadline:
                return False
            await asyncio.sleep(period - gap)


class ControlPeer(asyncio.SubprocessProtocol):
    """A tmux control-mode client: notification lines with arrival times, and commands."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.lines: list[tuple[float, bytes]] = []
        self.on_line: Callable[[float, bytes], None] | None = None
        self._buf = b""
        self._block: list[bytes] | None = None
        self._ours = False
        self._pending: deque[asyncio.Future[tuple[bool, list[bytes]]]] = deque()
        self.transport: asyncio.SubprocessTransport | None = None
        self.exited: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.SubprocessTransport)
        self.transport = transport

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd != 1:
            return
        now = time.perf_counter()
        self._buf += data
        *lines, self._buf = self._buf.split(b"\n")
        fresh = False
        for line in lines:
            if self._block is not None:
                if line.startswith((b"%end ", b"%error ")):
                    if self._ours and self._pending:
                        self._pending.popleft().set_result((line.startswith(b"%end "), self._block))
                    self._block = None
                else:
                    self._block.append(line)
            elif line.startswith(b"%begin "):
                parts = line.split()
                self._ours = len(parts) > 3 and parts[3] == b"1"
                self._block = []
            else:
                self.lines.append((now, line))
                if self.on_line is not None:
                    self.on_line(now, line)
                fresh = True
        if fresh:
            self.bus.notify()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
        while self._pending:
            self._pending.popleft().set_exception(ConnectionError("control client exited"))

    async def command(self, line: str, timeout: float = 30.0) -> list[bytes]:
        assert self.transport is not None
        fut: asyncio.Future[tuple[bool, list[bytes]]] = asyncio.get_running_loop().create_future()
        self._pending.append(fut)
        stdin = self.transport.get_pipe_transport(0)
        assert isinstance(stdin, asyncio.WriteTransport)
        stdin.write(line.encode() + b"\n")
        ok, out = await asyncio.wait_for(fut, timeout)
        if not ok:
            raise RuntimeError(f"{line}: {b' '.join(out).decode(errors='replace')}")
        return out

    async def close(self) -> None:
        if self.transport is None:
            return
        stdin = self.transport.get_pipe_transport(0)
        if stdin is not None:
            stdin.close()  # EOF on stdin: the control client detaches and exits
        try:
            await asyncio.wait_for(asyncio.shield(self.exited), 5)
        except TimeoutError:
            self.transport.kill()
            await self.exited
        self.transport.close()


async def attach_control(farm: Farm, session: str, flags: str, bus: Bus) -> ControlPeer:
    loop = asyncio.get_running_loop()
    _, peer = await loop.subprocess_exec(
        lambda: ControlPeer(bus),
        *farm.argv("-C", "attach-session", "-t", session, "-f", flags),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=farm.env,
    )
    await peer.command("display-message -p ready")  # attached and answering
    return peer
