"""doctor on Antigravity CLI's hooks.json: what ``install`` writes now (a named hook of flat
handlers) is healthy; the earlier shape (under "hooks", matcher groups) lacks ``Stop``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tmuxlocd.clients import doctor, install
from tmuxlocd.clients.doctor import OK, PROBLEM, PathFacts

HOOK = ["/opt/tools/venv/bin/python3", "-S", "/opt/tools/venv/lib/tmuxlocd/clients/context.py"]
HOME = Path("/home/u")
CWD = Path("/home/u/project")
FILE = HOME / ".gemini" / "config" / "hooks.json"
ALL_THERE = PathFacts(executables=frozenset({HOOK[0]}), files=frozenset({HOOK[0], HOOK[2]}))


def diagnose(text: str) -> list[doctor.Finding]:
    where = doctor.sources("antigravity", False, HOME, CWD, {})
    texts: dict[Path, str | None] = dict.fromkeys(where.values())
    texts[FILE] = text
    return doctor.diagnose(
        "antigravity",
        project=False,
        where=where,
        texts=texts,
        paths=ALL_THERE,
        cwd=CWD,
        exe_hint=["/opt/tools/venv/bin/tmuxlocd"],
        python_hint=HOOK[0],
    )


def test_what_install_writes_now_is_healthy() -> None:
    command = shlex.join([*HOOK, "antigravity"])
    written = install.add_hooks({}, "antigravity", command)
    found = {f.check: f for f in diagnose(json.dumps(written))}
    assert found["hooks"].status == OK, found["hooks"]
    assert "PreInvocation, Stop" in found["hooks"].found


def test_the_earlier_shape_is_named_as_missing_the_stop_hook() -> None:
    command = shlex.join([*HOOK, "antigravity", "--event", "PreInvocation"])
    earlier = {
        "hooks": {
            "PreInvocation": [{"matcher": "", "hooks": [{"type": "command", "command": command}]}]
        }
    }
    found = {f.check: f for f in diagnose(json.dumps(earlier))}
    assert found["hooks"].status == PROBLEM, found["hooks"]
    assert "missing" in found["hooks"].found
