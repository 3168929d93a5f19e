"""Copilot CLI, Qwen Code, opencode and Antigravity CLI: events, output, install, doctor.

The shapes here are those observed (docs/harnesses.md: Copilot CLI 1.0.102, Qwen Code
0.24.4, opencode 1.18.33, run against a stub model with ``tests/tools/calibrate_harnesses.py``)
or documented (Antigravity CLI, not run).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tmuxlocd.clients import doctor, install
from tmuxlocd.clients.doctor import OK, PROBLEM, PathFacts
from tmuxlocd.core import harness
from tmuxlocd.core.harness import PROMPT, START, TOOL, parse_event, render

EXE = ["/opt/tools/venv/bin/tmuxlocd"]
HOOK = ["/opt/tools/venv/bin/python3", "-S", "/opt/tools/venv/lib/tmuxlocd/clients/context.py"]
HOME = Path("/home/u")
CWD = Path("/home/u/project")
ENV: dict[str, str] = {}
ALL_THERE = PathFacts(
    executables=frozenset({EXE[0], HOOK[0]}), files=frozenset({EXE[0], HOOK[0], HOOK[2]})
)
NEW = ("copilot", "qwen", "opencode", "antigravity")


def data(value: dict[str, Any]) -> bytes:
    return json.dumps(value).encode()


# ----------------------------------------------------------------------------------------------
# Events, as each harness writes them (Copilot CLI's and Qwen Code's as recorded).

COPILOT_START = {
    "sessionId": "f9b516a5-3ff0-4da4-bb97-9192dad17329",
    "timestamp": 1796336281794,
    "cwd": "/tmp/w",
    "source": "new",
    "initialPrompt": "hello",
}
COPILOT_TOOL = {
    "sessionId": "f9b516a5-3ff0-4da4-bb97-9192dad17329",
    "timestamp": 1796336282132,
    "cwd": "/tmp/w",
    "toolName": "bash",
    "toolArgs": {"command": "echo ran-it", "description": "run it"},
    "toolResult": {"resultType": "success", "textResultForLlm": "ran-it\n"},
}


def test_copilot_events_take_their_name_from_the_command_line() -> None:
    event = parse_event("copilot", data(COPILOT_START), "sessionStart")
    assert event is not None
    assert (event.kind, event.session, event.source) == (
        START,
        COPILOT_START["sessionId"],
        "startup",
    )
    resumed = parse_event("copilot", data({**COPILOT_START, "source": "resume"}), "sessionStart")
    assert resumed is not None and resumed.source == "resume"
    prompt = parse_event("copilot", data({"sessionId": "s", "prompt": "hi"}), "userPromptSubmitted")
    assert prompt is not None and prompt.kind == PROMPT
    tool = parse_event("copilot", data(COPILOT_TOOL), "postToolUse")
    assert tool is not None and tool.kind == TOOL
    # No name, an unknown one, another tool (Copilot's hooks have no matcher), no session.
    assert parse_event("copilot", data(COPILOT_START)) is None
    assert parse_event("copilot", data(COPILOT_START), "preToolUse") is None
    assert parse_event("copilot", data({**COPILOT_TOOL, "toolName": "view"}), "postToolUse") is None
    assert parse_event("copilot", data({"prompt": "hi"}), "userPromptSubmitted") is None


def test_qwen_and_opencode_events_are_claude_shaped() -> None:
    qwen = {
        "session_id": "56d5d0e8",
        "transcript_path": "/home/u/.qwen/projects/p/chats/56d5d0e8.jsonl",
        "cwd": "/tmp/w",
        "hook_event_name": "SessionStart",
        "permission_mode": "yolo",
        "source": "startup",
        "model": "stub-model",
    }
    event = parse_event("qwen", data(qwen))
    assert event is not None and (event.kind, event.source) == (START, "startup")
    assert parse_event("qwen", data({**qwen, "hook_event_name": "BeforeAgent"})) is None
    plugin = {"hook_event_name": "PostToolUse", "session_id": "ses_dc201ea54ffe"}
    event = parse_event("opencode", data(plugin))
    assert event is not None and event.kind == TOOL


@pytest.mark.parametrize(
    ("number", "acts"),
    [(0, True), (1, False), (7, False), (None, False), ("0", False), (0.0, False), (True, False)],
)
def test_antigravity_acts_on_a_turns_first_model_call_only(number: object, acts: bool) -> None:
    payload = {"conversationId": "c-1", "invocationNum": number, "workspacePaths": ["/tmp"]}
    event = parse_event("antigravity", data(payload), "PreInvocation")
    assert (event is not None) == acts
    if event is not None:
        assert (event.kind, event.session) == (PROMPT, "c-1")


def test_each_harness_gets_its_own_output_shape() -> None:
    text = 'tmux location (turn 2):\nsession "a", pane 0 %3\n'
    assert json.loads(render("copilot", "postToolUse", text)) == {"additionalContext": text}
    assert json.loads(render("antigravity", "PreInvocation", text)) == {
        "injectSteps": [{"ephemeralMessage": text}]
    }
    for name in ("qwen", "opencode"):
        assert json.loads(render(name, "UserPromptSubmit", text)) == {
            "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}
        }


def test_the_hook_end_to_end_for_copilot(tmp_path: Path) -> None:
    """``python -S context.py copilot --event sessionStart`` outside tmux (no pane): prints
    nothing, exits 0, even for a payload it acts on."""
    env = {"PATH": "/usr/bin:/bin", "XDG_RUNTIME_DIR": str(tmp_path), "HOME": str(tmp_path)}
    script = str(Path(harness.__file__).parents[1] / "clients" / "context.py")
    proc = subprocess.run(
        [sys.executable, "-S", script, "copilot", "--event", "sessionStart"],
        input=data(COPILOT_START),
        capture_output=True,
        env=env,
        check=False,
        timeout=30,
        start_new_session=True,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")


# ----------------------------------------------------------------------------------------------
# install


def plan(name: str, texts: dict[Path, str] | None = None, **kw: Any) -> dict[Path, str]:
    paths = install.config_paths(name, False, HOME, CWD, ENV)
    before = {p: "" for p in paths.values()}
    before.update(texts or {})
    plans = install.plan_files(name, before, paths, EXE, HOOK, **kw)
    return {p.path: p.after for p in plans}


def test_copilot_install_writes_its_own_hooks_file_and_mcp_entry() -> None:
    after = plan("copilot", remove=False)
    hooks = json.loads(after[HOME / ".copilot" / "hooks" / "tmuxlocd.json"])
    assert list(hooks) == ["version", "hooks"] and hooks["version"] == 1
    # No sessionStart: Copilot runs it concurrently with the first prompt's hook.  The
    # agent state's events follow the context hook's (spec §13).
    assert list(hooks["hooks"]) == [
        "userPromptSubmitted",
        "postToolUse",
        "notification",
        "postToolUseFailure",
        "agentStop",
        "sessionEnd",
    ]
    for event, entries in hooks["hooks"].items():
        assert entries == [
            {
                "type": "command",
                "bash": shlex.join([*HOOK, "copilot", "--event", event]),
                "timeoutSec": 10,
            }
        ]
    mcp = json.loads(after[HOME / ".copilot" / "mcp-config.json"])
    assert mcp == {
        "mcpServers": {
            "tmux": {"type": "local", "command": EXE[0], "args": ["mcp"], "tools": ["*"]}
        }
    }
    # Installing again changes nothing; remove empties both files (install created them).
    texts = dict(after)
    assert plan("copilot", texts, remove=False) == texts
    assert set(plan("copilot", texts, remove=True).values()) == {""}


def test_copilot_remove_keeps_other_hooks_in_the_file() -> None:
    path = HOME / ".copilot" / "hooks" / "tmuxlocd.json"
    mine = json.loads(plan("copilot", remove=False)[path])
    theirs = {"type": "command", "bash": "./audit.sh", "timeoutSec": 5}
    mine["hooks"]["postToolUse"].append(theirs)
    after = plan("copilot", {path: json.dumps(mine, indent=2) + "\n"}, remove=True)
    assert json.loads(after[path]) == {"version": 1, "hooks": {"postToolUse": [theirs]}}


def test_qwen_install_timeouts_are_ten_seconds_in_every_version() -> None:
    path = HOME / ".qwen" / "settings.json"
    settings = json.loads(plan("qwen", remove=False)[path])
    hooks = settings["hooks"]
    assert list(hooks) == [
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse",
        # The agent state's (spec §13), every one without a matcher.
        "PermissionRequest",
        "Notification",
        "Stop",
        "StopFailure",
        "SessionEnd",
    ]
    assert hooks["PostToolUse"][0]["matcher"] == "run_shell_command"
    assert all("matcher" not in hooks[e][0] for e in list(hooks)[3:])
    for groups in hooks.values():
        entry = groups[0]["hooks"][0]
        # 0.24 reads seconds below 1000 and milliseconds from 1000; 0.15 reads milliseconds.
        assert entry == {
            "type": "command",
            "command": shlex.join([*HOOK, "qwen"]),
            "timeout": 10000,
        }
    assert settings["mcpServers"]["tmux"] == {"command": EXE[0], "args": ["mcp"]}


def test_antigravity_install_is_a_named_hook_of_flat_handlers() -> None:
    """Antigravity CLI's hooks.json: each top-level key names a hook, whose non-tool events
    (``PreInvocation``, ``Stop``) are flat lists of handlers; the event in the command."""
    path = HOME / ".gemini" / "config" / "hooks.json"
    after = plan("antigravity", remove=False)
    assert list(after) == [path]  # no MCP entry: its shape is not known here

    def handlers(event: str) -> list[dict[str, object]]:
        command = shlex.join([*HOOK, "antigravity", "--event", event])
        return [{"type": "command", "command": command, "timeout": 10}]

    # The context hook's event, and the agent state's ``Stop``.
    assert json.loads(after[path]) == {
        "tmuxlocd": {"PreInvocation": handlers("PreInvocation"), "Stop": handlers("Stop")}
    }
    assert plan("antigravity", dict(after), remove=True) == {path: ""}


def test_antigravity_install_replaces_the_earlier_shape_and_keeps_the_users() -> None:
    """Installs before wrote ``{"hooks": {"PreInvocation": [{"matcher": "", ...}]}}``: a new
    install takes ours out of it and leaves another named hook alone."""
    path = HOME / ".gemini" / "config" / "hooks.json"
    old_command = shlex.join([*HOOK, "antigravity", "--event", "PreInvocation"])
    theirs = {"Stop": [{"type": "command", "command": "make lint"}]}
    before = {
        "hooks": {
            "PreInvocation": [
                {"matcher": "", "hooks": [{"type": "command", "command": old_command}]}
            ]
        },
        "lint-on-stop": theirs,
    }
    after = json.loads(plan("antigravity", {path: json.dumps(before)}, remove=False)[path])
    assert set(after) == {"lint-on-stop", "tmuxlocd"}
    assert after["lint-on-stop"] == theirs
    removed = json.loads(plan("antigravity", {path: json.dumps(after)}, remove=True)[path])
    assert removed == {"lint-on-stop": theirs}


def test_opencode_install_writes_the_plugin_with_the_hook_command() -> None:
    path = HOME / ".config" / "opencode" / "plugins" / "tmuxlocd.js"
    after = plan("opencode", remove=False)
    assert list(after) == [path]
    assert after[path].startswith(install.plugin_mark("opencode"))
    assert install.plugin_argv(after[path], "opencode") == [*HOOK, "opencode"]
    assert "experimental.chat.system.transform" in after[path]
    assert plan("opencode", dict(after), remove=True) == {path: ""}
    with pytest.raises(install.InstallError, match="not tmuxlocd's plugin"):
        plan("opencode", {path: "export const Mine = async () => ({})\n"}, remove=False)


def test_opencode_plugin_honours_xdg_config_home() -> None:
    paths = install.config_paths("opencode", False, HOME, CWD, {"XDG_CONFIG_HOME": "/cfg"})
    assert paths == {"hooks": Path("/cfg/opencode/plugins/tmuxlocd.js")}


@pytest.mark.parametrize("name", NEW)
def test_every_new_command_is_recognised_as_ours(name: str) -> None:
    assert install.is_ours(install.hook_command(HOOK, name, 250, "x"))
    assert install.is_ours(install.hook_command(["tmuxlocd", "context"], name))


# ----------------------------------------------------------------------------------------------
# doctor


def diagnose(name: str, texts: dict[Path, str | None], paths: PathFacts = ALL_THERE) -> Any:
    where = doctor.sources(name, False, HOME, CWD, ENV)
    full: dict[Path, str | None] = dict.fromkeys(where.values())
    full.update(texts)
    return doctor.diagnose(
        name,
        project=False,
        where=where,
        texts=full,
        paths=paths,
        cwd=CWD,
        exe_hint=EXE,
        python_hint=HOOK[0],
    )


def installed(name: str) -> dict[Path, str | None]:
    return {p: t or None for p, t in plan(name, remove=False).items()}


@pytest.mark.parametrize("name", NEW)
def test_doctor_healthy_after_install(name: str) -> None:
    found = diagnose(name, installed(name))
    assert found and all(f.status == OK for f in found), found
    assert {f.harness for f in found} == {name}


@pytest.mark.parametrize("name", NEW)
def test_doctor_not_installed(name: str) -> None:
    found = diagnose(name, {})
    assert [(f.check, f.status) for f in found] == [("hooks", PROBLEM)]
    assert f"tmuxlocd install {name}" == found[0].fix


@pytest.mark.parametrize("name", NEW)
def test_doctor_moved_installation(name: str) -> None:
    found = diagnose(name, installed(name), PathFacts())
    bad = [f for f in found if f.check == "hook-command"]
    assert [f.status for f in bad] == [PROBLEM]
    assert HOOK[0] in bad[0].found


def test_doctor_copilot_missing_event() -> None:
    texts = installed("copilot")
    path = HOME / ".copilot" / "hooks" / "tmuxlocd.json"
    value = json.loads(texts[path] or "")
    del value["hooks"]["postToolUse"]
    texts[path] = json.dumps(value)
    found = diagnose("copilot", texts)
    hooks = [f for f in found if f.check == "hooks"]
    assert hooks[0].status == PROBLEM and "missing postToolUse" in hooks[0].found


def test_doctor_qwen_disable_all_hooks() -> None:
    texts = installed("qwen")
    path = HOME / ".qwen" / "settings.json"
    texts[path] = json.dumps({**json.loads(texts[path] or ""), "disableAllHooks": True})
    found = diagnose("qwen", texts)
    off = [f for f in found if f.check == "hooks-enabled"]
    assert off[0].status == PROBLEM and "Qwen Code runs no hook" in off[0].found


def test_doctor_opencode_plugin_that_is_not_ours() -> None:
    path = HOME / ".config" / "opencode" / "plugins" / "tmuxlocd.js"
    found = diagnose("opencode", {path: "export const X = 1\n"})
    assert [(f.check, f.status) for f in found] == [("hooks", PROBLEM)]
    assert doctor.named_paths(
        "opencode",
        doctor.sources("opencode", False, HOME, CWD, ENV),
        {path: install.plugin_text(HOOK, "opencode")},
    ) == [(HOOK[0], "exe"), (HOOK[2], "file")]


def test_antigravity_is_told_every_turn_and_labelled() -> None:
    """An ephemeral step lasts one turn: each turn's first model call is told the location,
    unchanged or not, with its turn; the state keeps the turn count."""
    from tmuxlocd.core.harness import Reading, conclude, plan

    block = 'tmux location:\nsession s, window 0 "w", pane 0 %1\n'
    prior = None
    texts = []
    for turn in (1, 2, 3):
        payload = {"conversationId": "c-1", "invocationNum": 0}
        event = parse_event("antigravity", data(payload), "PreInvocation")
        assert event is not None
        step = plan(event, prior, 1000 * turn, 0)
        assert step.ask and step.etag == ""  # a full reading: no 304 to rely on
        outcome = conclude(event, step, Reading("location", block, '"e"'), 1000 * turn)
        texts.append(outcome.text)
        prior = outcome.state
    assert texts == [
        f'tmux location (turn {n}):\nsession s, window 0 "w", pane 0 %1\n' for n in (1, 2, 3)
    ]
