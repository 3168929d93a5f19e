"""doctor on what earlier versions installed for opencode and Antigravity CLI: an opencode
plugin written by an older tmuxlocd is a warning, whose fix is to install again (the plugin
is rewritten whole); Antigravity CLI's hooks.json as ``install`` writes it now (a named hook
of flat handlers) is healthy, the earlier shape (under "hooks", matcher groups) lacks
``Stop``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tmuxlocd.clients import doctor, install
from tmuxlocd.clients.doctor import OK, PROBLEM, WARNING, PathFacts

HOOK = ["/opt/tools/venv/bin/python3", "-S", "/opt/tools/venv/lib/tmuxlocd/clients/context.py"]
HOME = Path("/home/u")
CWD = Path("/home/u/project")
PLUGIN = HOME / ".config" / "opencode" / "plugins" / "tmuxlocd.js"
AGY_HOOKS = HOME / ".gemini" / "config" / "hooks.json"
ALL_THERE = PathFacts(executables=frozenset({HOOK[0]}), files=frozenset({HOOK[0], HOOK[2]}))

# What an earlier version wrote: the plugin hooks of the context only, no ``event`` hook.
OLDER = f"""// tmuxlocd opencode plugin
// Written by `tmuxlocd install opencode`; `tmuxlocd install opencode --remove` deletes it.
import {{ spawn }} from "node:child_process"

const ARGV = {json.dumps([*HOOK, "opencode"])};
export const TmuxLocation = async () => ({{}})
"""


def diagnose(text: str, harness: str = "opencode", path: Path = PLUGIN) -> list[doctor.Finding]:
    where = doctor.sources(harness, False, HOME, CWD, {})
    texts: dict[Path, str | None] = dict.fromkeys(where.values())
    texts[path] = text
    return doctor.diagnose(
        harness,
        project=False,
        where=where,
        texts=texts,
        paths=ALL_THERE,
        cwd=CWD,
        exe_hint=["/opt/tools/venv/bin/tmuxlocd"],
        python_hint=HOOK[0],
    )


def test_the_plugin_install_writes_now_is_healthy() -> None:
    found = diagnose(install.plugin_text(HOOK, "opencode"))
    assert [(f.check, f.status) for f in found] == [("hooks", OK), ("hook-command", OK)]


def test_an_older_plugin_is_a_warning_to_install_again() -> None:
    assert install.plugin_argv(OLDER, "opencode") == [
        *HOOK,
        "opencode",
    ]  # still ours, still runnable
    found = diagnose(OLDER)
    assert [(f.check, f.status) for f in found] == [("hooks", WARNING), ("hook-command", OK)]
    assert "older plugin" in found[0].found
    assert found[0].fix is not None and found[0].fix.startswith("tmuxlocd install opencode")


def test_an_edited_plugin_is_a_warning_too() -> None:
    edited = install.plugin_text(HOOK, "opencode").replace(
        "const TIMEOUT_MS = 10000", "const TIMEOUT_MS = 1"
    )
    found = diagnose(edited)
    assert found[0].status == WARNING


def test_antigravity_hooks_install_writes_now_are_healthy() -> None:
    command = shlex.join([*HOOK, "antigravity"])
    written = install.add_hooks({}, "antigravity", command)
    found = {f.check: f for f in diagnose(json.dumps(written), "antigravity", AGY_HOOKS)}
    assert found["hooks"].status == OK, found["hooks"]
    assert "PreInvocation, Stop" in found["hooks"].found


def test_antigravity_hooks_of_the_earlier_shape_miss_stop() -> None:
    command = shlex.join([*HOOK, "antigravity", "--event", "PreInvocation"])
    earlier = {
        "hooks": {
            "PreInvocation": [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
        }
    }
    found = {f.check: f for f in diagnose(json.dumps(earlier), "antigravity", AGY_HOOKS)}
    assert found["hooks"].status == PROBLEM, found["hooks"]
    assert "missing" in found["hooks"].found
