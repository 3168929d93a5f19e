"""Schemathesis (pinned in the test extra) against a live daemon on a populated private tmux
server: the OpenAPI document the daemon serves, every operation, every check, seeded, with
bounded examples and the stateful phase; over the Unix socket (through a TCP relay: the daemon
sees a Unix peer) and over TCP with the token.  No failure is allowed.

Its summary (operations, cases, failures) is printed into the log.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.contract.rig import Relay, populated_daemon
from tests.daemontest import REPO

HERE = Path(__file__).resolve().parent
ST = str(Path(sys.executable).parent / "st")
SEED = int(os.environ.get("TMUXLOCD_SEED", "1")) % 2**32
MAX_EXAMPLES = int(os.environ.get("TMUXLOCD_CONTRACT_EXAMPLES", "20"))


def run_schemathesis(
    capsys: pytest.CaptureFixture[str], label: str, url: str, document: Path, *headers: str
) -> str:
    cache = document.parent  # Schemathesis keeps a .schemathesis/ cache in its directory
    argv = [
        ST,
        "--config-file",
        str(HERE / "schemathesis.toml"),
        "run",
        str(document),
        "--url",
        url,
        "--checks",
        "all",
        "--seed",
        str(SEED),
        "--max-examples",
        str(MAX_EXAMPLES),
        "--request-timeout",
        "5",
        "--no-color",
    ]
    for header in headers:
        argv += ["-H", header]
    env = dict(os.environ, SCHEMATHESIS_HOOKS="tests.contract.schemathesis_hooks")
    env["PYTHONPATH"] = REPO
    started = time.monotonic()
    done = subprocess.run(
        argv, capture_output=True, text=True, env=env, cwd=cache, timeout=480, check=False
    )
    took = time.monotonic() - started
    out = done.stdout + done.stderr
    summary = out[out.find("=== SUMMARY") :] if "=== SUMMARY" in out else out[-3000:]
    with capsys.disabled():  # into the CI log, passed or failed
        print(
            f"\n=== schemathesis over {label} (seed {SEED}, max examples {MAX_EXAMPLES}, "
            f"{took:.1f} s)\n{summary}"
        )
    assert done.returncode == 0, (
        f"schemathesis over {label} failed (exit {done.returncode}):\n{out}"
    )
    cases = re.search(r"(\d+) generated, (\d+) passed", out)
    assert cases is not None and cases.group(1) == cases.group(2), summary
    operations = sum(len(ops) for ops in json.loads(document.read_text())["paths"].values())
    assert re.search(rf"Selected: {operations}/{operations}\s+Tested: {operations}\b", out), (
        f"not every one of the document's {operations} operations was tested:\n{summary}"
    )
    return out


def test_schemathesis_over_unix_and_tcp(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with populated_daemon() as (_rig, daemon, port, token):
        auth = f"Authorization: Bearer {token}"
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/openapi.json", headers={"Authorization": f"Bearer {token}"}
        )
        with urllib.request.urlopen(request, timeout=10) as resp:
            document = tmp_path / "openapi.json"
            document.write_bytes(resp.read())
        relay = Relay(daemon.socket)
        try:
            run_schemathesis(capsys, "the Unix socket", f"http://127.0.0.1:{relay.port}", document)
        finally:
            relay.close()
        run_schemathesis(capsys, "TCP with the token", f"http://127.0.0.1:{port}", document, auth)
        logs = daemon.logs()
        assert "Traceback" not in logs and "Unhandled exception" not in logs, logs[-5000:]
