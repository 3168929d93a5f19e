"""The e2e hook timer (``tests/e2e/hookclock.py``) must pass for a wrapper in the daemon's
walk from a hook to its harness: else the timer, on the pane's tty, is taken for the harness
and the agent goes when the hook ends."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tmuxlocd.daemon.agent_registry import NOT_HARNESS

HOOKCLOCK = Path(__file__).resolve().parents[1] / "e2e" / "hookclock.py"


def test_the_hook_sees_a_wrapper_as_its_parent(tmp_path: Path) -> None:
    log = tmp_path / "hooks.jsonl"
    proc = subprocess.run(
        [sys.executable, "-S", str(HOOKCLOCK), str(log), "sh", "-c", "cat /proc/$PPID/comm"],
        input=b'{"hook_event_name": "Stop", "session_id": "s1"}',
        capture_output=True,
        check=True,
        timeout=30,
    )
    parent = proc.stdout.decode().strip()
    assert parent == "env" and parent in NOT_HARNESS, proc.stdout
    assert '"event": "Stop"' in log.read_text()
