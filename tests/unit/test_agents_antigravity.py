"""Antigravity CLI's agent state (``tmuxlocd.core.agents``): its camelCase payloads, the
event's name from the hook's command line, the session as ``conversationId``."""

from __future__ import annotations

from tmuxlocd.clients.install import HOOK_EVENTS, hook_command
from tmuxlocd.core import agents
from tmuxlocd.core.agents import IDLE, WORKING, Report, report_of


def payload(**more: object) -> dict[str, object]:
    # The fields its hooks documentation gives every event; no event name among them.
    return {"conversationId": "c-1", "workspacePaths": ["/src"], **more}


def test_every_model_call_is_working_and_stop_is_idle() -> None:
    first = report_of("antigravity", payload(invocationNum=0), "PreInvocation")
    later = report_of("antigravity", payload(invocationNum=3), "PreInvocation")
    stop = report_of("antigravity", payload(terminationReason="NO_TOOL_CALL"), "Stop")
    assert first == Report("antigravity", "c-1", "PreInvocation", WORKING)
    assert later == first  # a turn's tool rounds are the same turn
    assert stop == Report("antigravity", "c-1", "Stop", IDLE)


def test_what_says_nothing() -> None:
    assert report_of("antigravity", payload(), "") is None  # no event named anywhere
    assert report_of("antigravity", payload(), "PreToolUse") is None
    assert report_of("antigravity", {"invocationNum": 0}, "PreInvocation") is None
    assert report_of("antigravity", payload(conversationId=""), "Stop") is None
    # Claude Code's session field is not Antigravity's.
    assert report_of("antigravity", {"session_id": "s"}, "Stop") is None


def test_install_adds_a_stop_hook_with_the_event_in_its_command() -> None:
    assert ("Stop", None) in HOOK_EVENTS["antigravity"]
    assert "antigravity" in agents.HARNESSES
    command = hook_command(["tmuxlocd", "context"], "antigravity", event="Stop")
    assert command.endswith("antigravity --event Stop")
