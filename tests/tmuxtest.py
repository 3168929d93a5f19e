"""Test support: private tmux servers and waiting on conditions (never sleeping to wait)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

TMUX = shutil.which("tmux")


class TmuxServer:
    """A private tmux server on its own socket (-S, under a short temp dir, null config).

    Every command goes through ``-S <socket>``: nothing here can reach the default server.
    """

    def __init__(self, directory: Path | None = None) -> None:
        assert TMUX is not None
        self.dir = directory or Path(tempfile.mkdtemp(prefix="tl-", dir="/tmp"))
        self.name = f"t{uuid.uuid4().hex[:8]}"
        self.socket_path = str(self.dir / self.name)

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
        self.run("new-session", "-d", "-s", session, "-x", str(width), "-y", str(height))
        # Keep tests deterministic: no automatic renames as shells start.
        self.run("set-option", "-g", "automatic-rename", "off")
        self.run("set-window-option", "-g", "automatic-rename", "off")

    def display(self, target: str, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", target, fmt).rstrip("\n")

    def pane_rows(self) -> set[tuple[str, ...]]:
        out = self.run(
            "list-panes", "-a", "-F",
            "#{pane_id} #{window_id} #{pane_index} #{pane_active} #{pane_tty} #{pane_pid} "
            "#{pane_left} #{pane_top} #{pane_width} #{pane_height}",
        )
        return {tuple(line.split(" ")) for line in out.splitlines() if line}

    def alive(self) -> bool:
        return self.run("list-sessions", check=False) != "" or os.path.exists(self.socket_path)

    def kill(self) -> None:
        if os.path.exists(self.socket_path):
            self.run("kill-server", check=False)
        shutil.rmtree(self.dir, ignore_errors=True)


async def wait_until(
    predicate: Callable[[], bool | Awaitable[bool]],
    timeout: float = 10.0,
    interval: float = 0.01,
    what: str = "condition",
) -> None:
    """Poll ``predicate`` until it is true; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if not isinstance(result, bool):
            result = await result
        if result:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(interval)
