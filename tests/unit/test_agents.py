"""Agent state from hook events (``tmuxlocd.core.agents``): the mapping and the record, pure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmuxlocd.core import agents
from tmuxlocd.core.agents import (
    GONE,
    IDLE,
    WAITING,
    WORKING,
    Agent,
    Agents,
    Proc,
    Report,
    next_agent,
    report_of,
    short,
    status_line,
)

S = "/tmp/tmux-1000/default"


def ev(name: str, session: str = "s1", **more: object) -> dict[str, object]:
    return {"hook_event_name": name, "session_id": session, **more}


@pytest.mark.parametrize(
    ("harness", "payload", "state", "reason"),
    [
        ("claude", ev("SessionStart", source="startup"), IDLE, ""),
        ("claude", ev("UserPromptSubmit", prompt="hi"), WORKING, ""),
        ("claude", ev("PostToolUse", tool_name="Bash"), WORKING, ""),
        ("claude", ev("PermissionRequest", tool_name="Bash"), WAITING, "permission: Bash"),
        (
            "claude",
            ev("Notification", notification_type="permission_prompt", message="x"),
            WAITING,
            "permission",
        ),
        ("claude", ev("Notification", notification_type="elicitation_dialog"), WAITING, "question"),
        ("claude", ev("Notification", notification_type="idle_prompt"), IDLE, ""),
        ("claude", ev("Stop", stop_hook_active=False), IDLE, ""),
        ("claude", ev("SessionEnd", reason="clear"), GONE, ""),
        ("codex", ev("UserPromptSubmit"), WORKING, ""),
        (
            "codex",
            ev("PermissionRequest", tool_name="NetworkAccess"),
            WAITING,
            "permission: NetworkAccess",
        ),
        ("codex", ev("Stop"), IDLE, ""),
        ("codex", ev("SessionEnd"), GONE, ""),
        ("gemini", ev("BeforeAgent", prompt="hi"), WORKING, ""),
        ("gemini", ev("AfterTool", tool_name="run_shell_command"), WORKING, ""),
        ("gemini", ev("AfterAgent"), IDLE, ""),
        (
            "gemini",
            ev(
                "Notification",
                notification_type="ToolPermission",
                details={"tool_name": "write_file"},
            ),
            WAITING,
            "permission: write_file",
        ),
        ("gemini", ev("SessionEnd", reason="exit"), GONE, ""),
        (
            "gemini",
            ev(
                "Notification",
                notification_type="ToolPermission",
                details={"type": "exec", "title": "Confirm Shell Command", "command": "ls"},
            ),
            WAITING,
            "permission: exec",
        ),
        (
            "gemini",
            ev("Notification", notification_type="ToolPermission", details={"type": "ask_user"}),
            WAITING,
            "question",
        ),
        ("gemini", ev("Notification", notification_type="ToolPermission"), WAITING, "permission"),
    ],
)
def test_each_event_means_a_state(
    harness: str, payload: dict[str, object], state: str, reason: str
) -> None:
    report = report_of(harness, payload)
    assert report == Report(harness, "s1", str(payload["hook_event_name"]), state, reason)


@pytest.mark.parametrize(
    ("harness", "payload"),
    [
        ("claude", ev("Notification", notification_type="auth_success")),
        ("claude", ev("Notification")),
        ("claude", ev("PreToolUse")),
        ("claude", ev("BeforeAgent")),  # Gemini's name: not Claude Code's
        ("gemini", ev("Notification", notification_type="Other")),
        ("gemini", ev("UserPromptSubmit")),
        ("codex", ev("Notification")),
        ("nope", ev("Stop")),
        ("claude", {"hook_event_name": "Stop"}),  # no session
        ("claude", ev("Stop", session="")),
        ("claude", ev("Stop", session="x" * 513)),
        ("claude", {"hook_event_name": 3, "session_id": "s"}),
    ],
)
def test_events_that_say_nothing_of_the_agent(harness: str, payload: dict[str, object]) -> None:
    assert report_of(harness, payload) is None


def test_every_installed_state_event_is_understood() -> None:
    for harness, events in agents.STATE_EVENTS.items():
        for name, _ in events:
            # Each harness's session field; the event also named as on the hook's command
            # line, for those whose payload names none.
            payload = ev(name, notification_type="permission_prompt")
            payload.update(sessionId="s1", conversationId="s1")
            if harness == "gemini":
                payload["notification_type"] = "ToolPermission"
            assert report_of(harness, payload, name) is not None, (harness, name)


def test_the_tools_that_ask_first_end_waiting_and_only_they_run_the_hook() -> None:
    import re

    for harness, asking in agents.ASKING_TOOLS.items():
        tool_event = "AfterTool" if harness == "gemini" else "PostToolUse"
        assert (tool_event, asking) in agents.STATE_EVENTS[harness]
        report = report_of(harness, ev(tool_event, tool_name="x"))
        assert report is not None and report.state == WORKING
    # The matchers as each harness reads them (a regular expression searched in the name).
    claude = re.compile(agents.ASKING_TOOLS["claude"])
    for tool in ("Edit", "Write", "NotebookEdit", "WebFetch", "mcp__tmux__where_am_i"):
        assert claude.search(tool), tool
    for tool in ("Bash", "Read", "Grep", "Glob", "Task", "BashOutput", "EditX"):
        assert not claude.search(tool), tool
    gemini = re.compile(agents.ASKING_TOOLS["gemini"])
    for tool in ("replace", "write_file", "web_fetch", "google_web_search", "mcp_tmux_x"):
        assert gemini.search(tool), tool
    for tool in ("run_shell_command", "read_file", "glob", "search_file_content"):
        assert not gemini.search(tool), tool


@given(st.text(max_size=300))
def test_a_reason_is_one_short_printable_line(text: str) -> None:
    line = short(text)
    assert len(line) <= agents.MAX_REASON
    assert line.isprintable()
    assert line == line.strip()


def test_a_long_tool_name_is_cut() -> None:
    report = report_of("claude", ev("PermissionRequest", tool_name="mcp__x\n" + "y" * 200))
    assert report is not None
    assert len(report.reason) == agents.MAX_REASON and "\n" not in report.reason


# ----------------------------------------------------------------------------------------------
# The record.

P1 = Proc(100, 5)
P2 = Proc(200, 6)


def report(state: str, session: str = "s1", harness: str = "claude", reason: str = "") -> Report:
    return Report(harness, session, "x", state, reason)


def test_a_turn_working_waiting_idle() -> None:
    table = Agents()
    [c] = table.apply(report(IDLE), S, "%1", P1, 1.0)
    assert c.before is None and c.after is not None and c.after.state == IDLE
    [c] = table.apply(report(WORKING), S, "%1", P1, 2.0)
    assert c.before is not None and c.before.state == IDLE
    assert c.after is not None and (c.after.state, c.after.since) == (WORKING, 2.0)
    [c] = table.apply(report(WAITING, reason="permission: Bash"), S, "%1", P1, 3.0)
    assert c.after is not None and c.after.reason == "permission: Bash"
    [c] = table.apply(report(IDLE), S, "%1", P1, 4.0)
    assert c.after is not None and c.after.state == IDLE and c.after.since == 4.0


def test_the_same_state_again_changes_nothing_and_keeps_since() -> None:
    table = Agents()
    table.apply(report(WORKING), S, "%1", P1, 1.0)
    assert table.apply(report(WORKING), S, "%1", P1, 5.0) == []
    agent = table.get("claude", "s1")
    assert agent is not None and agent.since == 1.0


def test_a_session_start_of_a_known_session_keeps_its_state() -> None:
    """Claude Code's SessionStart ``compact`` may come in the middle of a turn."""
    table = Agents()
    table.apply(report(WORKING), S, "%1", P1, 1.0)
    assert table.apply(Report("claude", "s1", "SessionStart", IDLE), S, "%1", P1, 2.0) == []
    [c] = table.apply(Report("claude", "s2", "SessionStart", IDLE), S, "%2", P2, 3.0)
    assert c.after is not None and c.after.state == IDLE


def test_a_session_end_from_another_pane_ends_nothing() -> None:
    table = Agents()
    table.apply(report(WORKING), S, "%1", P1, 1.0)
    table.apply(report(IDLE), S, "%7", P2, 2.0)  # resumed in %7
    assert table.apply(report(GONE), S, "%1", P1, 3.0) == []  # the old process quits
    assert [a.pane for a in table.all()] == ["%7"]


def test_gone_by_session_end_and_by_process() -> None:
    table = Agents()
    table.apply(report(IDLE), S, "%1", P1, 1.0)
    table.apply(report(IDLE, "s2"), S, "%2", P2, 1.0)
    [c] = table.apply(report(GONE), S, "%1", Proc(0, 0), 2.0)
    assert c.after is None and c.agent.session_id == "s1"
    assert table.apply(report(GONE), S, "%1", P1, 2.0) == []  # already gone
    [c] = table.process_gone(P2)
    assert c.agent.session_id == "s2" and len(table) == 0


def test_two_agents_in_one_pane_over_time_are_told_apart() -> None:
    table = Agents()
    table.apply(report(WORKING, "a"), S, "%1", P1, 1.0)
    table.process_gone(P1)  # the first harness exits
    table.apply(report(IDLE, "b"), S, "%1", P2, 2.0)
    # A late event of the first session makes it known again, apart from the second.
    table.apply(report(WAITING, "a"), S, "%1", P1, 3.0)
    b = table.get("claude", "b")
    assert b is not None and b.state == IDLE
    assert len(table) == 2


def test_a_new_session_of_the_same_process_replaces_its_old_one() -> None:
    table = Agents()
    table.apply(report(IDLE, "a"), S, "%1", P1, 1.0)
    changes = table.apply(report(IDLE, "b"), S, "%1", P1, 2.0)
    assert [(c.agent.session_id, c.after is None) for c in changes] == [("a", True), ("b", False)]
    assert [a.session_id for a in table.all()] == ["b"]


def test_a_resumed_session_moves_to_its_new_pane() -> None:
    table = Agents()
    table.apply(report(IDLE, "a"), S, "%1", P1, 1.0)
    [c] = table.apply(report(WORKING, "a"), S, "%7", P2, 2.0)
    assert c.before is not None and c.before.pane == "%1"
    assert c.after is not None and (c.after.pane, c.after.proc) == ("%7", P2)


def test_a_pane_or_server_gone() -> None:
    table = Agents()
    table.apply(report(IDLE, "a"), S, "%1", P1, 1.0)
    table.apply(report(IDLE, "b"), S, "%2", P2, 1.0)
    assert [c.agent.session_id for c in table.pane_gone(S, "%2")] == ["b"]
    assert [c.agent.session_id for c in table.pane_gone(S)] == ["a"]


def test_a_reused_pid_is_another_process() -> None:
    table = Agents()
    table.apply(report(IDLE), S, "%1", P1, 1.0)
    assert table.process_gone(Proc(P1.pid, P1.start + 1)) == []
    assert len(table) == 1


def agent(pane: str, state: str, since: float) -> Agent:
    return Agent("claude", pane, S, pane, P1, state, "", since)


def test_next_waiting_agent_goes_round_by_how_long_each_waited() -> None:
    found = [agent("%3", WAITING, 5.0), agent("%1", WAITING, 9.0), agent("%2", IDLE, 1.0)]
    first = next_agent(found, WAITING, None)
    assert first is not None and first.pane == "%3"
    again = next_agent(found, WAITING, "%3")
    assert again is not None and again.pane == "%1"
    wrapped = next_agent(found, WAITING, "%1")
    assert wrapped is not None and wrapped.pane == "%3"
    assert next_agent(found, WORKING, None) is None


def test_status_line_counts() -> None:
    found = [agent("%3", WAITING, 5.0), agent("%1", WAITING, 9.0), agent("%2", IDLE, 1.0)]
    assert status_line(a.state for a in found) == "2 waiting 1 idle"
    assert status_line([]) == ""


_states = st.sampled_from([WORKING, WAITING, IDLE, GONE])
_ops = st.lists(
    st.tuples(
        st.sampled_from(["report", "exit"]),
        st.sampled_from(["a", "b", "c"]),
        _states,
        st.sampled_from(["%1", "%2", "%3"]),
        st.sampled_from([P1, P2, Proc(300, 7)]),
    ),
    max_size=40,
)


@settings(max_examples=200)
@given(_ops)
def test_the_changes_replayed_give_the_record(ops: list[tuple[str, str, str, str, Proc]]) -> None:
    """Whatever happens, the changes told (what a stream of ``agent.state`` says) rebuild the
    record exactly, each agent's key is unique, and no state is other than the three."""
    table = Agents()
    seen: dict[tuple[str, str], Agent] = {}
    for i, (op, session, state, pane, proc) in enumerate(ops):
        if op == "report":
            changes = table.apply(report(state, session), S, pane, proc, float(i))
        else:
            changes = table.process_gone(proc)
        for change in changes:
            if change.before is not None:
                assert seen.pop(change.before.key) == change.before
            if change.after is not None:
                assert change.after.key not in seen
                seen[change.after.key] = change.after
    assert seen == table.by_key
    assert all(a.state in agents.STATES for a in table.all())
    # One process holds at most one session of a harness.
    procs = [(a.harness, a.proc) for a in table.all()]
    assert len(procs) == len(set(procs))


def test_importing_it_under_python_dash_s_imports_nothing_else() -> None:
    """The hook imports it without site: it must pull in no module beyond its own."""
    root = Path(agents.__file__).resolve().parents[2]
    code = (
        "import sys; before = set(sys.modules); import tmuxlocd.core.agents; "
        "print(sorted(set(sys.modules) - before))"
    )
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['__future__', 'tmuxlocd', 'tmuxlocd.core', 'tmuxlocd.core.agents']"


def test_every_harness_install_knows_reports_and_is_a_name_the_api_takes() -> None:
    """The report's ``harness`` parameter (``agent_view.Harness``, a Literal written out) and
    the agents' table name the harnesses ``install`` knows, no more, no fewer."""
    from typing import get_args

    from tmuxlocd.core.agent_view import Harness
    from tmuxlocd.core.harness import HARNESSES as INSTALLABLE

    assert get_args(Harness) == INSTALLABLE
    assert set(agents.HARNESSES) == set(INSTALLABLE)
