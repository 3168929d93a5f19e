"""``python -m bench.agents`` still runs end to end, small (it writes no results file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tmuxtest import TMUX

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]

REPO = Path(__file__).resolve().parents[2]


def test_small_run_prints_every_row() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    proc = subprocess.run(
        [sys.executable, "-m", "bench.agents", "--samples", "3", "--agents", "2"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for row in (
        "| hook spawned -> subscriber has `agent.state` (6 changes) |",
        "| `kill -9` of the harness -> subscriber has `agent.state` gone (3 kills) |",
        "| `python -c pass` |",
        "| hook (`python -S context.py claude`, a state-only event) |",
        "With 2 agents known",
        "Daemon CPU per report:",
    ):
        assert row in proc.stdout, proc.stdout
