"""opencode (pinned) in a pane of a private tmux server against the chat-completions
stub, with what ``tmuxlocd install opencode`` wrote (chat_harnesses)."""

from __future__ import annotations

import json
import os
import select
import signal
import time
from pathlib import Path
from typing import Any

from tests.e2e.chat_harnesses import (
    Opencode,
    first_prompt_then_again,
    stub,
    title,
    tool_call_splits_the_pane,
)
from tests.e2e.panes import HarnessRig, report
from tests.e2e.stub_base import Recorded, Text, ToolCall, Turn
from tests.e2e.stub_chat import ChatStub, messages, text_of, tool_results
from tests.tmuxtest import poll

__all__ = ["stub"]  # the fixture


def test_first_prompt_then_again(hrig: HarnessRig, stub: ChatStub) -> None:
    first_prompt_then_again(Opencode(hrig, stub))


def test_tool_call_splits_the_pane(hrig: HarnessRig, stub: ChatStub) -> None:
    tool_call_splits_the_pane(Opencode(hrig, stub))


def test_run_agent_is_working_while_it_runs_and_gone_after(
    hrig: HarnessRig, stub: ChatStub
) -> None:
    """SPEC §13 with the real ``opencode run``: while the model is asked (after the plugin's
    prompt event) the daemon lists one opencode agent, in the pane, ``working``; a process
    that exited leaves no agent."""
    oc = Opencode(hrig, stub)
    hrig.start_daemon()
    oc.setup()
    pane = hrig.first_pane
    seen: list[list[dict[str, Any]]] = []

    def decide(request: Recorded) -> Turn:
        if not title(request):
            # The answer waits until the daemon lists the agent: no race with the exit.
            poll(lambda: bool(hrig.agents()), 20, "the agent while opencode runs", interval=0.05)
            seen.append(hrig.agents())
        return Text("done")

    stub.decide = decide
    oc.prompt("a prompt")
    assert seen, hrig.diagnostics()
    (agent,) = seen[0]
    assert agent["harness"] == "opencode" and agent["pane"] == pane, agent
    assert agent["state"] == "working", agent
    assert agent["session_id"].startswith("ses_"), agent
    poll(lambda: hrig.agents() == [], 20, "the agent gone after opencode run exited")


def start_tui(oc: Opencode, *, ask_bash: bool = False) -> str:
    """The opencode TUI in the first pane, ready for a prompt (``ask_bash``: its shell tool
    asks first, ``"permission": {"bash": "ask"}``)."""
    hrig = oc.hrig
    hrig.start_daemon()
    oc.setup()
    if ask_bash:
        path = Path(hrig.env()["XDG_CONFIG_HOME"]) / "opencode" / "opencode.json"
        config = json.loads(path.read_text())
        config["permission"] = {"bash": "ask"}
        path.write_text(json.dumps(config, indent=2) + "\n")
    tag = hrig.start_in_pane(hrig.first_pane, [oc.binary()], oc.env(), interactive=True)
    hrig.wait_screen(hrig.first_pane, "Ask anything", 120)
    return tag


def type_prompt(hrig: HarnessRig, text: str) -> None:
    hrig.send_keys(hrig.first_pane, "-l", text)
    hrig.wait_screen(hrig.first_pane, text)
    hrig.send_keys(hrig.first_pane, "Enter")  # apart from the text: else it may be pasted


def states(hrig: HarnessRig) -> list[tuple[str, str | None]]:
    return [(a["state"], a.get("reason")) for a in hrig.agents()]


def test_tui_permission_waits_then_works_and_quit_leaves_no_agent(
    hrig: HarnessRig, stub: ChatStub
) -> None:
    """The TUI's shell call under an asking permission: the agent waits (``permission:
    bash``) while the dialog is up, works again once it is approved (the request carrying the
    command's result is held until the daemon says so), is idle after the turn, and none is
    left once the TUI quits."""
    oc = Opencode(hrig, stub)
    pane = hrig.first_pane

    def decide(request: Recorded) -> Turn:
        if title(request):
            return Text("A title")
        if tool_results(request.body):
            poll(lambda: states(hrig) == [("working", None)], 20, "working after the approval")
            return Text("reply-done")
        return ToolCall("bash", {"command": "echo hi", "description": "say hi"})

    stub.decide = decide
    tag = start_tui(oc, ask_bash=True)
    type_prompt(hrig, "run it")
    want = [("waiting", "permission: bash")]
    poll(lambda: states(hrig) == want, 60, "waiting on the permission", interval=0.05)
    hrig.wait_screen(pane, "Allow once")
    hrig.send_keys(pane, "Enter")  # Allow once
    hrig.wait_screen(pane, "reply-done", 60)
    poll(lambda: states(hrig) == [("idle", None)], 20, "idle after the turn", interval=0.05)
    hrig.send_keys(pane, "C-c")  # an empty prompt: quit
    hrig.wait(tag, 30)
    poll(lambda: hrig.agents() == [], 20, "no agent after the TUI quit", interval=0.05)


def test_tui_killed_leaves_no_agent(hrig: HarnessRig, stub: ChatStub) -> None:
    """``kill -9`` of the TUI tells nothing to any plugin: the agent is gone by the daemon's
    hold on the process.  How long that takes is measured."""
    oc = Opencode(hrig, stub)
    stub.decide = lambda request: Text("A title" if title(request) else "reply-1")
    tag = start_tui(oc)
    type_prompt(hrig, "hello")
    hrig.wait_screen(hrig.first_pane, "reply-1", 60)
    poll(lambda: states(hrig) == [("idle", None)], 20, "idle after the turn", interval=0.05)
    (agent,) = hrig.agents()
    pid = agent["pid"]
    # The kernel's word on its exit, as the daemon hears it (a pidfd, readable once the whole
    # process has exited: a large one first gives back its memory), beside the daemon's.
    pidfd = os.pidfd_open(pid)
    seen: dict[str, float] = {}

    def check() -> bool:
        now = time.monotonic()
        if "exit" not in seen and select.select([pidfd], [], [], 0)[0]:
            seen["exit"] = now
        if hrig.agents() == []:
            seen["agent"] = now
            seen.setdefault("exit", now)
        return "agent" in seen

    try:
        killed = time.monotonic()
        os.kill(pid, signal.SIGKILL)
        poll(check, 10, "no agent after kill -9", interval=0.002)
    finally:
        os.close(pidfd)
    exit_ms, gone_ms = ((seen[k] - killed) * 1000 for k in ("exit", "agent"))
    hrig.wait(tag, 30)
    report(
        {
            "harness": "opencode",
            "kill": "TUI",
            "exit_ms": round(exit_ms, 1),
            "gone_ms": round(gone_ms, 1),
        }
    )
    print(f"opencode kill -9: pidfd readable at {exit_ms:.1f} ms, agent gone at {gone_ms:.1f} ms")


def first_user_text(request: Recorded) -> str:
    users = [m for m in messages(request.body) if m.get("role") == "user"]
    return text_of(users[0].get("content")) if users else ""


def test_tui_subagents_permission_is_its_root_sessions_agents(
    hrig: HarnessRig, stub: ChatStub
) -> None:
    """The model's ``task`` call runs a subagent in a child session; the child's shell call
    asks: the one agent, the root session's, waits (``permission: bash``), works once it is
    allowed, and is idle after the root's turn.  No agent of the child's session, ever."""
    oc = Opencode(hrig, stub)
    pane = hrig.first_pane
    seen: list[list[dict[str, Any]]] = []

    def decide(request: Recorded) -> Turn:
        if title(request):
            return Text("A title")
        seen.append(hrig.agents())
        if first_user_text(request) == "child job":
            if tool_results(request.body):
                return Text("child done")
            return ToolCall("bash", {"command": "echo hi", "description": "say hi"})
        if tool_results(request.body):
            return Text("reply-done")
        task = {"description": "a child", "prompt": "child job", "subagent_type": "general"}
        return ToolCall("task", task)

    stub.decide = decide
    start_tui(oc, ask_bash=True)
    type_prompt(hrig, "run it")
    poll(lambda: bool(seen and seen[0]), 60, "the root's agent", interval=0.05)
    root = seen[0][0]["session_id"]
    want = [("waiting", "permission: bash")]
    poll(lambda: states(hrig) == want, 60, "waiting on the child's permission", interval=0.05)
    (agent,) = hrig.agents()
    assert agent["session_id"] == root, (agent, root)
    hrig.wait_screen(pane, "Allow once")
    hrig.send_keys(pane, "Enter")  # Allow once
    hrig.wait_screen(pane, "reply-done", 60)
    poll(lambda: states(hrig) == [("idle", None)], 20, "idle after the turn", interval=0.05)
    assert len(seen) == 4, seen  # root, child, child after its tool, root after the task
    for agents in [*seen, hrig.agents()]:
        assert [a["session_id"] for a in agents] == [root], agents
    assert [a["state"] for a in seen[1] + seen[2] + seen[3]] == ["working"] * 3, seen


def test_tui_question_waits_then_works(hrig: HarnessRig, stub: ChatStub) -> None:
    """The model's ``question`` call: the agent waits (``question``) while it is asked, works
    once it is answered (the request carrying the answer is held until the daemon says so),
    and is idle after the turn."""
    oc = Opencode(hrig, stub)
    pane = hrig.first_pane
    options = [{"label": "Alpha", "description": "a"}, {"label": "Beta", "description": "b"}]
    question = {"question": "Which one?", "header": "Pick", "options": options}
    answers: list[str] = []

    def decide(request: Recorded) -> Turn:
        if title(request):
            return Text("A title")
        if tool_results(request.body):
            answers.extend(tool_results(request.body))
            poll(lambda: states(hrig) == [("working", None)], 20, "working after the answer")
            return Text("reply-done")
        return ToolCall("question", {"questions": [question]})

    stub.decide = decide
    start_tui(oc)
    type_prompt(hrig, "ask me")
    want = [("waiting", "question")]
    poll(lambda: states(hrig) == want, 60, "waiting on the question", interval=0.05)
    hrig.wait_screen(pane, "Alpha")
    hrig.send_keys(pane, "Enter")  # the first option
    hrig.wait_screen(pane, "reply-done", 60)
    assert any("Alpha" in a for a in answers), answers  # answered, not dismissed
    poll(lambda: states(hrig) == [("idle", None)], 20, "idle after the turn", interval=0.05)
