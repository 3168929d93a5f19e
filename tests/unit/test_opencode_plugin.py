"""The opencode plugin ``install opencode`` writes, run by node with a stand-in hook.

The plugin is driven the way opencode 1.18.33 calls it (``chat.message``,
``tool.execute.after``, ``experimental.chat.system.transform`` with ``{sessionID, model}``
and ``{system}``; docs/harnesses.md): which events it sends the hook, and what each model
request's system prompt gets.  Skipped without node.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.plugins import NODE, run_plugin, stand_in

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

# The stand-in for ``tmuxlocd context opencode``: logs each event, and answers as the hook
# would when there is something to tell (here: a session start and a shell command).
HOOK = """
import json, sys
event = json.loads(sys.stdin.read())
with open(sys.argv[1], "a") as f:
    f.write(json.dumps(event) + "\\n")
name = event["hook_event_name"]
if name in ("SessionStart", "PostToolUse"):
    print(json.dumps({"hookSpecificOutput": {"hookEventName": name,
                                             "additionalContext": "told at " + name}}))
"""

DRIVER = """
const { TmuxLocation } = await import(process.argv[2])
const hooks = await TmuxLocation({})
const steps = []
async function request(id, first) {
  const output = { system: [first] }
  await hooks["experimental.chat.system.transform"]({ sessionID: id, model: {} }, output)
  steps.push(output.system.slice(1))
}
await request("s1", "You are a title generator. You output ONLY a thread title.")
await hooks["chat.message"]({ sessionID: "s1" }, {})
await request("s1", "You are opencode")
await request("s1", "You are opencode")
await hooks["tool.execute.after"]({ tool: "read", sessionID: "s1" }, {})
await request("s1", "You are opencode")
await hooks["tool.execute.after"]({ tool: "bash", sessionID: "s1" }, {})
await request("s1", "You are opencode")
await hooks["chat.message"]({ sessionID: "s1" }, {})
await request("s1", "You are opencode")
console.log(JSON.stringify(steps))
"""


def test_the_plugin_keeps_the_schedule(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    steps = json.loads(run_plugin(tmp_path, stand_in(tmp_path, HOOK, log), DRIVER))
    assert steps == [
        [],  # title generation: nothing, and nothing asked
        ["told at SessionStart"],  # a session new to this process, then its prompt
        ["told at SessionStart"],  # the same turn's next request: carried again
        ["told at SessionStart"],  # after another tool: nothing asked
        ["told at PostToolUse"],  # after a shell command: what the hook told
        ["told at PostToolUse"],  # a new prompt, unchanged: the last text stays
    ]
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events == [
        {"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup"},
        {"hook_event_name": "UserPromptSubmit", "session_id": "s1"},
        {"hook_event_name": "PostToolUse", "session_id": "s1"},
        {"hook_event_name": "UserPromptSubmit", "session_id": "s1"},
    ]


def test_a_hook_that_cannot_start_leaves_requests_alone(tmp_path: Path) -> None:
    out = run_plugin(tmp_path, [str(tmp_path / "gone")], DRIVER)
    assert json.loads(out) == [[]] * 6


# A stand-in that logs each event after a while that shrinks with each event: hooks run at
# once would log out of order.
SLOW_HOOK = """
import json, sys, time
event = json.loads(sys.stdin.read())
with open(sys.argv[1], "a+") as f:
    f.seek(0)
    time.sleep(max(0.0, 0.3 - 0.03 * len(f.readlines())))
    f.write(json.dumps(event) + "\\n")
"""

# Bus events as opencode 1.18.33 gives a plugin's ``event`` hook (``{event: {id, type,
# properties}}``, not awaited), and its client for a session the bus has not told of.
BUS = """
const fs = await import("node:fs")
const client = { session: { get: async ({ path }) => (
  { data: path.id === "c2" ? { id: "c2", parentID: "c1" } : { id: path.id } }) } }
const { TmuxLocation } = await import(process.argv[2])
const hooks = await TmuxLocation({ client })
const bus = (type, properties) => hooks.event({ event: { id: "evt", type, properties } })
bus("session.created", { sessionID: "s1", info: { id: "s1" } })
bus("session.status", { sessionID: "s1", status: { type: "busy" } })
bus("session.created", { sessionID: "c1", info: { id: "c1", parentID: "s1" } })
bus("permission.asked", { id: "per_1", sessionID: "s1", permission: "bash",
  patterns: ["ls"], metadata: {}, always: ["ls *"], tool: { messageID: "m", callID: "c" } })
bus("permission.replied", { sessionID: "s1", requestID: "per_1", reply: "once" })
bus("question.asked", { id: "que_1", sessionID: "s1", questions: [] })
bus("question.replied", { sessionID: "s1", requestID: "que_1", answers: [] })
bus("question.asked", { id: "que_2", sessionID: "s1", questions: [] })
bus("question.rejected", { sessionID: "s1", requestID: "que_2" })
bus("permission.asked", { id: "per_2", sessionID: "c1", permission: "edit",
  patterns: ["*"], metadata: {}, always: [] })
bus("permission.asked", { id: "per_3", sessionID: "c2", permission: "webfetch",
  patterns: ["*"], metadata: {}, always: [] })
bus("session.status", { sessionID: "c1", status: { type: "idle" } })
bus("session.idle", { sessionID: "c1" })
bus("session.deleted", { sessionID: "c1", info: { id: "c1", parentID: "s1" } })
bus("message.updated", { sessionID: "s1", info: {} })
bus("session.status", { sessionID: "s1", status: { type: "idle" } })
bus("session.idle", { sessionID: "s1" })
bus("session.deleted", { sessionID: "s1", info: { id: "s1" } })
await hooks.dispose()
console.log(fs.readFileSync(process.argv[3], "utf8"))
"""


def test_bus_events_become_state_events_in_order_and_dispose_waits(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    out = run_plugin(tmp_path, stand_in(tmp_path, SLOW_HOOK, log), BUS, str(log))
    # What dispose waited for is what the hook logged: every event, in the order sent.
    events = [json.loads(line) for line in out.splitlines() if line]
    assert events == [
        {"hook_event_name": "PermissionRequest", "session_id": "s1", "tool_name": "bash"},
        {"hook_event_name": "PermissionReplied", "session_id": "s1", "reply": "once"},
        {
            "hook_event_name": "Notification",
            "session_id": "s1",
            "notification_type": "elicitation_dialog",
        },
        {"hook_event_name": "QuestionReplied", "session_id": "s1"},
        {
            "hook_event_name": "Notification",
            "session_id": "s1",
            "notification_type": "elicitation_dialog",
        },
        {"hook_event_name": "QuestionReplied", "session_id": "s1"},
        # A subagent's permission: its root's agent; a grandchild's, found by the client.
        {
            "hook_event_name": "PermissionRequest",
            "session_id": "c1",
            "root_session_id": "s1",
            "tool_name": "edit",
        },
        {
            "hook_event_name": "PermissionRequest",
            "session_id": "c2",
            "root_session_id": "s1",
            "tool_name": "webfetch",
        },
        # The subagent's idling and deletion are not the root's; busy and the deprecated
        # session.idle say nothing more.
        {"hook_event_name": "Stop", "session_id": "s1"},
        {"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "deleted"},
    ]


def test_a_subagents_requests_tell_its_root(tmp_path: Path) -> None:
    """A child session's own context events keep its id and name its root."""
    log = tmp_path / "events.jsonl"
    run_plugin(
        tmp_path,
        stand_in(tmp_path, HOOK, log),
        """
const { TmuxLocation } = await import(process.argv[2])
const hooks = await TmuxLocation({})
const info = { id: "c1", parentID: "s1" }
hooks.event({ event: { type: "session.created", properties: { sessionID: "c1", info } } })
await hooks["chat.message"]({ sessionID: "c1" }, {})
await hooks["experimental.chat.system.transform"]({ sessionID: "c1", model: {} }, { system: ["x"] })
await hooks.dispose()
""",
    )
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert events == [
        {
            "hook_event_name": "SessionStart",
            "session_id": "c1",
            "root_session_id": "s1",
            "source": "startup",
        },
        {"hook_event_name": "UserPromptSubmit", "session_id": "c1", "root_session_id": "s1"},
    ]
