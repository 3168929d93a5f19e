"""opencode (pinned) in a pane of a private tmux server against the chat-completions
stub, with what ``tmuxlocd install opencode`` wrote (chat_harnesses)."""

from __future__ import annotations

from tests.e2e.chat_harnesses import (
    Opencode,
    first_prompt_then_again,
    stub,
    tool_call_splits_the_pane,
)
from tests.e2e.panes import HarnessRig
from tests.e2e.stub_chat import ChatStub

__all__ = ["stub"]  # the fixture


def test_first_prompt_then_again(hrig: HarnessRig, stub: ChatStub) -> None:
    first_prompt_then_again(Opencode(hrig, stub))


def test_tool_call_splits_the_pane(hrig: HarnessRig, stub: ChatStub) -> None:
    tool_call_splits_the_pane(Opencode(hrig, stub))
