"""GitHub Copilot CLI (pinned) in a pane of a private tmux server against the chat-completions
stub, with what ``tmuxlocd install copilot`` wrote (chat_harnesses)."""

from __future__ import annotations

from tests.e2e.chat_harnesses import (
    Copilot,
    agent_working_then_gone,
    first_prompt_then_again,
    killed_agent_goes,
    stub,
    tool_call_splits_the_pane,
    tui_permission_approved_then_denied,
    tui_question,
)
from tests.e2e.panes import HarnessRig, report
from tests.e2e.stub_chat import ChatStub

__all__ = ["stub"]  # the fixture


def test_first_prompt_then_again(hrig: HarnessRig, stub: ChatStub) -> None:
    first_prompt_then_again(Copilot(hrig, stub))


def test_tool_call_splits_the_pane(hrig: HarnessRig, stub: ChatStub) -> None:
    tool_call_splits_the_pane(Copilot(hrig, stub))


def test_agent_working_during_a_prompt_then_gone(hrig: HarnessRig, stub: ChatStub) -> None:
    """SPEC §13: ``copilot -p``'s agent is working in its pane while the model answers;
    its ``sessionEnd`` (or its exit) leaves none."""
    agent_working_then_gone(Copilot(hrig, stub))


def test_killed_agent_goes(hrig: HarnessRig, stub: ChatStub) -> None:
    took = killed_agent_goes(Copilot(hrig, stub))
    report({"harness": "copilot", "kill": "-p", "gone_ms": round(took * 1000, 1)})
    print(f"copilot: agent gone {took * 1000:.0f} ms after kill -9")


def test_tui_permission_then_idle_and_gone_on_exit(hrig: HarnessRig, stub: ChatStub) -> None:
    """SPEC §13 in Copilot CLI's TUI: its ``notification`` (``permission_prompt``, no tool
    named) makes the agent waiting; approved, ``postToolUse`` working and ``agentStop`` idle.
    A denial runs no hook at all: the agent stays waiting until its next event."""
    tui_permission_approved_then_denied(Copilot(hrig, stub), "permission", "waiting")


def test_tui_question_waiting_then_idle(hrig: HarnessRig, stub: ChatStub) -> None:
    tui_question(Copilot(hrig, stub))
