"""Cursor CLI (``cursor-agent``, a native binary outside npm; its hooks documentation was
read, the hooks were not run here).

``~/.cursor/hooks.json`` (a project's ``.cursor/hooks.json``), ``{"version": 1, "hooks":
{"<event>": [{"command": ...}]}}``: camelCase events, a flat list per event.  Every payload
names its event (``hook_event_name``) and its conversation (``conversation_id``).  Of its
events only ``sessionStart`` adds text to the model's context (``additional_context``); the
prompt (``beforeSubmitPrompt``: ``continue``, ``user_message``) and the after-events
(``afterShellExecution``, ``afterFileEdit``, ``afterMCPExecution``) are fire-and-forget: the
location is told once, at the session's start, and not when it changes.  Its MCP servers are
in ``~/.cursor/mcp.json`` (``mcpServers``).
"""

from __future__ import annotations

from _json import encode_basestring

from tmuxlocd.core.harnesses.base import FLAT, GONE, IDLE, START, WORKING, Harness

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def render(event_name: str, text: str) -> str:
    """``sessionStart``'s output: ``additional_context``."""
    return f'{{"additional_context": {encode_basestring(text)}}}\n'


def entry(command: str) -> dict[str, object]:
    return {"command": command}


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        (
            "Start a new Cursor CLI session (cursor-agent).  These hooks follow Cursor's "
            "documented contract and were not run here: the location is told at the "
            "session's start (its one hook that adds context), not when it changes."
        )
    ]


HARNESS = Harness(
    "cursor",
    "Cursor CLI",
    versions="its hooks documentation (read, not run)",
    run_here=False,
    binary="cursor-agent",
    home_dir="~/.cursor",
    user_files={"hooks": "~/.cursor/hooks.json", "mcp": "~/.cursor/mcp.json"},
    project_files={"hooks": ".cursor/hooks.json", "mcp": ".cursor/mcp.json"},
    events={"sessionStart": START},
    hook_events=[("sessionStart", None)],
    session_field="conversation_id|session_id",
    shell_tool="Shell",
    # Its session start's text is part of the conversation's context, kept on resume.
    render=render,
    states={
        "sessionStart": IDLE,
        "beforeSubmitPrompt": WORKING,
        "afterShellExecution": WORKING,
        "afterFileEdit": WORKING,
        "afterMCPExecution": WORKING,
        "stop": IDLE,
        "sessionEnd": GONE,
    },
    # No hook tells of its approval dialog: never ``waiting`` here.
    state_hooks=[
        ("beforeSubmitPrompt", None),
        ("afterShellExecution", None),
        ("afterFileEdit", None),
        ("afterMCPExecution", None),
        ("stop", None),
        ("sessionEnd", None),
    ],
    layout=FLAT,
    file_header={"version": 1},
    entry=entry,
    next_steps=next_steps,
)
