"""Qwen Code (pinned) in a pane of a private tmux server against the chat-completions
stub, with what ``tmuxlocd install qwen`` wrote (chat_harnesses)."""

from __future__ import annotations

from tests.e2e.chat_harnesses import (
    Qwen,
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
    first_prompt_then_again(Qwen(hrig, stub))


def test_tool_call_splits_the_pane(hrig: HarnessRig, stub: ChatStub) -> None:
    tool_call_splits_the_pane(Qwen(hrig, stub))


def test_agent_working_during_a_prompt_then_gone(hrig: HarnessRig, stub: ChatStub) -> None:
    """SPEC §13: ``qwen -p``'s agent is working in its pane while the model answers; its
    ``SessionEnd`` (or its exit) leaves none."""
    agent_working_then_gone(Qwen(hrig, stub))


def test_killed_agent_goes(hrig: HarnessRig, stub: ChatStub) -> None:
    took = killed_agent_goes(Qwen(hrig, stub))
    report({"harness": "qwen", "kill": "-p", "gone_ms": round(took * 1000, 1)})
    print(f"qwen: agent gone {took * 1000:.0f} ms after kill -9")


def test_tui_permission_then_idle_and_gone_on_exit(hrig: HarnessRig, stub: ChatStub) -> None:
    """SPEC §13 in Qwen Code's TUI: ``PermissionRequest`` (and its ``permission_prompt``)
    make the agent waiting on the shell tool; approved, the ``UserPromptSubmit`` before the
    tool's result is sent makes it working and ``Stop`` idle.  A denial runs no ``Stop``, but
    its prompt's ``idle_prompt`` makes the agent idle."""
    tui_permission_approved_then_denied(Qwen(hrig, stub), "permission: run_shell_command", "idle")


def test_tui_question_waiting_then_idle(hrig: HarnessRig, stub: ChatStub) -> None:
    tui_question(Qwen(hrig, stub))
