"""The import paths users rely on outlive the package's folders (tmuxlocd.client, python -m
tmuxlocd, the console script); the hook's old file path is tested in test_harness.py."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import tmuxlocd.client as face
from tmuxlocd.clients import client

REPO = Path(__file__).resolve().parents[2]


def test_tmuxlocd_client_hands_on_the_clients() -> None:
    assert face.__all__ == client.__all__ and "Client" in face.__all__
    assert all(getattr(face, name) is getattr(client, name) for name in client.__all__)


def test_the_console_script_names_a_main_that_exists() -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, name = scripts["tmuxlocd"].partition(":")
    assert callable(getattr(importlib.import_module(module), name))


def test_python_m_tmuxlocd_runs_the_cli() -> None:
    res = subprocess.run(
        [sys.executable, "-m", "tmuxlocd", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert res.returncode == 0 and "notify" in res.stdout


def test_tmuxlocd_token_loads_no_aiohttp(tmp_path: Path) -> None:
    # It checks the runtime directory (daemon.rundir) and reads the token (daemon.token):
    # neither is the daemon's lifecycle module, which loads aiohttp.
    code = (
        "import sys; from tmuxlocd.clients.cli import main; rc = main(['token', '--path']); "
        "print(rc, 'aiohttp' in sys.modules)"
    )
    env = {"TMUXLOCD_SOCKET": str(tmp_path / "run" / "tmuxlocd.sock"), "PATH": "/usr/bin:/bin"}
    res = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, check=True
    )
    lines = res.stdout.splitlines()
    assert lines[-1] == "0 False" and lines[0].startswith(str(tmp_path / "run"))
