"""pi (``core/harnesses/pi.py``): the events its extension sends, what each means for the
location and for the agent, the rendered answer, the installed extension, the doctor's
verdict; and the extension itself, run by node against a stand-in ``pi`` and hook (skipped
without node).  The extension's events are those pi 0.73.1 fires (docs/harnesses.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.unit.plugins import NODE, run_plugin, stand_in
from tmuxlocd.clients import doctor, install
from tmuxlocd.clients.doctor import OK, PROBLEM, PathFacts
from tmuxlocd.core import agents, harness
from tmuxlocd.core.harness import PRECOMPACT, PROMPT, TOOL, State, parse_event, render

EXE = ["/opt/tools/venv/bin/tmuxlocd"]
HOOK = ["/opt/tools/venv/bin/python3", "-S", "/opt/tools/venv/lib/tmuxlocd/clients/context.py"]
HOME = Path("/home/u")
CWD = Path("/home/u/project")
ALL_THERE = PathFacts(
    executables=frozenset({EXE[0], HOOK[0]}), files=frozenset({EXE[0], HOOK[0], HOOK[2]})
)
SESSION = "019af3c2-7d1e-7c4a-9a3e-5b2f1d0c8e11"  # pi's session ids are UUIDv7s
A = "tmux location:\nsession main, window 0 (main), pane %0\n"


def event(name: str, **more: Any) -> dict[str, Any]:
    return {"hook_event_name": name, "session_id": SESSION, "cwd": "/w", **more}


def data(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()


# ----------------------------------------------------------------------------------------------
# The location.


def test_a_prompt_and_a_bash_result_tell_a_session_start_does_not() -> None:
    prompt = parse_event("pi", data(event("UserPromptSubmit")))
    assert prompt is not None and prompt.kind == PROMPT and prompt.session == SESSION
    tool = parse_event("pi", data(event("PostToolUse", tool_name="bash")))
    assert tool is not None and tool.kind == TOOL
    # pi cannot add to a history before a prompt: its session start is the agent's only.
    assert parse_event("pi", data(event("SessionStart", source="startup"))) is None
    assert parse_event("pi", data(event("PostToolUse", tool_name="read"))) is None
    assert parse_event("pi", data(event("Stop"))) is None


def test_a_compaction_forgets_what_was_told() -> None:
    """pi summarised the history (``session_compact``): the next prompt tells it again."""
    compact = parse_event("pi", data(event("PreCompact", trigger="manual")))
    assert compact is not None and compact.kind == PRECOMPACT
    told = State(1, 1000, '"e1"', A, harness.ORIGIN_TURN)
    step = harness.plan(compact, told, 2000, 0)
    out = harness.conclude(compact, step, None, 2000)
    assert out.text is None and out.state is not None and out.state.block == ""
    prompt = parse_event("pi", data(event("UserPromptSubmit")))
    assert prompt is not None
    again = harness.plan(prompt, out.state, 3000, 0)
    assert again.ask and again.etag == ""  # no ETag: the location is read and told


def test_a_continued_session_holds_what_its_prompts_were_told() -> None:
    assert harness.REPLAYED["pi"] == frozenset((harness.ORIGIN_TURN,))


def test_the_answer_is_claude_shaped_for_the_extension() -> None:
    out = json.loads(render("pi", "UserPromptSubmit", A))
    assert out == {
        "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": A}
    }


# ----------------------------------------------------------------------------------------------
# The agent.


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("SessionStart", "idle"),
        ("UserPromptSubmit", "working"),
        ("PostToolUse", "working"),
        ("Stop", "idle"),
        ("SessionEnd", "gone"),
    ],
)
def test_each_event_is_a_state_of_the_agent(name: str, state: str) -> None:
    report = agents.report_of("pi", event(name))
    assert report is not None and (report.state, report.session_id) == (state, SESSION)


def test_nothing_makes_it_wait() -> None:
    """No permission dialog, no question tool: no event of pi's says waiting."""
    assert agents.report_of("pi", event("PermissionRequest")) is None
    assert agents.report_of("pi", event("Notification", notification_type="x")) is None
    assert agents.report_of("pi", event("PreCompact")) is None


# ----------------------------------------------------------------------------------------------
# install and doctor


def plan(texts: dict[Path, str] | None = None, env: dict[str, str] | None = None, **kw: Any) -> Any:
    paths = install.config_paths("pi", False, HOME, CWD, env or {})
    before = {p: "" for p in paths.values()}
    before.update(texts or {})
    return {p.path: p.after for p in install.plan_files("pi", before, paths, EXE, HOOK, **kw)}


def test_install_writes_the_extension_and_remove_deletes_it() -> None:
    path = HOME / ".pi" / "agent" / "extensions" / "tmuxlocd.js"
    after = plan(remove=False)
    assert list(after) == [path]
    assert after[path].startswith(install.plugin_mark("pi"))
    assert install.plugin_argv(after[path], "pi") == [*HOOK, "pi"]
    assert 'pi.on("before_agent_start"' in after[path]
    assert plan(dict(after), remove=True) == {path: ""}
    with pytest.raises(install.InstallError, match="not tmuxlocd's plugin"):
        plan({path: "export default function (pi) {}\n"}, remove=False)


def test_install_honours_the_agent_directory_and_a_project() -> None:
    moved = install.config_paths("pi", False, HOME, CWD, {"PI_CODING_AGENT_DIR": "/pi"})
    assert moved == {"hooks": Path("/pi/extensions/tmuxlocd.js")}
    project = install.config_paths("pi", True, HOME, CWD, {})
    assert project == {"hooks": CWD / ".pi" / "extensions" / "tmuxlocd.js"}


def diagnose(texts: dict[Path, str | None], paths: PathFacts = ALL_THERE) -> Any:
    where = doctor.sources("pi", False, HOME, CWD, {})
    full: dict[Path, str | None] = dict.fromkeys(where.values())
    full.update(texts)
    return doctor.diagnose(
        "pi", project=False, where=where, texts=full, paths=paths, cwd=CWD, exe_hint=EXE
    )


def test_doctor() -> None:
    installed = {p: t for p, t in plan(remove=False).items()}
    found = diagnose(dict(installed))
    assert found and all(f.status == OK for f in found), found
    assert [(f.check, f.status) for f in diagnose({})] == [("hooks", PROBLEM)]
    moved = [f for f in diagnose(dict(installed), PathFacts()) if f.check == "hook-command"]
    assert [f.status for f in moved] == [PROBLEM]


# ----------------------------------------------------------------------------------------------
# The extension, under node, as pi 0.73.1 calls it.


# The stand-in for ``tmuxlocd context pi``: logs each event, and tells at a prompt and after
# a command.
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

# A stand-in ``pi``: the handlers the extension registers, called in pi's order.
DRIVER = """
const { default: extension } = await import(process.argv[2])
const handlers = {}
extension({ on: (name, fn) => { handlers[name] = fn } })
const ctx = { cwd: "/w", sessionManager: { getSessionId: () => "s1" } }
const out = {}
out.start = await handlers["session_start"]({ type: "session_start", reason: "startup" }, ctx)
out.prompt = await handlers["before_agent_start"]({ prompt: "hi", systemPrompt: "sys" }, ctx)
const result = { toolName: "bash", content: [{ type: "text", text: "ok" }] }
out.bash = await handlers["tool_result"](result, ctx)
out.read = await handlers["tool_result"]({ ...result, toolName: "read" }, ctx)
out.compact = await handlers["session_compact"]({}, ctx)
out.end = await handlers["agent_end"]({ messages: [] }, ctx)
out.quit = await handlers["session_shutdown"]({ reason: "quit" }, ctx)
out.nosession = await handlers["before_agent_start"]({}, { sessionManager: {} })
console.log(JSON.stringify(out))
"""


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_the_extension_sends_pis_events_and_places_the_text(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    stdout = run_plugin(tmp_path, stand_in(tmp_path, STAND_IN, log), DRIVER, harness="pi")
    out = json.loads(stdout)
    message = {"customType": "tmuxlocd", "content": "told at UserPromptSubmit", "display": False}
    assert out["prompt"] == {"message": message}
    texts = [{"type": "text", "text": "ok"}, {"type": "text", "text": "told at PostToolUse"}]
    assert out["bash"] == {"content": texts}
    for key in ("start", "read", "compact", "end", "quit", "nosession"):
        assert out.get(key) is None, (key, out)
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["hook_event_name"], e["session_id"]) for e in events] == [
        ("SessionStart", "s1"),
        ("UserPromptSubmit", "s1"),
        ("PostToolUse", "s1"),
        ("PreCompact", "s1"),
        ("Stop", "s1"),
        ("SessionEnd", "s1"),
    ]
    assert events[0]["source"] == "startup" and events[3]["trigger"] == "manual"
