"""Copilot CLI's and Qwen Code's agent state (``tmuxlocd.core.agents``), on payloads as
Copilot CLI 1.0.102 and Qwen Code 0.24.4 sent them to a hook (fields trimmed to those read
and a few beside them)."""

from __future__ import annotations

import pytest

from tmuxlocd.core.agents import (
    GONE,
    IDLE,
    WAITING,
    WORKING,
    Agents,
    Proc,
    Report,
    report_of,
)

SID = "c194e650-7aca-46c7-851e-a247453a73b9"

COPILOT: dict[str, dict[str, object]] = {
    "userPromptSubmitted": {"sessionId": SID, "timestamp": 1, "prompt": "probe prompt"},
    "postToolUse": {
        "sessionId": SID,
        "toolName": "bash",
        "toolArgs": {"command": "echo hi > f.txt"},
        "toolResult": {"resultType": "success"},
    },
    # The dialog's notification names itself in the payload too.
    "notification": {
        "sessionId": SID,
        "message": "Run command: echo hi > f.txt",
        "title": "Permission needed",
        "hook_event_name": "Notification",
        "notification_type": "permission_prompt",
    },
    "agentStop": {"sessionId": SID, "stopReason": "end_turn", "stop_hook_active": False},
    "sessionEnd": {"sessionId": SID, "reason": "complete"},
}


def qwen(event: str, **more: object) -> dict[str, object]:
    return {"session_id": SID, "hook_event_name": event, "permission_mode": "auto", **more}


@pytest.mark.parametrize(
    ("event", "state", "reason"),
    [
        ("userPromptSubmitted", WORKING, ""),
        ("postToolUse", WORKING, ""),
        ("notification", WAITING, "permission"),
        ("agentStop", IDLE, ""),
        ("sessionEnd", GONE, ""),
    ],
)
def test_copilot_events(event: str, state: str, reason: str) -> None:
    assert report_of("copilot", COPILOT[event], event) == Report(
        "copilot", SID, event, state, reason
    )


def test_copilot_says_nothing_of_what_shows_no_dialog() -> None:
    # permissionRequest runs for tools its rules allow without asking too (--allow-all).
    request = {"hookName": "permissionRequest", "sessionId": SID, "toolName": "bash"}
    assert report_of("copilot", request, "permissionRequest") is None
    done = {**COPILOT["notification"], "notification_type": "agent_completed"}
    assert report_of("copilot", done, "notification") is None
    assert report_of("copilot", COPILOT["agentStop"], "") is None  # no name: nothing
    assert report_of("copilot", {"session_id": SID}, "agentStop") is None  # not its field


@pytest.mark.parametrize(
    ("payload", "state", "reason"),
    [
        (qwen("SessionStart", source="startup"), IDLE, ""),
        (qwen("UserPromptSubmit", prompt="probe prompt"), WORKING, ""),
        (qwen("PostToolUse", tool_name="run_shell_command"), WORKING, ""),
        (
            qwen("PermissionRequest", tool_name="run_shell_command", tool_input={}),
            WAITING,
            "permission: run_shell_command",
        ),
        (
            qwen(
                "Notification",
                message="Qwen Code needs your permission to use run_shell_command",
                notification_type="permission_prompt",
            ),
            WAITING,
            "permission",
        ),
        (qwen("Notification", notification_type="idle_prompt"), IDLE, ""),
        (qwen("Stop", stop_hook_active=False), IDLE, ""),
        (qwen("SessionEnd", reason="prompt_input_exit"), GONE, ""),
    ],
)
def test_qwen_events(payload: dict[str, object], state: str, reason: str) -> None:
    event = str(payload["hook_event_name"])
    assert report_of("qwen", payload) == Report("qwen", SID, event, state, reason)


def test_qwen_auth_notification_says_nothing() -> None:
    assert report_of("qwen", qwen("Notification", notification_type="auth_success")) is None


def test_the_dialogs_notification_keeps_the_tool_its_request_named() -> None:
    """Qwen Code (as Claude Code) runs ``PermissionRequest`` and then the notification of
    the same dialog, which names no tool: the wait goes on with its tool."""
    table, proc = Agents(), Proc(10, 1)
    asked = report_of("qwen", qwen("PermissionRequest", tool_name="run_shell_command"))
    shown = report_of("qwen", qwen("Notification", notification_type="permission_prompt"))
    assert asked is not None and shown is not None
    table.apply(asked, "/s", "%1", proc, 1.0)
    assert table.apply(shown, "/s", "%1", proc, 2.0) == []  # nothing changed
    agent = table.get("qwen", SID)
    assert agent is not None
    assert (agent.state, agent.reason, agent.since) == (
        WAITING,
        "permission: run_shell_command",
        1.0,
    )
    # A question after it is another wait, with its own reason.
    elicit = report_of("qwen", qwen("Notification", notification_type="elicitation_dialog"))
    assert elicit is not None
    table.apply(elicit, "/s", "%1", proc, 3.0)
    agent = table.get("qwen", SID)
    assert agent is not None and agent.reason == "question"
