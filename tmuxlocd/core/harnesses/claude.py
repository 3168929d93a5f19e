"""Claude Code (``@anthropic-ai/claude-code``; 2.1.332, run in the e2e suite).

Settings in ``~/.claude/settings.json`` (a project's: ``.claude/settings.json``, its MCP
servers in ``.mcp.json``); the user's MCP servers are in ``~/.claude.json``, which Claude
Code rewrites itself, so the user adds ours with ``claude mcp add``.  Every hook's text is
kept in a resumed history.  Its sandbox's one per-socket allow list is
``sandbox.network.allowUnixSockets``, read on macOS only.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    BY_NOTIFICATION,
    GONE,
    IDLE,
    PERMISSION,
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

ALLOW_SANDBOX = "--allow-sandbox"
SHELL = "Bash"
# Its permission table: the tools that ask first by default (Edit, Write, NotebookEdit,
# WebFetch, WebSearch, and every MCP tool, ``mcp__<server>__<tool>``): their after-event ends
# ``waiting`` when an approved tool is done (core/agents.py).
ASKING_TOOLS = "^(Edit|MultiEdit|Write|NotebookEdit|WebFetch|WebSearch|mcp__.*)$"


def sandbox_notes(
    socket: str, *, allow: bool, platform: str, allowed: bool, allow_all: bool, sandboxed: bool
) -> list[str]:
    if allow_all:
        return [
            (
                "sandbox.network.allowAllUnixSockets is true: the sandboxed Bash tool reaches "
                "every Unix socket already, tmux's included (left as it is)"
            )
        ]
    if not allow:
        if allowed or platform != "darwin":  # on Linux the list is not read (yet)
            return []
        return [
            (
                "Claude Code's sandbox (sandbox.enabled) keeps its Bash tool from the "
                f"daemon's socket; re-run with {ALLOW_SANDBOX} to allow that one ({socket})"
            )
        ]
    if platform != "darwin":
        return [
            (
                f"{socket} is in sandbox.network.allowUnixSockets, which Claude Code applies "
                "on macOS only: on Linux its sandbox refuses every new Unix socket (seccomp "
                "cannot tell paths apart), so the sandboxed Bash tool still cannot reach the "
                "daemon there.  The one Linux setting, allowAllUnixSockets, would open every "
                "socket, tmux's included: not written."
            )
        ]
    return []


MCP_COMMAND = "claude mcp add --scope user {name} -- {command}"


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    import shlex

    mcp = " ".join(shlex.quote(a) for a in [*exe, "mcp"])
    steps = ["Start a new Claude Code session (or run /hooks) to load the hooks."]
    if not project:
        steps.append(
            "MCP server (Claude Code keeps user servers in ~/.claude.json, which it "
            f"rewrites itself): {MCP_COMMAND.format(name='tmux', command=mcp)}"
        )
    return steps


def remove_steps(project: bool) -> list[str]:
    steps = ["Restart the harness's running sessions to drop the hooks."]
    if not project:
        steps.append("If you added the MCP server: claude mcp remove --scope user tmux")
    return steps


HARNESS = Harness(
    "claude",
    "Claude Code",
    versions="2.1.332 (run)",
    binary="claude",
    home_dir="~/.claude",
    user_files={"hooks": "~/.claude/settings.json"},
    project_files={"hooks": ".claude/settings.json", "mcp": ".mcp.json"},
    doctor_files={"user": {"claude_json": "~/.claude.json"}},
    events={"SessionStart": START, "UserPromptSubmit": PROMPT, "PostToolUse": TOOL},
    hook_events=[("SessionStart", None), ("UserPromptSubmit", None), ("PostToolUse", SHELL)],
    shell_tool=SHELL,
    states={
        "SessionStart": IDLE,
        "UserPromptSubmit": WORKING,
        "PostToolUse": WORKING,
        "PermissionRequest": WAITING,
        "Notification": BY_NOTIFICATION,
        "Stop": IDLE,
        "SessionEnd": GONE,
    },
    notifications={
        "permission_prompt": (WAITING, PERMISSION),
        "elicitation_dialog": (WAITING, "question"),
        # A background agent of the session is blocked on the user (2.1.332's agents view).
        "agent_needs_input": (WAITING, "question"),
        "idle_prompt": (IDLE, ""),
    },
    asking_tools=ASKING_TOOLS,
    state_hooks=[
        ("PermissionRequest", None),
        ("Notification", None),
        ("PostToolUse", ASKING_TOOLS),
        ("Stop", None),
        ("SessionEnd", None),
    ],
    socket_list=("sandbox", "network", "allowUnixSockets"),
    sandbox_notes=sandbox_notes,
    # ``--allow-sandbox --project``: this machine's local settings (where its ``/sandbox``
    # writes too), never the shared project file, since the path is this machine's.
    project_sandbox_file="settings.local.json",
    next_steps=next_steps,
    remove_steps=remove_steps,
    user_mcp_command=MCP_COMMAND,
    user_mcp_role="claude_json",
    disable_all_key="disableAllHooks",
)
