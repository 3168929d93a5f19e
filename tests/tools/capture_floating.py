"""Capture window layouts with floating panes (tmux 3.7+) and which panes tmux says float.

Runs one private tmux server (``tmux -L <unique name> -f /dev/null``) of the binary given,
plays a list of steps on one window and, after each, records the window's layouts and every
pane's ``pane_floating_flag`` and geometry.  ``tests/unit/test_floating.py`` checks
``tmuxlocd.core.layout`` against the file without needing tmux.

While a window is zoomed tmux reports no pane as floating (``pane_floating_flag`` is 0 and the
``<...>`` section is gone), yet its saved layout still holds the floating cells: for those
snapshots ``floating`` is what tmux said just before the zoom, which zooming does not change.

Usage: ``python tests/tools/capture_floating.py TMUX-BINARY OUT.json``; the file gets one entry
per version (``tmux -V``), so running it for 3.7c and for next-3.8 fills both.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

# Steps that every 3.7+ tmux runs (names are labels of the snapshot taken after the step).
COMMON: list[tuple[str, list[str]]] = [
    ("two tiled", ["split-window", "-h", "-t", "%0"]),
    ("one floating", ["new-pane", "-t", "%0"]),
    ("two floating", ["new-pane", "-t", "%0"]),
    ("negative offsets", ["new-pane", "-t", "%0", "-X", "-5", "-Y", "-3", "-x", "20", "-y", "5"]),
    ("zoomed tiled", ["resize-pane", "-Z", "-t", "%0"]),
    ("unzoomed", ["resize-pane", "-Z", "-t", "%0"]),
    ("nested split", ["split-window", "-v", "-t", "%1"]),
    ("floating from a nested pane", ["new-pane", "-t", "%5"]),
    ("floating killed", ["kill-pane", "-t", "%2"]),
]
# next-3.8's commands that move, resize, float and tile panes.
NEXT: list[tuple[str, list[str]]] = [
    ("floating moved", ["move-pane", "-t", "%3", "-X", "10", "-Y", "5"]),
    ("floating moved off the window", ["move-pane", "-t", "%3", "-L", "30", "-U", "30"]),
    ("floating resized", ["resize-pane", "-t", "%4", "-x", "30", "-y", "8"]),
    ("tiled pane floated", ["break-pane", "-W", "-s", "%1", "-x", "20", "-y", "6"]),
    ("floating pane tiled", ["join-pane", "-s", "%1", "-t", "%1"]),
    ("modal pane", ["new-pane", "-O", "-t", "%0", "-x", "30", "-y", "6"]),
]


def tmux(binary: str, server: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    argv = [binary, "-L", server, "-f", "/dev/null", *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=20, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def snapshot(binary: str, server: str, label: str, before: dict[str, bool]) -> dict[str, Any]:
    window = tmux(
        binary,
        server,
        "display-message",
        "-p",
        "-t",
        "@0",
        "#{window_zoomed_flag}\t#{window_width}\t#{window_height}\t"
        "#{window_layout}\t#{window_visible_layout}",
    ).rstrip("\n")
    zoomed, width, height, layout, visible = window.split("\t")
    rows = tmux(
        binary,
        server,
        "list-panes",
        "-t",
        "@0",
        "-F",
        "#{pane_id}\t#{pane_floating_flag}\t#{pane_left}\t#{pane_top}\t"
        "#{pane_width}\t#{pane_height}",
    ).splitlines()
    panes = []
    for row in rows:
        pane, floating, left, top, w, h = row.split("\t")
        flag = before.get(pane, False) if zoomed == "1" else floating == "1"
        panes.append(
            {
                "id": pane,
                "floating": flag,
                "left": int(left),
                "top": int(top),
                "width": int(w),
                "height": int(h),
            }
        )
    return {
        "label": label,
        "zoomed": zoomed == "1",
        "window_width": int(width),
        "window_height": int(height),
        "window_layout": layout,
        "window_visible_layout": visible,
        "panes": panes,
    }


def capture(binary: str) -> tuple[str, list[dict[str, Any]]]:
    version = subprocess.run([binary, "-V"], capture_output=True, text=True, check=True)
    name = version.stdout.split(None, 1)[1].strip()
    server = f"tmuxlocd-floating-{secrets.token_hex(4)}"
    steps = COMMON + (NEXT if name.startswith("next-") else [])
    out: list[dict[str, Any]] = []
    try:
        tmux(binary, server, "new-session", "-d", "-s", "f", "-x", "80", "-y", "24", "cat")
        before: dict[str, bool] = {}
        for label, step in steps:
            if step[0] in ("new-pane", "split-window"):
                step = [*step, "cat"]
            tmux(binary, server, *step)
            snap = snapshot(binary, server, label, before)
            if not snap["zoomed"]:
                before = {p["id"]: p["floating"] for p in snap["panes"]}
            out.append(snap)
    finally:
        subprocess.run(
            [binary, "-L", server, "kill-server"], capture_output=True, check=False, timeout=20
        )
    return name, out


def main() -> None:
    binary, path = sys.argv[1], Path(sys.argv[2])
    data = json.loads(path.read_text()) if path.exists() else {}
    name, snaps = capture(binary)
    data[name] = snaps
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"{name}: {len(snaps)} snapshots -> {path}")


if __name__ == "__main__":
    main()
