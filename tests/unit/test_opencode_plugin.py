"""The opencode plugin ``install opencode`` writes, run by node with a stand-in hook.

The plugin is driven the way opencode 1.18.33 calls it (``chat.message``,
``tool.execute.after``, ``experimental.chat.system.transform`` with ``{sessionID, model}``
and ``{system}``; docs/harnesses.md): which events it sends the hook, and what each model
request's system prompt gets.  Skipped without node.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tmuxlocd.clients import install

NODE = shutil.which("node")
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
    assert NODE is not None
    log = tmp_path / "events.jsonl"
    hook = tmp_path / "hook.py"
    hook.write_text(HOOK)
    plugin = tmp_path / "tmuxlocd.js"
    plugin.write_text(install.plugin_text([sys.executable, str(hook), str(log)]))
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    proc = subprocess.run(
        [NODE, str(driver), plugin.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    steps = json.loads(proc.stdout)
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
    assert NODE is not None
    plugin = tmp_path / "tmuxlocd.js"
    plugin.write_text(install.plugin_text([str(tmp_path / "gone")]))
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    proc = subprocess.run(
        [NODE, str(driver), plugin.as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [[]] * 6
