"""pi (pinned) in a pane of a private tmux server against the chat-completions stub, with
the extension ``tmuxlocd install pi`` wrote (chat_harnesses).  Each test adds a row to the
report (``$TMUXLOCD_E2E_REPORT``), the extension's hook runs timed."""

from __future__ import annotations

from typing import Any

from tests.e2e.chat_harnesses import (
    Pi,
    first_prompt_then_again,
    killed_agent_goes,
    split_from_outside,
    stub,
    tool_call_splits_the_pane,
    unchanged_tool_call,
)
from tests.e2e.panes import HarnessRig, report
from tests.e2e.stub_base import Recorded, Text, Turn
from tests.e2e.stub_chat import ChatStub
from tests.tmuxtest import poll

__all__ = ["stub"]  # the fixture


def test_first_prompt_then_resume(hrig: HarnessRig, stub: ChatStub) -> None:
    """The first prompt tells the location once (turn 1); ``pi -p --continue`` with the
    location unchanged adds nothing: the first copy is replayed from the session."""
    pi = Pi(hrig, stub)
    pi.record("first_prompt_then_resume", first_prompt_then_again(pi))


def test_split_from_outside(hrig: HarnessRig, stub: ChatStub) -> None:
    pi = Pi(hrig, stub)
    pi.record("split_from_outside", split_from_outside(pi))


def test_tool_call_splits_the_pane(hrig: HarnessRig, stub: ChatStub) -> None:
    pi = Pi(hrig, stub)
    pi.record("tool_call_splits_the_pane", tool_call_splits_the_pane(pi))


def test_unchanged_tool_call(hrig: HarnessRig, stub: ChatStub) -> None:
    pi = Pi(hrig, stub)
    pi.record("unchanged_tool_call", unchanged_tool_call(pi))


def test_tui_idle_working_idle_then_gone(hrig: HarnessRig, stub: ChatStub) -> None:
    """SPEC §13 in pi's TUI: idle once it started (``session_start``), working while the
    model answers (``before_agent_start``), idle after the turn (``agent_end``), and none
    after it quit (``session_shutdown``).  pi asks the user nothing by itself: never
    waiting."""
    pi = Pi(hrig, stub)
    hrig.start_daemon()
    pi.setup()
    pane = hrig.first_pane
    seen: list[list[dict[str, Any]]] = []

    def decide(request: Recorded) -> Turn:
        poll(lambda: bool(hrig.agents()), 20, "the agent while pi asks", interval=0.05)
        seen.append(hrig.agents())
        return Text("reply-1")

    stub.decide = decide
    tag = hrig.start_in_pane(pane, pi.tui_argv(), pi.env(), interactive=True)

    def states() -> list[str]:
        return [a["state"] for a in hrig.agents()]

    poll(lambda: states() == ["idle"], 60, "the agent idle once pi started", interval=0.05)
    (started,) = hrig.agents()
    assert started["harness"] == "pi" and started["pane"] == pane, started
    hrig.send_keys(pane, "-l", "hello")
    hrig.wait_screen(pane, "hello")
    hrig.send_keys(pane, "Enter")
    hrig.wait_screen(pane, "reply-1")
    poll(lambda: states() == ["idle"], 20, "the agent idle after the turn", interval=0.05)
    assert [a["state"] for agents in seen for a in agents] == ["working"], seen
    assert seen[0][0]["session_id"] == started["session_id"], seen
    for _ in range(4):  # Ctrl+D on an empty editor quits
        hrig.send_keys(pane, "C-d")
        try:
            hrig.wait(tag, 10)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError(f"pi did not quit:\n{hrig.screen(pane)}")
    poll(lambda: hrig.agents() == [], 20, "no agent after pi quit", interval=0.05)
    events = [h.event for h in hrig.hook_runs()]
    assert events == ["SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"], events
    pi.record("agent_states", [], states_seen=["idle", "working", "idle", "gone"])


def test_killed_agent_goes(hrig: HarnessRig, stub: ChatStub) -> None:
    took = killed_agent_goes(Pi(hrig, stub))
    report({"harness": "pi", "kill": "-p", "gone_ms": round(took * 1000, 1)})
