"""Cline CLI (``core/harnesses/cline.py``): the events its plugin sends, what each means for
the location and for the agent, the installed plugin, the doctor's verdict (its hub); and
the plugin itself, run by node with a stand-in hook as Cline 3.0.65 calls a plugin's hooks
(skipped without node)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.plugins import NODE, run_plugin, stand_in
from tmuxlocd.clients import doctor, install
from tmuxlocd.clients.doctor import OK, PROBLEM, WARNING, PathFacts
from tmuxlocd.core import agents, harness
from tmuxlocd.core.harness import PROMPT, TOOL, parse_event
from tmuxlocd.core.harnesses import cline

EXE = ["/opt/tools/venv/bin/tmuxlocd"]
HOOK = ["/opt/tools/venv/bin/python3", "-S", "/opt/tools/venv/lib/tmuxlocd/clients/context.py"]
HOME = Path("/home/u")
CWD = Path("/home/u/project")
ALL_THERE = PathFacts(
    executables=frozenset({EXE[0], HOOK[0]}), files=frozenset({EXE[0], HOOK[0], HOOK[2]})
)
SESSION = "1765093301559_k2vrb"


def event(name: str, **more: Any) -> bytes:
    return json.dumps({"hook_event_name": name, "session_id": SESSION, **more}).encode()


def test_a_prompt_and_a_command_tell() -> None:
    prompt = parse_event("cline", event("UserPromptSubmit"))
    assert prompt is not None and prompt.kind == PROMPT and prompt.session == SESSION
    tool = parse_event("cline", event("PostToolUse", tool_name="run_commands"))
    assert tool is not None and tool.kind == TOOL
    assert parse_event("cline", event("PostToolUse", tool_name="read_files")) is None
    assert parse_event("cline", event("Stop")) is None
    assert harness.REPLAYED["cline"] == frozenset((harness.ORIGIN_TURN,))


@pytest.mark.parametrize(
    ("name", "state"),
    [("UserPromptSubmit", "working"), ("PostToolUse", "working"), ("Stop", "idle")],
)
def test_each_event_is_a_state_of_the_agent(name: str, state: str) -> None:
    report = agents.report_of("cline", json.loads(event(name)))
    assert report is not None and (report.state, report.session_id) == (state, SESSION)


def test_its_approval_prompt_tells_nothing() -> None:
    assert agents.report_of("cline", json.loads(event("PermissionRequest"))) is None


def plan(texts: dict[Path, str] | None = None, env: dict[str, str] | None = None, **kw: Any) -> Any:
    paths = install.config_paths("cline", False, HOME, CWD, env or {})
    before = {p: "" for p in paths.values()}
    before.update(texts or {})
    return {p.path: p.after for p in install.plan_files("cline", before, paths, EXE, HOOK, **kw)}


def test_install_writes_the_plugin_and_remove_deletes_it() -> None:
    path = HOME / ".cline" / "plugins" / "tmuxlocd.js"
    after = plan(remove=False)
    assert list(after) == [path]
    assert install.plugin_argv(after[path], "cline") == [*HOOK, "cline"]
    assert plan(dict(after), remove=True) == {path: ""}
    moved = install.config_paths("cline", False, HOME, CWD, {"CLINE_DIR": "/c"})
    assert moved == {"hooks": Path("/c/plugins/tmuxlocd.js")}
    project = install.config_paths("cline", True, HOME, CWD, {})
    assert project == {"hooks": CWD / ".cline" / "plugins" / "tmuxlocd.js"}


def diagnose(texts: dict[Path, str | None], env: dict[str, str]) -> Any:
    where = doctor.sources("cline", False, HOME, CWD, env)
    full: dict[Path, str | None] = dict.fromkeys(where.values())
    full.update(texts)
    return doctor.diagnose(
        "cline",
        project=False,
        where=where,
        texts=full,
        paths=ALL_THERE,
        cwd=CWD,
        exe_hint=EXE,
        env=env,
    )


def test_doctor_says_whether_the_hub_runs_the_sessions() -> None:
    installed = dict(plan(remove=False))
    local = diagnose(installed, {"CLINE_SESSION_BACKEND_MODE": "local"})
    assert [(f.check, f.status) for f in local] == [
        ("hooks", OK),
        ("hook-command", OK),
        ("hub", OK),
    ], local
    hub = [f for f in diagnose(installed, {}) if f.check == "hub"]
    assert [f.status for f in hub] == [WARNING]
    assert "CLINE_SESSION_BACKEND_MODE=auto" in hub[0].found
    assert hub[0].fix is not None and "CLINE_SESSION_BACKEND_MODE=local" in hub[0].fix
    assert [(f.check, f.status) for f in diagnose({}, {})] == [("hooks", PROBLEM)]


def test_a_running_hub_is_named() -> None:
    local, said = cline.backend({}, [4242])
    assert not local and "pid 4242" in said
    local, said = cline.backend({"CLINE_SESSION_BACKEND_MODE": "local"}, [])
    assert local and "own CLI" in said


# ----------------------------------------------------------------------------------------------
# The plugin, under node.


STAND_IN = """
import json, sys
event = json.loads(sys.stdin.read())
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(event) + "\\n")
name = event["hook_event_name"]
if name in ("UserPromptSubmit", "PostToolUse"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": name,
                                             "additionalContext": "told at " + name}}))
"""

# As Cline's plugin sandbox calls it: setup with the session, then the runtime's hooks.
DRIVER = """
const { default: plugin } = await import(process.argv[2])
plugin.setup({}, { session: { sessionId: "s1" } })
const snapshot = { agentId: "a", conversationId: "c1", parentAgentId: null }
const h = plugin.hooks
const out = {}
out.run = await h.beforeRun({ snapshot })
out.cmd = await h.afterTool({ snapshot, tool: { name: "run_commands" }, toolCall: {} })
out.read = await h.afterTool({ snapshot, tool: { name: "read_files" }, toolCall: {} })
out.sub = await h.beforeRun({ snapshot: { ...snapshot, parentAgentId: "a" } })
out.end = await h.afterRun({ snapshot, result: { status: "completed" } })
console.log(JSON.stringify({ out, manifest: plugin.manifest, name: plugin.name }))
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_plugin_sends_clines_hooks_and_appends_the_text(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    stdout = run_plugin(tmp_path, stand_in(tmp_path, STAND_IN, log), DRIVER, harness="cline")
    found = json.loads(stdout)
    assert found["manifest"] == {"capabilities": ["hooks"]}
    out = found["out"]
    assert out["run"] == {"appendContext": "told at UserPromptSubmit"}
    assert out["cmd"] == {"appendContext": "told at PostToolUse"}
    for key in ("read", "sub", "end"):
        assert out.get(key) is None, (key, out)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["hook_event_name"], e["session_id"]) for e in events] == [
        ("UserPromptSubmit", "s1"),  # setup's session id, not the conversation's
        ("PostToolUse", "s1"),
        ("Stop", "s1"),
    ]
