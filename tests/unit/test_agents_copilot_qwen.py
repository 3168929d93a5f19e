"""Copilot CLI's and Qwen Code's agent state (``tmuxlocd.core.agents``), from payloads shaped
as Copilot CLI 1.0.102 and Qwen Code 0.24.4 wrote them to their hooks' stdin (recorded from
the real programs against a stub model; paths and ids shortened)."""

from __future__ import annotations

import pytest

from tmuxlocd.clients.install import HOOK_EVENTS
from tmuxlocd.core import agents
from tmuxlocd.core.agents import GONE, IDLE, WAITING, WORKING, Agents, Proc, Report, report_of

# -- Copilot CLI: camelCase, no event name (the hook's ``--event``), ``sessionId``.

SID = "ec30a321-2ba4-4bd0-b877-7852d63d228a"
COPILOT_BASE = {"sessionId": SID, "timestamp": 1796387395234, "cwd": "/home/u/proj"}
COPILOT = {
    "userPromptSubmitted": {**COPILOT_BASE, "prompt": "please touch"},
    "permissionRequest": {
        "hookName": "permissionRequest",
        **COPILOT_BASE,
        "toolName": "bash",
        "toolInput": {"command": "touch /tmp/marker"},
        "permissionSuggestions": [],
    },
    # Its notification carries Claude Code's field names, and an event name of its own.
    "notification": {
        **COPILOT_BASE,
        "message": "Run command: touch /tmp/marker",
        "title": "Permission needed",
        "hook_event_name": "Notification",
        "notification_type": "permission_prompt",
    },
    "postToolUse": {
        **COPILOT_BASE,
        "toolName": "bash",
        "toolArgs": {"command": "touch /tmp/marker", "description": "touch"},
        "toolResult": {"resultType": "success", "textResultForLlm": "exit code 0"},
    },
    "agentStop": {
        **COPILOT_BASE,
        "transcriptPath": f"/home/u/.copilot/session-state/{SID}/events.jsonl",
        "stopReason": "end_turn",
        "stop_hook_active": False,
    },
    "sessionEnd": {**COPILOT_BASE, "reason": "user_exit"},
}


def copilot(event: str, **more: object) -> Report | None:
    return report_of("copilot", {**COPILOT[event], **more}, event)


def test_copilot_turn_with_a_permission() -> None:
    assert copilot("userPromptSubmitted") == Report("copilot", SID, "userPromptSubmitted", WORKING)
    # The payload names no tool: the reason is the permission alone.
    assert copilot("notification") == Report("copilot", SID, "notification", WAITING, "permission")
    assert copilot("postToolUse") == Report("copilot", SID, "postToolUse", WORKING)
    assert copilot("agentStop") == Report("copilot", SID, "agentStop", IDLE)
    assert copilot("sessionEnd") == Report("copilot", SID, "sessionEnd", GONE)


def test_copilot_question_and_failed_tool() -> None:
    # Its ask_user tool's dialog.
    question = copilot(
        "notification",
        notification_type="elicitation_dialog",
        title="Information requested",
        message="Information requested",
    )
    assert question == Report("copilot", SID, "notification", WAITING, "question")
    failed = report_of("copilot", {**COPILOT["postToolUse"], "error": "x"}, "postToolUseFailure")
    assert failed == Report("copilot", SID, "postToolUseFailure", WORKING)


def test_copilot_says_nothing() -> None:
    # Runs for every tool call that needs a permission, also those approved without a
    # dialog (--allow-all): never taken for waiting.
    assert copilot("permissionRequest") is None
    assert report_of("copilot", COPILOT_BASE, "sessionStart") is None
    assert report_of("copilot", COPILOT_BASE, "preToolUse") is None
    assert copilot("notification", notification_type="agent_idle") is None
    assert copilot("notification", notification_type=None) is None
    # Without the command line's name nothing is Copilot's: the payload's "Notification"
    # is no event of its table.
    assert report_of("copilot", COPILOT["notification"]) is None
    assert report_of("copilot", {**COPILOT["agentStop"], "sessionId": 7}, "agentStop") is None
    assert report_of("copilot", {"session_id": SID}, "agentStop") is None


def test_copilot_hooks_installed_for_agent_state() -> None:
    events = [e for e, _ in HOOK_EVENTS["copilot"]]
    assert "permissionRequest" not in events and "sessionStart" not in events
    for event in ("userPromptSubmitted", "postToolUse", "notification", "agentStop"):
        assert event in events
    assert "copilot" in agents.HARNESSES


# -- Qwen Code: Claude Code's shape.

QSID = "fb5e85e6-12c6-4461-96b1-9772bec44828"
QWEN_BASE = {
    "session_id": QSID,
    "transcript_path": f"/home/u/.qwen/projects/-home-u-proj/chats/{QSID}.jsonl",
    "cwd": "/home/u/proj",
    "timestamp": "2026-12-04T12:31:15.448Z",
    "permission_mode": "default",
}


def qwen(event: str, **more: object) -> Report | None:
    return report_of("qwen", {**QWEN_BASE, "hook_event_name": event, **more})


def test_qwen_turn_with_a_permission() -> None:
    assert qwen("SessionStart", source="startup") == Report("qwen", QSID, "SessionStart", IDLE)
    assert qwen("UserPromptSubmit", prompt="please touch") == Report(
        "qwen", QSID, "UserPromptSubmit", WORKING
    )
    request = qwen(
        "PermissionRequest",
        tool_name="run_shell_command",
        tool_input={"command": "touch /tmp/marker", "description": "touch"},
    )
    assert request == Report(
        "qwen", QSID, "PermissionRequest", WAITING, "permission: run_shell_command"
    )
    # The notification that follows names the tool only in its message: the same reason, so
    # the agent's state does not change (nor its ``since``).
    notified = qwen(
        "Notification",
        message="Qwen Code needs your permission to use run_shell_command",
        notification_type="permission_prompt",
        title="Permission needed",
    )
    assert notified is not None and (notified.state, notified.reason) == (
        WAITING,
        "permission: run_shell_command",
    )
    assert qwen("PostToolUse", tool_name="run_shell_command") == Report(
        "qwen", QSID, "PostToolUse", WORKING
    )
    stop = qwen("Stop", stop_hook_active=False, last_assistant_message="done")
    assert stop == Report("qwen", QSID, "Stop", IDLE)
    idle = qwen(
        "Notification",
        message="Qwen Code is waiting for your input",
        notification_type="idle_prompt",
        title="Waiting for input",
    )
    assert idle == Report("qwen", QSID, "Notification", IDLE)
    assert qwen("StopFailure", error="server_error") == Report("qwen", QSID, "StopFailure", IDLE)
    assert qwen("SessionEnd", reason="prompt_input_exit") == Report(
        "qwen", QSID, "SessionEnd", GONE
    )


def test_qwen_permission_and_notification_keep_one_state() -> None:
    """PermissionRequest, then its Notification: one change, not two."""
    record = Agents()
    proc = Proc(10, 1)
    first = qwen("PermissionRequest", tool_name="edit")
    second = qwen(
        "Notification",
        message="Qwen Code needs your permission to use edit",
        notification_type="permission_prompt",
    )
    assert first is not None and second is not None
    assert record.apply(first, "/s", "%1", proc, 1.0)
    assert record.apply(second, "/s", "%1", proc, 2.0) == []


@pytest.mark.parametrize(
    "message",
    [
        "Qwen Code needs your permission",
        "Qwen Code needs your permission to use ",
        "Qwen Code needs your permission to use two words",
        None,
    ],
)
def test_qwen_permission_without_a_tool_in_its_message(message: object) -> None:
    report = qwen("Notification", message=message, notification_type="permission_prompt")
    assert report is not None and (report.state, report.reason) == (WAITING, "permission")


def test_qwen_question_is_a_question() -> None:
    """Its ask_user_question tool is confirmed as any tool is: the dialog is the question."""
    questions = [{"question": "Which colour?", "header": "Colour", "multiSelect": False}]
    request = qwen(
        "PermissionRequest", tool_name="ask_user_question", tool_input={"questions": questions}
    )
    assert request == Report("qwen", QSID, "PermissionRequest", WAITING, "question")
    notified = qwen(
        "Notification",
        message="Qwen Code needs your permission to use ask_user_question",
        notification_type="permission_prompt",
        title="Permission needed",
    )
    assert notified == Report("qwen", QSID, "Notification", WAITING, "question")
    # Only Qwen Code's: another harness's tool of that name is a permission.
    claude = report_of(
        "claude",
        {
            "hook_event_name": "PermissionRequest",
            "session_id": "s",
            "tool_name": "ask_user_question",
        },
    )
    assert claude is not None and claude.reason == "permission: ask_user_question"


def test_qwen_says_nothing() -> None:
    assert qwen("Notification", notification_type="auth_success", message="ok") is None
    # Declared by Qwen Code but never sent.
    assert qwen("Notification", notification_type="elicitation_dialog") is None
    assert qwen("PreToolUse", tool_name="edit") is None
    assert qwen("PostToolBatch", tool_calls=[]) is None
    assert qwen("PermissionDenied", tool_name="edit") is None
    assert report_of("qwen", {**QWEN_BASE, "hook_event_name": "Stop", "session_id": ""}) is None


def test_qwen_hooks_installed_for_agent_state() -> None:
    events = dict(HOOK_EVENTS["qwen"])
    for event in ("PermissionRequest", "Notification", "Stop", "StopFailure", "SessionEnd"):
        assert event in events and events[event] is None
    assert "qwen" in agents.HARNESSES
