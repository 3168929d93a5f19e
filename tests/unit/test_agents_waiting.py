"""``waiting`` as the real harnesses tell it (``tmuxlocd.core.agents``): the order and the
shape of the events Claude Code 2.1.332 sends around a permission dialog, as the end-to-end
test of the TUI saw them."""

from __future__ import annotations

from tmuxlocd.core.agents import IDLE, WAITING, WORKING, Agents, Proc, report_of

S = "/tmp/tmux-1000/default"
P = Proc(100, 5)


def claude(name: str, **more: object) -> dict[str, object]:
    return {"hook_event_name": name, "session_id": "s1", **more}


def run(table: Agents, payload: dict[str, object], now: float) -> tuple[str, str, float]:
    report = report_of("claude", payload)
    assert report is not None, payload
    table.apply(report, S, "%1", P, now)
    agent = table.get("claude", "s1")
    assert agent is not None
    return agent.state, agent.reason, agent.since


def test_a_bare_permission_notification_keeps_the_tool_of_the_request() -> None:
    """PermissionRequest names the tool; six seconds later its permission_prompt
    Notification names none (only a message): the reason and since stay."""
    table = Agents()
    run(table, claude("UserPromptSubmit", prompt="write it"), 1.0)
    asked = run(table, claude("PermissionRequest", tool_name="Write", tool_input={}), 2.0)
    assert asked == (WAITING, "permission: Write", 2.0)
    told = claude(
        "Notification",
        notification_type="permission_prompt",
        message="Claude needs your permission to use Write",
    )
    assert run(table, told, 8.0) == asked
    # Approved: the Write's PostToolUse (the state-only hook), then the turn's end.
    assert run(table, claude("PostToolUse", tool_name="Write"), 9.0)[0] == WORKING
    assert run(table, claude("Stop"), 10.0)[0] == IDLE


def test_a_bare_permission_notification_alone_is_a_permission() -> None:
    table = Agents()
    run(table, claude("UserPromptSubmit", prompt="x"), 1.0)
    told = claude("Notification", notification_type="permission_prompt", message="?")
    assert run(table, told, 2.0) == (WAITING, "permission", 2.0)


def test_a_permission_for_another_tool_is_that_tool() -> None:
    table = Agents()
    run(table, claude("PermissionRequest", tool_name="Write"), 1.0)
    run(table, claude("PostToolUse", tool_name="Write"), 2.0)
    assert run(table, claude("PermissionRequest", tool_name="Bash"), 3.0) == (
        WAITING,
        "permission: Bash",
        3.0,
    )


def test_a_question_after_a_permission_is_a_question() -> None:
    table = Agents()
    run(table, claude("PermissionRequest", tool_name="Write"), 1.0)
    told = claude("Notification", notification_type="elicitation_dialog")
    assert run(table, told, 2.0) == (WAITING, "question", 2.0)


def test_a_background_agent_that_needs_input_is_a_question() -> None:
    told = claude("Notification", notification_type="agent_needs_input", message="a needs input")
    report = report_of("claude", told)
    assert report is not None and (report.state, report.reason) == (WAITING, "question")


def gemini_permission(details: dict[str, str]) -> tuple[str, str]:
    payload = {
        "hook_event_name": "Notification",
        "session_id": "g1",
        "notification_type": "ToolPermission",
        "message": "Tool x requires editing",
        "details": details,
    }
    report = report_of("gemini", payload)
    assert report is not None
    return report.state, report.reason


def test_gemini_names_the_kind_of_an_edit_and_the_tool_of_an_mcp_call() -> None:
    """Gemini CLI 0.61.0's ToolPermission details (toSerializableDetails): an edit (what
    ``write_file`` asks, seen with the real TUI) has its type and file, no tool name; an MCP
    confirmation has ``toolName``."""
    edit = {"type": "edit", "title": "Write", "fileName": "a.txt", "filePath": "/x/a.txt"}
    assert gemini_permission(edit) == (WAITING, "permission: edit")
    mcp = {"type": "mcp", "title": "t", "serverName": "tmux", "toolName": "where_am_i"}
    assert gemini_permission(mcp) == (WAITING, "permission: where_am_i")
