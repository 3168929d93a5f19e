"""``tmuxlocd agents --pick``: a plain terminal picker of agents, for ``display-popup -E``.

No curses: the popup's terminal in cbreak mode, the screen redrawn on each key and every
second (how long each has waited goes on).  Enter runs ``tmux -S <the agent's server>
switch-client -t <pane> ; select-window ; select-pane``: from a popup, tmux finds the
popup's client from ``$TMUX``.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import sys
import termios
import time
import tty
from collections.abc import Callable, Mapping
from typing import Any

from tmuxlocd.core import picker
from tmuxlocd.core.invoke import client_argv

REFRESH_S = 1.0
HEADER = "agents: up/down or k/j, Enter to go there, q to leave"


def render(found: list[Mapping[str, Any]], selected: int, now: float) -> bytes:
    cols, rows = shutil.get_terminal_size((80, 24))
    lines = [HEADER[:cols]]
    if not found:
        lines.append("no agents")
    for i, agent in enumerate(found[: max(1, rows - 2)]):
        text = picker.row(agent, now, cols - 2)
        lines.append(f"\x1b[7m> {text}\x1b[0m" if i == selected else f"  {text}")
    return ("\x1b[H\x1b[2J" + "\r\n".join(lines)).encode("utf-8", "replace")


def switch(agent: Mapping[str, Any]) -> int:
    tmux = shutil.which("tmux") or "tmux"
    done = subprocess.run(
        [*client_argv(tmux, agent["server"]), *picker.switch_argv(agent["pane"])],
        check=False,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    if done.returncode != 0:
        sys.stderr.write(f"tmuxlocd: {done.stderr.decode(errors='replace').strip()}\n")
    return done.returncode


def run(fetch: Callable[[], list[dict[str, Any]]]) -> int:
    """The picker on stdin/stdout; ``fetch`` gives ``GET /v1/agents``' agents."""
    found = picker.ordered(fetch())
    fd = sys.stdin.fileno()
    if not os.isatty(fd):
        now = time.time()
        for agent in found:
            print(picker.row(agent, now, 200))
        return 0
    out = sys.stdout.buffer
    saved = termios.tcgetattr(fd)
    selected = 0
    chosen: Mapping[str, Any] | None = None
    try:
        tty.setcbreak(fd)
        out.write(b"\x1b[?25l")  # no cursor
        while True:
            out.write(render(found, selected, time.time()))
            out.flush()
            ready, _, _ = select.select([fd], [], [], REFRESH_S)
            if not ready:
                current = found[selected]["pane"] if found else None
                found = picker.ordered(fetch())
                panes = [a["pane"] for a in found]
                selected = panes.index(current) if current in panes else 0
                continue
            pressed = picker.key(os.read(fd, 16))
            if pressed == "quit":
                return 0
            if pressed == "enter" and found:
                chosen = found[selected]
                break
            selected = picker.moved(selected, len(found), pressed)
    finally:
        with contextlib.suppress(OSError):
            out.write(b"\x1b[?25h")
            out.flush()
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
    return switch(chosen)
