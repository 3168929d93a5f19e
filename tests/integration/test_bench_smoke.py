"""The benchmark suite still runs: ``python -m bench --quick`` end to end, in seconds.

It writes to a temporary file (never over the recorded bench/RESULTS.md) and must produce a
goal row for each figure it measures at 10 panes.  Whether the goals are met is for the full
run to say; this only keeps the harness from rotting.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
    pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl"),
]

REPO = Path(__file__).resolve().parents[2]


def test_quick_run_writes_a_table(tmp_path: Path) -> None:
    recorded = REPO / "bench" / "RESULTS.md"
    before = recorded.stat().st_mtime_ns if recorded.exists() else None
    out = tmp_path / "results.md"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    proc = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--out", str(out)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    text = out.read_text()
    assert "| # | measurement | panes | median | p99 |" in text
    for figure in ("B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "A1", "A2", "A3", "A4"):
        assert f"| {figure} |" in text, f"no {figure} row in:\n{text}"
    assert "tmux 3" in text and "cores" in text
    # The floors on a real split (bench.fanout.split_floor): B3's row and B8's comparison.
    assert "| B3 | … the floor: a process that only writes" in text
    assert "floor on the split (written on its %layout-change" in text
    # tmux 3.3 and older: the floor on the daemon's path there (bench.fanout.waiter_floor).
    if any(f"; tmux {v}" in text for v in ("3.2", "3.3")):
        assert "| B3 | … the floor on tmux 3.3's path: the same writes" in text
    # What a turn of tmux's loop costs it (bench.tmux_costs).
    assert "| B7 | tmux alone: server CPU of one `display-message -p`" in text
    # tmux alone with the daemon's hooks (bench.runner.hook_floor).
    assert "| B3 | … tmux alone: the daemon's hooks hand the split's rows" in text
    after = recorded.stat().st_mtime_ns if recorded.exists() else None
    assert after == before, "the quick run must not overwrite bench/RESULTS.md"
