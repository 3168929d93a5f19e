"""Capture window layouts and tmux's own pane geometry and direction targets.

Runs a private tmux server (``tmux -L <unique name> -f /dev/null``), builds one session per
scenario, and writes ``<name>.json`` per scenario into the output directory (by default
``tests/data/layouts`` next to this file's ``tests`` directory).  The unit tests check
``tmuxlocd.core.layout`` against these files without needing tmux.

Per scenario the file holds:

* ``window_layout`` / ``window_visible_layout`` / ``zoomed`` and the window size;
* ``panes``: tmux's ``pane_id/left/top/width/height`` from ``list-panes`` (the current,
  possibly zoomed, geometry) and ``unzoomed_panes`` (the same, taken before zooming);
* ``targets`` (optional): for every pane P, after ``select-pane -t P``, the pane tmux resolves
  ``{up-of}``, ``{down-of}``, ``{left-of}`` and ``{right-of}`` to (tmux picks one pane, the most
  recently active candidate, and wraps round the window edge when there is none);
* ``candidates`` (optional): for every P, every direction, all panes Q with
  ``select-pane -t Q; select-pane -t P`` making Q the answer.  Since tmux picks the most
  recently active candidate other than P, this is exactly tmux's candidate set.

Usage: ``python tests/tools/capture_layouts.py [OUTDIR]``.
"""

from __future__ import annotations

import json
import os
import random
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from tests.tmuxbin import before_new_session
except ImportError:  # run as a script: python tests/tools/capture_layouts.py
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.tmuxbin import before_new_session

TMUX = os.environ.get("TMUX_BIN", "tmux")
DIRECTION_TARGETS = {
    "above": "{up-of}",
    "below": "{down-of}",
    "left": "{left-of}",
    "right": "{right-of}",
}


class TmuxFailed(RuntimeError):
    pass


@dataclass
class Server:
    """A private tmux server addressed by a unique ``-L`` name."""

    name: str = field(default_factory=lambda: f"tmuxlocd-layouts-{secrets.token_hex(6)}")

    def run(self, *args: str, check: bool = True) -> list[str]:
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        proc = subprocess.run(
            [TMUX, "-L", self.name, "-f", os.devnull, *args],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
        if check and proc.returncode != 0:
            raise TmuxFailed(f"tmux {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout.splitlines()

    def kill(self) -> None:
        # tmux leaves its socket file behind after kill-server, so remove it too.
        socket_path = self.run("display-message", "-p", "#{socket_path}", check=False)
        env = {k: v for k, v in os.environ.items() if k != "TMUX"}
        subprocess.run(
            [TMUX, "-L", self.name, "kill-server"],
            check=False,
            capture_output=True,
            env=env,
            timeout=30,
        )
        if socket_path and Path(socket_path[0]).name == self.name:
            Path(socket_path[0]).unlink(missing_ok=True)


@contextmanager
def private_server() -> Iterator[Server]:
    server = Server()
    try:
        yield server
    finally:
        server.kill()


@dataclass
class Window:
    """The single window of one scenario's session."""

    server: Server
    session: str
    window_id: str
    first_pane: str

    def split(self, target: str, *flags: str) -> str:
        return self.server.run(
            "split-window", "-d", "-P", "-F", "#{pane_id}", "-t", target, *flags
        )[0]

    def cmd(self, *args: str) -> list[str]:
        return self.server.run(*args)

    def pane_ids(self) -> list[str]:
        return self.server.run("list-panes", "-t", self.window_id, "-F", "#{pane_id}")


def new_window(server: Server, session: str, width: int, height: int) -> Window:
    # The pane command is a long sleep: cheaper than a shell, and nothing reads its output.
    server.run(
        *before_new_session(), "new-session", "-d", "-s", session, "-x", str(width),
        "-y", str(height),
        "sleep 100000",
    )  # fmt: skip
    server.run("set-option", "-g", "default-command", "sleep 100000")
    window_id, pane_id = server.run(
        "display-message", "-p", "-t", f"={session}:", "#{window_id}\t#{pane_id}"
    )[0].split("\t")
    return Window(server, session, window_id, pane_id)


def panes_of(win: Window) -> list[dict[str, Any]]:
    rows = win.server.run(
        "list-panes",
        "-t",
        win.window_id,
        "-F",
        "#{pane_id}\t#{pane_left}\t#{pane_top}\t#{pane_width}\t#{pane_height}",
    )
    out = []
    for row in rows:
        pid, left, top, width, height = row.split("\t")
        out.append(
            {"id": pid, "left": int(left), "top": int(top), "width": int(width),
             "height": int(height)}
        )  # fmt: skip
    return out


def resolve_directions(win: Window, select: list[str]) -> dict[str, str | None]:
    """Select the panes in ``select`` in order, then resolve the four direction targets."""
    args: list[str] = []
    for pane in select:
        args += ["select-pane", "-t", pane, ";"]
    for i, target in enumerate(DIRECTION_TARGETS.values()):
        args += ["display-message", "-p", "-t", f"{win.window_id}.{target}", "#{pane_id}"]
        if i < 3:
            args.append(";")
    lines = win.server.run(*args, check=False)
    if len(lines) == 4:
        return dict(zip(DIRECTION_TARGETS, lines, strict=True))
    # A failing command ends the chain: ask one at a time and record failures as None.
    answers: dict[str, str | None] = {}
    for direction, target in DIRECTION_TARGETS.items():
        sel: list[str] = []
        for pane in select:
            sel += ["select-pane", "-t", pane, ";"]
        got = win.server.run(
            *sel,
            "display-message", "-p", "-t", f"{win.window_id}.{target}", "#{pane_id}",
            check=False,
        )  # fmt: skip
        answers[direction] = got[0] if got else None
    return answers


def capture(win: Window, name: str, description: str, *, directions: bool = True) -> dict[str, Any]:
    info = win.server.run(
        "display-message", "-p", "-t", win.window_id,
        "#{window_layout}\t#{window_visible_layout}\t#{window_zoomed_flag}"
        "\t#{window_width}\t#{window_height}",
    )[0].split("\t")  # fmt: skip
    layout, visible, zoomed, width, height = info
    data: dict[str, Any] = {
        "name": name,
        "description": description,
        "tmux_version": win.server.run("display-message", "-p", "#{version}")[0],
        "window_width": int(width),
        "window_height": int(height),
        "window_layout": layout,
        "window_visible_layout": visible,
        "zoomed": zoomed == "1",
        "panes": panes_of(win),
    }
    if directions and zoomed != "1":
        ids = [p["id"] for p in data["panes"]]
        data["targets"] = {p: resolve_directions(win, [p]) for p in ids}
        candidates: dict[str, dict[str, list[str]]] = {
            p: {d: [] for d in DIRECTION_TARGETS} for p in ids
        }
        for p in ids:
            for q in ids:
                if q == p:
                    continue
                for direction, answer in resolve_directions(win, [q, p]).items():
                    if answer == q:
                        candidates[p][direction].append(q)
        data["candidates"] = candidates
    return data


# --- scenarios --------------------------------------------------------------------------------

Scenario = Callable[[Server, str, bool], dict[str, Any]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(fn: Scenario) -> Scenario:
    SCENARIOS[fn.__name__.replace("_", "-")] = fn
    return fn


def _panes_then_layout(
    server: Server, session: str, count: int, layout: str, width: int = 200, height: int = 60
) -> Window:
    win = new_window(server, session, width, height)
    for _ in range(count - 1):
        biggest = max(panes_of(win), key=lambda p: p["width"] * p["height"])
        win.split(biggest["id"], "-h" if biggest["width"] > 2 * biggest["height"] else "-v")
        # Re-spread after each split so that many panes never run out of room.
        win.cmd("select-layout", "-t", win.window_id, layout)
    return win


@scenario
def single(server: Server, session: str, directions: bool) -> dict[str, Any]:
    win = new_window(server, session, 200, 60)
    return capture(win, session, "one pane filling the window", directions=directions)


def _preset(name: str, count: int, width: int = 200, height: int = 60) -> Scenario:
    def run(server: Server, session: str, directions: bool) -> dict[str, Any]:
        win = _panes_then_layout(server, session, count, name, width, height)
        return capture(
            win,
            session,
            f"{count} panes, select-layout {name}, {width}x{height}",
            directions=directions,
        )

    return run


SCENARIOS["even-horizontal"] = _preset("even-horizontal", 4)
SCENARIOS["even-vertical"] = _preset("even-vertical", 4)
SCENARIOS["main-horizontal"] = _preset("main-horizontal", 5)
SCENARIOS["main-vertical"] = _preset("main-vertical", 5)
SCENARIOS["tiled-7"] = _preset("tiled", 7)
SCENARIOS["tiled-9"] = _preset("tiled", 9)
SCENARIOS["tiled-32"] = _preset("tiled", 32, 300, 100)
SCENARIOS["tiny-even-horizontal"] = _preset("even-horizontal", 4, 20, 10)
SCENARIOS["tiny-tiled-6"] = _preset("tiled", 6, 20, 10)


@scenario
def nested_3_deep(server: Server, session: str, directions: bool) -> dict[str, Any]:
    win = new_window(server, session, 200, 60)
    right = win.split(win.first_pane, "-h")
    lower_right = win.split(right, "-v")
    corner = win.split(lower_right, "-h")
    win.split(corner, "-v")
    return capture(
        win, session, "a pane split in a split of a split: {[{[]}]}", directions=directions
    )


@scenario
def deep_alternating(server: Server, session: str, directions: bool) -> dict[str, Any]:
    win = new_window(server, session, 200, 60)
    pane = win.first_pane
    for i in range(8):
        pane = win.split(pane, "-h" if i % 2 == 0 else "-v")
    return capture(
        win, session, "newest pane split 8 times, alternating directions", directions=directions
    )


@scenario
def uneven_grid(server: Server, session: str, directions: bool) -> dict[str, Any]:
    win = new_window(server, session, 200, 60)
    right = win.split(win.first_pane, "-h", "-l", "120")
    win.split(win.first_pane, "-v", "-l", "20")
    low = win.split(right, "-v", "-l", "35")
    win.split(right, "-v", "-l", "10")
    win.split(low, "-h", "-l", "50")
    return capture(
        win,
        session,
        "two columns split at different heights, borders misaligned",
        directions=directions,
    )


@scenario
def offset_columns(server: Server, session: str, directions: bool) -> dict[str, Any]:
    # Top row split at column 99, bottom row at column 100: the panes on the right of the top
    # row and the left of the bottom row meet only at a corner, which tmux's {up-of} accepts.
    win = new_window(server, session, 200, 60)
    bottom = win.split(win.first_pane, "-v")
    win.split(win.first_pane, "-h", "-l", "100")
    win.split(bottom, "-h", "-l", "99")
    return capture(
        win, session, "rows split one column apart: corner-only contacts", directions=directions
    )


@scenario
def zoomed(server: Server, session: str, directions: bool) -> dict[str, Any]:
    win = new_window(server, session, 200, 60)
    right = win.split(win.first_pane, "-h")
    win.split(right, "-v")
    before = panes_of(win)
    win.cmd("resize-pane", "-Z", "-t", right)
    data = capture(win, session, "three panes, the top right one zoomed", directions=directions)
    data["unzoomed_panes"] = before
    data["zoomed_pane"] = right
    return data


def _random(count: int, seed: int, width: int, height: int) -> Scenario:
    def run(server: Server, session: str, directions: bool) -> dict[str, Any]:
        rng = random.Random(seed)
        win = new_window(server, session, width, height)
        panes = [win.first_pane]
        attempts = 0
        while len(panes) < count and attempts < count * 10:
            attempts += 1
            target = rng.choice(panes)
            flags = [rng.choice(["-h", "-v"]), "-l", f"{rng.randint(20, 80)}%"]
            if rng.random() < 0.15:
                flags.append("-f")  # full-width/height split: a new level at the top
            try:
                panes.append(win.split(target, *flags))
            except TmuxFailed:
                continue  # no room for that split; try another
        description = f"{len(panes)} panes from random splits (seed {seed}), {width}x{height}"
        return capture(win, session, description, directions=directions)

    return run


SCENARIOS["random-12"] = _random(12, 1, 200, 60)
SCENARIOS["random-20"] = _random(20, 2, 200, 60)
SCENARIOS["random-40"] = _random(40, 3, 300, 100)


def capture_all(
    names: list[str] | None = None, *, directions: bool = True
) -> dict[str, dict[str, Any]]:
    """Run the named scenarios (all by default) on a fresh private server.

    ``directions=False`` skips resolving direction targets, the slow part.
    """
    with private_server() as server:
        return {name: SCENARIOS[name](server, name, directions) for name in names or SCENARIOS}


def main(argv: list[str]) -> int:
    outdir = (
        Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "data/layouts"
    )
    outdir.mkdir(parents=True, exist_ok=True)
    for name, data in capture_all().items():
        path = outdir / f"{name}.json"
        path.write_text(json.dumps(data, indent=1) + "\n")
        print(f"{path}: {len(data['panes'])} panes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
