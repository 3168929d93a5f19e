"""doctor on an opencode plugin written by an older tmuxlocd: a warning, whose fix is to
install again (the plugin is rewritten whole)."""

from __future__ import annotations

import json
from pathlib import Path

from tmuxlocd.clients import doctor, install
from tmuxlocd.clients.doctor import OK, WARNING, PathFacts

HOOK = ["/opt/tools/venv/bin/python3", "-S", "/opt/tools/venv/lib/tmuxlocd/clients/context.py"]
HOME = Path("/home/u")
CWD = Path("/home/u/project")
PLUGIN = HOME / ".config" / "opencode" / "plugins" / "tmuxlocd.js"
ALL_THERE = PathFacts(executables=frozenset({HOOK[0]}), files=frozenset({HOOK[0], HOOK[2]}))

# What an earlier version wrote: the plugin hooks of the context only, no ``event`` hook.
OLDER = f"""// tmuxlocd opencode plugin
// Written by `tmuxlocd install opencode`; `tmuxlocd install opencode --remove` deletes it.
import {{ spawn }} from "node:child_process"

const ARGV = {json.dumps([*HOOK, "opencode"])};
export const TmuxLocation = async () => ({{}})
"""


def diagnose(text: str) -> list[doctor.Finding]:
    where = doctor.sources("opencode", False, HOME, CWD, {})
    texts: dict[Path, str | None] = dict.fromkeys(where.values())
    texts[PLUGIN] = text
    return doctor.diagnose(
        "opencode",
        project=False,
        where=where,
        texts=texts,
        paths=ALL_THERE,
        cwd=CWD,
        exe_hint=["/opt/tools/venv/bin/tmuxlocd"],
        python_hint=HOOK[0],
    )


def test_the_plugin_install_writes_now_is_healthy() -> None:
    found = diagnose(install.plugin_text(HOOK))
    assert [(f.check, f.status) for f in found] == [("hooks", OK), ("hook-command", OK)]


def test_an_older_plugin_is_a_warning_to_install_again() -> None:
    assert install.plugin_argv(OLDER) == [*HOOK, "opencode"]  # still ours, still runnable
    found = diagnose(OLDER)
    assert [(f.check, f.status) for f in found] == [("hooks", WARNING), ("hook-command", OK)]
    assert "older plugin" in found[0].found
    assert found[0].fix is not None and found[0].fix.startswith("tmuxlocd install opencode")


def test_an_edited_plugin_is_a_warning_too() -> None:
    edited = install.plugin_text(HOOK).replace("const TIMEOUT_MS = 10000", "const TIMEOUT_MS = 1")
    found = diagnose(edited)
    assert found[0].status == WARNING
