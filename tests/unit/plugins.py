"""Running a harness's plugin file under node, with a stand-in for the hook it runs: the one
way the unit tests of opencode's, pi's and Cline's plugins drive them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tmuxlocd.clients import install

NODE = shutil.which("node")


def run_plugin(
    tmp_path: Path, hook: list[str], driver: str, *args: str, harness: str = "opencode"
) -> str:
    """Node runs ``driver`` (an ES module) on ``harness``'s plugin written with the hook
    command ``hook``, the plugin's URL its first argument; returns its stdout."""
    assert NODE is not None
    plugin = tmp_path / "tmuxlocd.js"
    plugin.write_text(install.plugin_text(hook, harness))
    script = tmp_path / "driver.mjs"
    script.write_text(driver)
    proc = subprocess.run(
        [NODE, str(script), plugin.as_uri(), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def stand_in(tmp_path: Path, text: str, log: Path) -> list[str]:
    """The hook command of a stand-in hook ``text`` that logs to ``log``."""
    hook = tmp_path / "hook.py"
    hook.write_text(text)
    return [sys.executable, str(hook), str(log)]
