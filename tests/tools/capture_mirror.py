"""Capture the replies the mirror reads, from a private tmux server (``-S``, ``-f /dev/null``).

Writes ``tests/data/mirror/<tmux version>.json``: for a server with two sessions (one with a
split window, a second window and a window linked from the other session), the lines of the
mirror's own commands (``LIST_SESSIONS``, ``LIST_WINDOWS``, ``LIST_PANES``, the per-window
listing, ``SERVER_FACTS``) and then the same after a split in the second session.  Run from
the repository root: ``python tests/tools/capture_mirror.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tmuxlocd.core.mirror import LIST_PANES, LIST_SESSIONS, LIST_WINDOWS
from tmuxlocd.core.model import PANE_WINDOW_FORMAT

TMUX = shutil.which("tmux") or "tmux"


def main() -> None:
    directory = tempfile.mkdtemp(prefix="tlm-", dir="/tmp")
    sock = os.path.join(directory, "s")
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}

    def tmux(*args: str) -> list[str]:
        out = subprocess.run(
            [TMUX, "-u", "-S", sock, "-f", os.devnull, *args],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=20,
        ).stdout
        return out.splitlines()

    try:
        tmux("new-session", "-d", "-s", "work", "-x", "160", "-y", "48", "cat")
        tmux("set", "-g", "automatic-rename", "off")
        tmux("split-window", "-d", "-h", "-t", "work:0", "cat")
        tmux("new-window", "-d", "-t", "work:", "-n", "logs", "cat")
        tmux("new-session", "-d", "-s", "other", "-x", "120", "-y", "40", "cat")
        tmux("link-window", "-d", "-s", "work:0", "-t", "other:5")

        def snapshot() -> dict[str, object]:
            windows = sorted(
                {line.split("\t")[2] for line in tmux(*LIST_WINDOWS) if line.startswith("W")}
            )
            return {
                "list_sessions": tmux(*LIST_SESSIONS),
                "list_windows": tmux(*LIST_WINDOWS),
                "list_panes": tmux(*LIST_PANES),
                "window_panes": {
                    w: tmux("list-panes", "-t", w, "-F", PANE_WINDOW_FORMAT) for w in windows
                },
            }

        before = snapshot()
        tmux("split-window", "-d", "-v", "-t", "other:0", "cat")
        after = snapshot()
        version = tmux("display-message", "-p", "#{version}")[0]
        data = {"version": version, "before": before, "after_split_in_other": after}
        out = Path("tests/data/mirror") / f"{version}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        print(out)
    finally:
        subprocess.run(
            [TMUX, "-S", sock, "kill-server"], env=env, capture_output=True, check=False, timeout=20
        )
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
