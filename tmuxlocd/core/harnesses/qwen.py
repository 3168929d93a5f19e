"""Qwen Code (``@qwen-code/qwen-code``; 0.24.4, run in the e2e suite).

Claude Code's events and fields; hooks and MCP servers in ``~/.qwen/settings.json`` (a
project's ``.qwen/``).  A session start's text is part of the system prompt, which is built
anew on resume; a prompt's is in its user turn.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    BY_NOTIFICATION,
    GONE,
    IDLE,
    ORIGIN_TURN,
    PERMISSION,
    PROMPT,
    START,
    TOOL,
    WAITING,
    WORKING,
    Harness,
    milliseconds_entry,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

SHELL = "run_shell_command"


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        "Start a new Qwen Code session; /hooks lists the hooks (disableAllHooks must not be true)."
    ]


HARNESS = Harness(
    "qwen",
    "Qwen Code",
    versions="0.24.4 (run)",
    binary="qwen",
    home_dir="~/.qwen",
    user_files={"hooks": "~/.qwen/settings.json", "mcp": "~/.qwen/settings.json"},
    project_files={"hooks": ".qwen/settings.json", "mcp": ".qwen/settings.json"},
    events={"SessionStart": START, "UserPromptSubmit": PROMPT, "PostToolUse": TOOL},
    hook_events=[("SessionStart", None), ("UserPromptSubmit", None), ("PostToolUse", SHELL)],
    shell_tool=SHELL,
    replayed=frozenset((ORIGIN_TURN,)),
    # Seconds in Qwen Code 0.24, milliseconds before; from 1000 up it reads milliseconds in
    # both, so this is 10 s in every version.
    entry=milliseconds_entry,
    # ``PermissionRequest`` runs only where its dialog is shown (not for tools its approval
    # mode lets through); ``UserPromptSubmit`` also runs before the request that carries a
    # tool's result; ``StopFailure`` instead of ``Stop`` when an API error or a loop ends the
    # turn.
    states={
        "SessionStart": IDLE,
        "UserPromptSubmit": WORKING,
        "PostToolUse": WORKING,
        "PermissionRequest": WAITING,
        "Notification": BY_NOTIFICATION,
        "Stop": IDLE,
        "StopFailure": IDLE,
        "SessionEnd": GONE,
    },
    # ``permission_prompt`` with the tool only in ``message`` ("Qwen Code needs your
    # permission to use <tool>"); ``idle_prompt`` each time its prompt is idle again (at
    # once, not after a delay: also after a denied permission, which runs no ``Stop``).  Its
    # ``elicitation_dialog`` is declared but never sent.
    notifications={
        "permission_prompt": (WAITING, PERMISSION),
        "idle_prompt": (IDLE, ""),
    },
    # ``ask_user_question`` is confirmed as any tool is (``PermissionRequest``, then a
    # ``permission_prompt`` naming it), and its dialog is the question.
    question_tools=frozenset(("ask_user_question",)),
    # ``UserPromptSubmit`` (the context hook's) runs before it sends a tool's result: an
    # approved tool is ``working`` again when it is done, with no more hooks.
    state_hooks=[
        ("PermissionRequest", None),
        ("Notification", None),
        ("Stop", None),
        ("StopFailure", None),
        ("SessionEnd", None),
    ],
    next_steps=next_steps,
    disable_all_key="disableAllHooks",
)
