"""``tmuxlocd agents --pick`` without its terminal: the order, the rows, the keys.

The agents that need the user first (waiting, then working, then idle), each group longest
in its state first; a row is ``%4  claude  waiting  1m  permission: Bash  main:1.0``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tmuxlocd.core.agents import IDLE, WAITING, WORKING, pane_number

ORDER = {WAITING: 0, WORKING: 1, IDLE: 2}
Key = Literal["up", "down", "enter", "quit", ""]


def ordered(found: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``GET /v1/agents``' agents, those that need the user first."""
    return sorted(
        found,
        key=lambda a: (
            ORDER.get(a["state"], 3),
            a["since"],
            a["server"],
            pane_number(a["pane"]),
            a["session_id"],
        ),
    )


def ago(seconds: float) -> str:
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def row(agent: Mapping[str, Any], now: float, width: int) -> str:
    where = agent.get("location")
    place = ""
    if where:
        place = f"{where['session']['name']}:{where['window']['index']}.{where['pane']['index']}"
    cells = [
        f"{agent['pane']:>5}",
        f"{agent['harness']:<9}",
        f"{agent['state']:<8}",
        f"{ago(now - agent['since']):>7}",
        f"{place:<14}",
        agent.get("reason") or "",
    ]
    text = "".join(c if c.isprintable() else " " for c in "  ".join(cells)).rstrip()
    return text[: max(0, width)]


def key(data: bytes) -> Key:
    """What a read from the terminal in cbreak mode means."""
    if data in (b"\x1b[A", b"\x1bOA", b"k"):
        return "up"
    if data in (b"\x1b[B", b"\x1bOB", b"j"):
        return "down"
    if data in (b"\r", b"\n"):
        return "enter"
    if data in (b"q", b"\x1b", b"\x03", b"\x04"):
        return "quit"
    return ""


def moved(selected: int, count: int, pressed: Key) -> int:
    if count == 0:
        return 0
    if pressed == "up":
        return (selected - 1) % count
    if pressed == "down":
        return (selected + 1) % count
    return min(selected, count - 1)


def switch_argv(pane: str) -> list[str]:
    """One tmux command line (after ``tmux -S <server>``) that takes the client running it
    (a popup's: tmux finds it from ``$TMUX``) to ``pane``."""
    return [
        "switch-client", "-t", pane, ";",
        "select-window", "-t", pane, ";",
        "select-pane", "-t", pane,
    ]  # fmt: skip
