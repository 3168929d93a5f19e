"""The official MCP SDK (the ``mcp`` package) as a client of ``tmuxlocd mcp``, from a process
in a pane and from one outside tmux (``mcp_conformance.py``): every tool, each answer's
``structuredContent`` validated against the tool's ``outputSchema``, the bad inputs (unknown
and misspelt arguments, a 9,000-digit and a 1 MB pane id, an unknown tool), and an activity
change told to a subscriber of ``tmux://self/window``.  The conformance table is printed into
the log; every row must hold.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.contract.rig import populated_daemon
from tests.daemontest import PYTHON, REPO
from tests.tmuxtest import TMUX, poll

PROBE = Path(__file__).resolve().parent / "mcp_conformance.py"


def table(rows: list[dict[str, Any]]) -> str:
    head = ("where", "tool", "case", "expected", "got", "ok")
    cells: list[tuple[str, ...]] = [head]
    for r in rows:
        cells.append((*(str(r[k]) for k in head[:-1]), "ok" if r["ok"] else "FAIL"))
    widths = [min(max(len(c[i]) for c in cells), 60) for i in range(len(head))]
    lines = []
    for n, c in enumerate(cells):
        lines.append(" | ".join(x[:60].ljust(w) for x, w in zip(c, widths, strict=True)))
        if n == 0:
            lines.append("-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def result_of(out: Path, err: Path) -> list[dict[str, Any]]:
    result: dict[str, Any] = json.loads(out.read_text())
    if "error" in result:
        raise AssertionError(
            "the MCP client failed:\n" + result["error"] + err.read_text(errors="replace")
        )
    rows: list[dict[str, Any]] = result["rows"]
    return rows


def test_mcp_sdk_conformance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert TMUX is not None
    with populated_daemon() as (rig, daemon, _port, _token):
        other = rig.tmux.display("other:", "#{pane_id}")
        base = [PYTHON, str(PROBE), "--daemon", daemon.socket, "--tmux", rig.tmux.socket_path,
                "--tmux-bin", TMUX, "--other", other]  # fmt: skip
        # In a pane: a new window of two panes; the probe in the first, a shell beside it.
        out, err = tmp_path / "pane.json", tmp_path / "pane.err"
        new = ("-d", "-P", "-F", "#{pane_id}")
        window = rig.tmux.run("new-window", *new, "-t", "main:", "-n", "probe", "sh").strip()
        neighbour = rig.tmux.run("split-window", "-h", *new, "-t", window, "sh").strip()
        argv = [*base, "--where", "pane", "--neighbour", neighbour, "--out", str(out)]
        command = " ".join(shlex.quote(a) for a in argv) + f" 2>{shlex.quote(str(err))}"
        rig.sync()
        rig.tmux.run("send-keys", "-t", window, command, "Enter")
        poll(out.exists, 120, f"the MCP client in pane {window} ({err})")
        rows = result_of(out, err)
        # Outside tmux: a process of no pane (a new session, no controlling tty).
        out2, err2 = tmp_path / "outside.json", tmp_path / "outside.err"
        with open(err2, "wb") as errfile:
            subprocess.run(
                [*base, "--where", "outside", "--out", str(out2)],
                env=rig.env(),
                stdout=errfile,
                stderr=errfile,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                cwd=REPO,
                timeout=120,
                check=True,
            )
        rows += result_of(out2, err2)
        with capsys.disabled():  # into the CI log, passed or failed
            print(f"\n=== MCP conformance (official SDK, {len(rows)} rows)\n{table(rows)}")
        tools = {r["tool"] for r in rows if r["case"] == "declares outputSchema"}
        assert len(tools) == 5, tools
        for where in ("pane", "outside"):
            called = {r["tool"] for r in rows if r["where"] == where}
            assert tools <= called, (where, tools - called)
        failed = [r for r in rows if not r["ok"]]
        assert not failed, table(failed)
        logs = daemon.logs()
        assert "Traceback" not in logs, logs[-5000:]
