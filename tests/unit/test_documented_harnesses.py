"""Cursor CLI, goose, Crush and Kiro CLI: their documented hook payloads, as the hook reads
them (the event, the agent's state, the output), and the files ``install`` writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from tmuxlocd.clients import install
from tmuxlocd.core import agents, harness
from tmuxlocd.core.harness import PROMPT, START

HOOK = ["/opt/venv/bin/python3", "-S", "/opt/venv/lib/tmuxlocd/clients/context.py"]
EXE = ["/opt/venv/bin/tmuxlocd"]
TEXT = "tmux location:\nsession s window 0 pane %1\n"


def parse(name: str, payload: Mapping[str, object]) -> harness.HookEvent | None:
    return harness.parse_event(name, json.dumps(payload).encode())


def state(name: str, payload: Mapping[str, object]) -> tuple[str, str] | None:
    found = agents.report_of(name, payload)
    return None if found is None else (found.session_id, found.state)


def test_cursor_session_start_tells_in_additional_context() -> None:
    start = {"hook_event_name": "sessionStart", "conversation_id": "c-1", "generation_id": "g"}
    event = parse("cursor", start)
    assert event is not None and (event.kind, event.session) == (START, "c-1")
    out = json.loads(harness.render("cursor", "sessionStart", TEXT))
    assert out == {"additional_context": TEXT}
    # Fire-and-forget events tell nothing, but say the agent works.
    shell = {"hook_event_name": "afterShellExecution", "conversation_id": "c-1", "command": "ls"}
    assert parse("cursor", shell) is None
    assert state("cursor", shell) == ("c-1", "working")
    assert state("cursor", {"hook_event_name": "stop", "conversation_id": "c-1"}) == (
        "c-1",
        "idle",
    )


def test_crush_tells_before_a_shell_command_in_its_context_envelope() -> None:
    pre = {"event": "PreToolUse", "session_id": "313909e", "tool_name": "bash", "cwd": "/p"}
    event = parse("crush", pre)
    assert event is not None and (event.kind, event.session) == (PROMPT, "313909e")
    assert json.loads(harness.render("crush", "PreToolUse", TEXT)) == {"context": TEXT}
    assert state("crush", {**pre, "tool_name": "edit"}) == ("313909e", "working")
    # Claude Code's field name is not Crush's: no event.
    assert parse("crush", {"hook_event_name": "PreToolUse", "session_id": "s"}) is None


def test_goose_hooks_tell_state_and_no_location() -> None:
    prompt = {"event": "UserPromptSubmit", "session_id": "abc-123", "message": "hi"}
    assert parse("goose", prompt) is None  # goose adds no hook's text to the context
    assert state("goose", prompt) == ("abc-123", "working")
    assert state("goose", {"event": "Stop", "session_id": "abc-123"}) == ("abc-123", "idle")
    assert state("goose", {"event": "SessionEnd", "session_id": "abc-123"}) == (
        "abc-123",
        "gone",
    )


def test_kiro_payload_has_no_session_so_the_directory_is_one() -> None:
    spawn = {"hook_event_name": "agentSpawn", "cwd": "/home/u/p"}
    event = parse("kiro", spawn)
    assert event is not None and (event.kind, event.session) == (START, "cwd:/home/u/p")
    assert harness.render("kiro", "agentSpawn", TEXT) == TEXT.encode()  # stdout as it is
    prompt = {"hook_event_name": "userPromptSubmit", "cwd": "/home/u/p", "prompt": "x"}
    assert parse("kiro", prompt) is not None
    stop = {"hook_event_name": "stop", "cwd": "/home/u/p"}
    assert state("kiro", stop) == ("cwd:/home/u/p", "idle")
    assert parse("kiro", {"hook_event_name": "agentSpawn"}) is None  # no cwd: nothing


def plan(name: str, home: Path, remove: bool = False, texts: dict[Path, str] | None = None):  # type: ignore[no-untyped-def]
    paths = install.config_paths(name, False, home, home / "p", {})
    now = {p: "" for p in paths.values()} | (texts or {})
    return install.plan_files(name, now, paths, EXE, HOOK, remove=remove), paths


def test_install_writes_each_documented_shape(tmp_path: Path) -> None:
    plans, paths = plan("cursor", tmp_path)
    hooks = json.loads(next(p.after for p in plans if p.path == paths["hooks"]))
    assert hooks["version"] == 1
    assert hooks["hooks"]["sessionStart"] == [{"command": install.hook_command(HOOK, "cursor")}]
    plans, paths = plan("crush", tmp_path)
    (entry,) = json.loads(plans[0].after)["hooks"]["PreToolUse"][:1]
    assert entry["matcher"] == "^bash$" and entry["timeout"] == 10
    plans, paths = plan("goose", tmp_path)
    manifest = next(p.after for p in plans if p.path == paths["manifest"])
    assert json.loads(manifest)["name"] == "tmuxlocd"
    assert paths["hooks"] == tmp_path / ".agents/plugins/tmuxlocd/hooks/hooks.json"
    written = {p.path: p.after for p in plans}
    removed, _ = plan("goose", tmp_path, remove=True, texts=written)
    assert all(p.after == "" for p in removed)  # remove leaves no file of ours
    plans, paths = plan("kiro", tmp_path)
    agent = json.loads(plans[0].after)
    assert agent["name"] == "tmuxlocd" and agent["tools"] == ["*"]
    assert set(agent["hooks"]) == {"agentSpawn", "userPromptSubmit", "postToolUse", "stop"}
    removed, _ = plan("kiro", tmp_path, remove=True, texts={paths["hooks"]: plans[0].after})
    assert removed[0].after == ""


def test_install_with_no_harness_named_takes_what_it_finds(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    found = dict(
        install.found_harnesses(tmp_path, {}, lambda b: "/bin/goose" if b == "goose" else None)
    )
    assert found["claude"] is None and found["goose"] is None
    assert found["codex"] == f"no {tmp_path}/.codex and no codex on PATH"
    said: list[str] = []
    status, done = install.run_all(
        out=said.append, home=tmp_path, cwd=tmp_path, exe=EXE, hook=HOOK, dry_run=True
    )
    assert status == 0 and "claude" in done
    assert any(line.startswith("skipped codex: no ") for line in said)
