"""GitHub Copilot CLI (``@github/copilot``; 1.0.102, run in the e2e suite).

Hooks in ``$COPILOT_HOME/hooks/tmuxlocd.json`` (``~/.copilot``; a repository's
``.github/hooks/``, read in a trusted folder), ``{"version": 1, "hooks": {"<event>":
[{"type": "command", "bash": ..., "timeoutSec": ...}]}}``: camelCase events, a flat list per
event with no matcher, and no event name on stdin (the command names it: ``--event``).  MCP
servers in ``mcp-config.json``.  It reads a top-level ``additionalContext``.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    BY_NOTIFICATION,
    FLAT,
    GONE,
    HOOK_TIMEOUT_S,
    IDLE,
    ORIGIN_TURN,
    PERMISSION,
    PROMPT,
    START,
    TOOL,
    WAITING,
    WORKING,
    Harness,
    additional_context,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

SHELL = "bash"


def entry(command: str) -> dict[str, object]:
    return {"type": "command", "bash": command, "timeoutSec": HOOK_TIMEOUT_S}


def mcp_entry(entry: dict[str, object]) -> dict[str, object]:
    """Its MCP entries also name their type and tools."""
    return {"type": "local", **entry, "tools": ["*"]}


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        (
            "Start a new Copilot CLI session (`copilot`); the hooks run in every session "
            "(a repository's .github/hooks only in a trusted folder).  The location arrives "
            "with the first prompt."
        )
    ]


HARNESS = Harness(
    "copilot",
    "Copilot CLI",
    versions="1.0.102 (run)",
    binary="copilot",
    home_dir="${COPILOT_HOME:-~/.copilot}",
    user_files={
        "hooks": "${COPILOT_HOME:-~/.copilot}/hooks/tmuxlocd.json",
        "mcp": "${COPILOT_HOME:-~/.copilot}/mcp-config.json",
    },
    # A repository's hooks; its MCP servers are the user's to add.
    project_files={"hooks": ".github/hooks/tmuxlocd.json"},
    # ``install`` leaves ``sessionStart`` out (it runs concurrently with the first prompt's
    # hook); it is still understood.
    events={"sessionStart": START, "userPromptSubmitted": PROMPT, "postToolUse": TOOL},
    # No sessionStart: Copilot CLI 1.0.102 runs it concurrently with the first prompt's hook
    # (it waits for both only before the model request), so both would tell the location.
    # The first prompt tells it; every prompt's text is kept in a resumed history.
    hook_events=[("userPromptSubmitted", None), ("postToolUse", None)],
    event_in_argv=True,
    session_field="sessionId",
    tool_field="toolName",
    shell_tool=SHELL,
    sources={"new": "startup", "resume": "resume"},
    # A resumed session's history keeps each prompt's and tool call's text and replaces the
    # first ``sessionStart``'s with the new one's.
    replayed=frozenset((ORIGIN_TURN,)),
    render=additional_context,
    # ``postToolUse`` runs after a tool succeeded, ``postToolUseFailure`` after it failed.
    # Its ``notification`` hook gets Claude Code's shape (``notification_type``), but names
    # no tool.  Not ``permissionRequest``: it runs before the permission rules, for every
    # tool call that would need one, also those approved without a dialog (``--allow-all``).
    # Not ``sessionStart`` either: it runs concurrently with the first prompt's hook and
    # would be taken for a later ``idle``.
    states={
        "userPromptSubmitted": WORKING,
        "postToolUse": WORKING,
        "postToolUseFailure": WORKING,
        "notification": BY_NOTIFICATION,
        "agentStop": IDLE,
        "sessionEnd": GONE,
    },
    # ``permission_prompt`` (title "Permission needed", ``message`` the action: "Run
    # command: <command>", no tool), ``elicitation_dialog`` ("Information requested": its
    # ``ask_user`` tool's dialog).
    notifications={
        "permission_prompt": (WAITING, PERMISSION),
        "elicitation_dialog": (WAITING, "question"),
    },
    # Its hooks have no matcher: the context hook's ``postToolUse`` already runs for every
    # tool, so an approved tool is ``working`` again when it is done.
    state_hooks=[
        ("notification", None),
        ("postToolUseFailure", None),
        ("agentStop", None),
        ("sessionEnd", None),
    ],
    layout=FLAT,
    file_header={"version": 1},
    entry=entry,
    mcp_entry=mcp_entry,
    next_steps=next_steps,
)
