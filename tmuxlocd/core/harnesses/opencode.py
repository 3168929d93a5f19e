"""opencode (``opencode-ai``; 1.18.33, run in the e2e suite).

No command hooks: ``install`` writes a plugin (``~/.config/opencode/plugins/tmuxlocd.js``,
shipped as ``tmuxlocd/data/opencode-plugin.js``) that runs ``tmuxlocd context opencode``
with Claude-shaped events from its plugin hooks and bus events, and puts the text in each
request's system prompt (kept in memory; a new opencode process starts each session with a
``SessionStart``).  No MCP server is written for it, and it has no sandbox setting.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    BY_NOTIFICATION,
    GONE,
    IDLE,
    PLUGIN,
    PROMPT,
    START,
    TOOL,
    WAITING,
    WORKING,
    Harness,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

PLUGIN_NAME = "tmuxlocd.js"


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    import json

    return [
        (
            "Start opencode again: it loads plugins at start-up.  The MCP server is not "
            'written for opencode; add it under "mcp" in opencode.json if you want it: '
            f'"tmux": {{"type": "local", "command": {json.dumps([*exe, "mcp"])}}}'
        )
    ]


HARNESS = Harness(
    "opencode",
    "opencode",
    versions="1.18.33 (run)",
    binary="opencode",
    home_dir="${XDG_CONFIG_HOME:-~/.config}/opencode",
    user_files={"hooks": "${XDG_CONFIG_HOME:-~/.config}/opencode/plugins/" + PLUGIN_NAME},
    project_files={"hooks": ".opencode/plugins/" + PLUGIN_NAME},
    layout=PLUGIN,
    mcp="",
    events={"SessionStart": START, "UserPromptSubmit": PROMPT, "PostToolUse": TOOL},
    hook_events=[],
    shell_tool="bash",
    replayed=frozenset(),
    # The plugin sends these, Claude-shaped, from its plugin hooks and its bus events
    # (opencode 1.18.33): ``permission.asked`` is PermissionRequest (``tool_name``: the
    # permission asked for, such as bash, edit, external_directory), ``permission.replied``
    # PermissionReplied (once, always or reject: the turn goes on, or ends with a Stop),
    # ``question.asked`` a Notification (elicitation_dialog), ``question.replied``/
    # ``rejected`` QuestionReplied, ``session.status`` idle Stop, ``session.deleted``
    # SessionEnd.
    states={
        "SessionStart": IDLE,
        "UserPromptSubmit": WORKING,
        "PostToolUse": WORKING,
        "PermissionRequest": WAITING,
        "PermissionReplied": WORKING,
        "Notification": BY_NOTIFICATION,
        "QuestionReplied": WORKING,
        "Stop": IDLE,
        "SessionEnd": GONE,
    },
    notifications={"elicitation_dialog": (WAITING, "question")},  # its question tool
    # Its child sessions (subagents) are told with both ids: the agent is the root's.
    root_field="root_session_id",
    next_steps=next_steps,
)
