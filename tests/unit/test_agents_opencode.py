"""opencode's agent state (``tmuxlocd.core.agents``): the Claude-shaped events its plugin
sends from opencode's plugin hooks and bus events, and a subagent's events as its root
session's agent's."""

from __future__ import annotations

from tmuxlocd.core import agents
from tmuxlocd.core.agents import GONE, IDLE, WAITING, WORKING, Agents, Proc, Report, report_of


def ev(name: str, session: str = "ses_1", **more: object) -> dict[str, object]:
    return {"hook_event_name": name, "session_id": session, **more}


def test_each_event_the_plugin_sends_means_a_state() -> None:
    def state(name: str, **more: object) -> tuple[str, str] | None:
        found = report_of("opencode", {**ev(name), **more})
        return None if found is None else (found.state, found.reason)

    assert state("SessionStart", source="startup") == (IDLE, "")
    assert state("UserPromptSubmit") == (WORKING, "")
    assert state("PostToolUse") == (WORKING, "")
    # ``permission.asked``: its ``permission`` is what is asked for, tool or kind.
    assert state("PermissionRequest", tool_name="bash") == (WAITING, "permission: bash")
    assert state("PermissionRequest", tool_name="external_directory") == (
        WAITING,
        "permission: external_directory",
    )
    assert state("PermissionRequest") == (WAITING, "permission")
    for reply in ("once", "always", "reject"):
        assert state("PermissionReplied", reply=reply) == (WORKING, "")
    assert state("Notification", notification_type="elicitation_dialog") == (WAITING, "question")
    assert state("QuestionReplied") == (WORKING, "")
    assert state("Stop") == (IDLE, "")
    assert state("SessionEnd", reason="deleted") == (GONE, "")
    assert "opencode" in agents.HARNESSES


def test_what_says_nothing() -> None:
    assert report_of("opencode", ev("Notification", notification_type="permission_prompt")) is None
    assert report_of("opencode", ev("Notification")) is None
    assert report_of("opencode", ev("PreToolUse")) is None
    assert report_of("opencode", ev("Stop", session="")) is None
    assert report_of("opencode", {"hook_event_name": "Stop"}) is None


def test_a_subagents_events_are_its_root_sessions_agents() -> None:
    child = ev("PermissionRequest", "ses_child", root_session_id="ses_root", tool_name="edit")
    assert report_of("opencode", child) == Report(
        "opencode", "ses_root", "PermissionRequest", WAITING, "permission: edit"
    )
    # An empty root is none; another harness's payload has no such field.
    assert report_of("opencode", ev("Stop", root_session_id="")) == Report(
        "opencode", "ses_1", "Stop", IDLE
    )
    assert report_of("claude", ev("Stop", root_session_id="r")) == Report(
        "claude", "ses_1", "Stop", IDLE
    )


def test_a_turn_with_a_subagent_keeps_one_agent() -> None:
    """The root's prompt, a subagent's start and its permission, approved, then the root's
    end of turn: one agent, working, waiting, working, idle; never replaced by the child's."""
    record = Agents()
    proc = Proc(100, 1)
    steps = [
        ev("SessionStart", session="root", source="startup"),
        ev("UserPromptSubmit", session="root"),
        ev("SessionStart", session="child", root_session_id="root", source="startup"),
        ev("UserPromptSubmit", session="child", root_session_id="root"),
        ev("PermissionRequest", session="child", root_session_id="root", tool_name="bash"),
        ev("PermissionReplied", session="child", root_session_id="root", reply="once"),
        ev("Stop", session="root"),
    ]
    seen = []
    for now, payload in enumerate(steps):
        report = report_of("opencode", payload)
        assert report is not None
        record.apply(report, "/tmp/s", "%1", proc, float(now))
        assert [a.session_id for a in record.all()] == ["root"]
        seen.append(record.all()[0].state)
    assert seen == [IDLE, WORKING, WORKING, WORKING, WAITING, WORKING, IDLE]
