"""``python -m bench.context --quick`` still runs end to end (it writes no results file)."""

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


def test_quick_run_prints_every_row() -> None:
    recorded = REPO / "bench" / "RESULTS-context.md"
    before = recorded.stat().st_mtime_ns if recorded.exists() else None
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.context", "--quick"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    for name in (
        "python -c pass",
        "seed's read",
        "python -S context.py: prompt, unchanged |",
        "python -S context.py: prompt, changed |",
        "tmuxlocd context: prompt",
    ):
        assert any(name in row for row in rows), f"no {name!r} row in:\n{proc.stdout}"
    unchanged = next(r for r in rows if "python -S context.py: prompt, unchanged |" in r)
    assert unchanged.rstrip(" |").endswith("| 0 | 0"), unchanged  # nothing to the model
    after = recorded.stat().st_mtime_ns if recorded.exists() else None
    assert after == before
