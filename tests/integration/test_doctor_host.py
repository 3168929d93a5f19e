"""``tmuxlocd doctor --host`` in a real pane: every fact the host reads of a process with a
tty (the pane's) agrees with POSIX, under whichever host the run uses (``TMUXLOCD_HOST``, as
CI's two lanes set it), and tmux's own spelling of its socket directory is the daemon's."""

from __future__ import annotations

import json
import sys

from tests.daemontest import Rig, private_rig
from tmuxlocd.host.system import HOST


def test_doctor_host_in_a_pane() -> None:
    rig: Rig
    with private_rig(start=True) as rig:
        run = rig.run_in_pane(f"{sys.executable} -m tmuxlocd doctor --host --json")
    assert run.rc == 0, run.out + run.err
    report = json.loads(run.out)
    assert report["host"] == HOST.name
    rows = {r["fact"]: r for r in report["checks"]}
    failed = [r for r in report["checks"] if r["status"] == "FAIL"]
    assert failed == []
    # In a pane every comparison is made: nothing left unchecked for want of a tty or tmux.
    for fact in ("record.tty_nr", "record.tpgid", "tty_path", "tmux socket dir", "peer (pid, uid)"):
        assert rows[fact]["status"] == "ok", rows[fact]
    assert rows["tty_path"]["host"] == run.tty
    assert rows["environ TMUX_PANE"]["host"] == run.pane
    assert rows["exit watch"]["status"] == "ok"
