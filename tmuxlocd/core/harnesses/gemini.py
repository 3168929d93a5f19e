"""Gemini CLI (``@google/gemini-cli``; 0.61.0, run in the e2e suite).

Hooks and MCP servers in ``~/.gemini/settings.json`` (a project's ``.gemini/``); its
settings may hold comments.  Its own event names: ``BeforeAgent`` for a prompt,
``AfterTool``, ``AfterAgent``; ``PreCompress`` before every model request (core/harness.py
reads the transcript for a rebuilt history).  A resumed history drops every user turn that
begins with ``<hook_context>``, as a session start's text does.  Hooks run unless
``hooksConfig.enabled`` is false or ``tmuxlocd`` is in ``hooksConfig.disabled``, in any
settings file that applies.  Its sandbox is a container or a Seatbelt profile.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    BY_NOTIFICATION,
    GONE,
    HOOK_TIMEOUT_S,
    IDLE,
    ORIGIN_TURN,
    PERMISSION,
    PRECOMPACT,
    PROMPT,
    START,
    TOOL,
    WAITING,
    WORKING,
    Harness,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from tmuxlocd.core.findings import DoctorContext, Finding

SHELL = "run_shell_command"
ALLOW_SANDBOX = "--allow-sandbox"
HOOK_NAME = "tmuxlocd"  # each hook's "name", for its /hooks listing
# Tools that ask first by default (0.61.0): ``replace``, ``write_file``, ``web_fetch``,
# ``google_web_search`` and MCP tools (``mcp_<server>_<tool>``); its matchers are unanchored
# regular expressions.
ASKING_TOOLS = "^(replace|write_file|web_fetch|google_web_search|mcp_.*)$"


def entry(command: str) -> dict[str, object]:
    """Milliseconds, and a name for its /hooks listing."""
    return {
        "name": HOOK_NAME,
        "type": "command",
        "command": command,
        "timeout": HOOK_TIMEOUT_S * 1000,
    }


def sandboxed(data: Mapping[str, object], env: Mapping[str, str]) -> bool:
    """Whether Gemini CLI is set to sandbox: ``GEMINI_SANDBOX`` or ``tools.sandbox``."""
    if env.get("GEMINI_SANDBOX", "").strip().lower() not in ("", "0", "false"):
        return True
    tools = data.get("tools")
    return isinstance(tools, dict) and tools.get("sandbox") not in (None, False, "")


def sandbox_notes(
    socket: str, *, allow: bool, platform: str, allowed: bool, allow_all: bool, sandboxed: bool
) -> list[str]:
    if not allow:
        if not sandboxed:
            return []
        return [
            (
                "Gemini CLI's sandbox keeps its shell from the daemon's socket; "
                f"{ALLOW_SANDBOX} says why tmuxlocd cannot allow it alone"
            )
        ]
    return [
        (
            "nothing written for Gemini CLI's sandbox: a container (docker, podman, runsc, lxc) "
            "or a macOS Seatbelt profile (SEATBELT_PROFILE), neither with a setting for one Unix "
            "socket.  The *-open Seatbelt profiles allow the network, the socket with it; a "
            "container would need the socket's directory mounted (SANDBOX_MOUNTS), and a process "
            "in a container is no descendant of a tmux pane: the daemon could not place it."
        )
    ]


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        (
            "Start a new Gemini CLI session; /hooks lists the hooks (hooksConfig."
            "enabled must not be false)."
        )
    ]


def doctor_checks(ctx: DoctorContext) -> list[Finding]:
    """``hooksConfig.enabled`` (false: no hook runs) and ``hooksConfig.disabled`` (names or
    commands of hooks that do not run), in every settings file that applies."""
    from tmuxlocd.core.findings import OK, PROBLEM, WARNING, Finding, table

    where = ctx.where
    files = [
        where["hooks"],
        where["gemini_user"],
        where["gemini_workspace"],
        where["gemini_system"],
    ]
    off: list[str] = []
    listed: list[str] = []
    unread: list[str] = []
    commands = {h.command for h in ctx.ours}
    for path in dict.fromkeys(files):
        settings, _ = ctx.parse_json(ctx.texts.get(path), path)
        if settings is None:
            unread.append(str(path))
            continue
        config = table(settings, "hooksConfig")
        if config.get("enabled") is False:
            off.append(str(path))
        disabled = config.get("disabled")
        if isinstance(disabled, list) and (
            HOOK_NAME in disabled or commands & {str(d) for d in disabled}
        ):
            listed.append(str(path))
    found: list[Finding] = []
    if off:
        found.append(
            Finding(
                "gemini",
                "hooks-enabled",
                PROBLEM,
                f"hooksConfig.enabled is false in {', '.join(off)}: Gemini CLI runs no hook",
                f'set "hooksConfig": {{"enabled": true}} in {off[0]} (or remove the false)'
                + (f", and in {', '.join(off[1:])}" if off[1:] else ""),
            )
        )
    if listed:
        found.append(
            Finding(
                "gemini",
                "hooks-enabled",
                PROBLEM,
                f'"{HOOK_NAME}" is in hooksConfig.disabled in {", ".join(listed)}',
                f"in Gemini CLI: /hooks enable {HOOK_NAME} (or take it out of "
                f"hooksConfig.disabled in {listed[0]})",
            )
        )
    if unread:
        found.append(
            Finding(
                "gemini",
                "hooks-enabled",
                WARNING,
                f"cannot read hooksConfig in {', '.join(unread)} (not plain JSON: comments?)",
                "check hooksConfig.enabled and hooksConfig.disabled there by hand",
            )
        )
    if not found:
        found.append(
            Finding(
                "gemini",
                "hooks-enabled",
                OK,
                "hooksConfig.enabled is not false and tmuxlocd is not in hooksConfig.disabled",
            )
        )
    return found


_SETTINGS = {
    "gemini_user": "~/.gemini/settings.json",
    "gemini_workspace": ".gemini/settings.json",
    "gemini_system": "${GEMINI_CLI_SYSTEM_SETTINGS_PATH:-/etc/gemini-cli/settings.json}",
}

HARNESS = Harness(
    "gemini",
    "Gemini CLI",
    versions="0.61.0 (run)",
    binary="gemini",
    home_dir="~/.gemini",
    user_files={"hooks": "~/.gemini/settings.json", "mcp": "~/.gemini/settings.json"},
    project_files={"hooks": ".gemini/settings.json", "mcp": ".gemini/settings.json"},
    doctor_files={"user": _SETTINGS, "project": _SETTINGS},
    events={
        "SessionStart": START,
        "BeforeAgent": PROMPT,
        "AfterTool": TOOL,
        "PreCompress": PRECOMPACT,
    },
    hook_events=[
        ("SessionStart", None),
        ("BeforeAgent", None),
        ("AfterTool", SHELL),
        ("PreCompress", None),
    ],
    shell_tool=SHELL,
    replayed=frozenset((ORIGIN_TURN,)),
    entry=entry,
    states={
        "SessionStart": IDLE,
        "BeforeAgent": WORKING,
        "AfterTool": WORKING,
        "Notification": BY_NOTIFICATION,
        "AfterAgent": IDLE,
        "SessionEnd": GONE,
    },
    # Its one notification type; its ``details`` are the confirmation's: ``type`` exec,
    # edit, mcp, info, or ask_user for a question the model asks (gemini-cli's
    # fireNotificationEvent).
    notifications={"ToolPermission": (WAITING, PERMISSION)},
    question_tools=frozenset(("ask_user",)),
    asking_tools=ASKING_TOOLS,
    state_hooks=[
        ("Notification", None),
        ("AfterTool", ASKING_TOOLS),
        ("AfterAgent", None),
        ("SessionEnd", None),
    ],
    sandboxed=sandboxed,
    sandbox_notes=sandbox_notes,
    next_steps=next_steps,
    comments=True,
    doctor_checks=doctor_checks,
)
