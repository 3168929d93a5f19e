"""goose (``block/goose``, a native binary; its hooks documentation was read, the hooks
were not run here).

Hooks come with a plugin: ``~/.agents/plugins/tmuxlocd/`` (a project's
``.agents/plugins/tmuxlocd/``) with its ``plugin.json`` and ``hooks/hooks.json`` in Claude
Code's groups (``timeout`` in seconds).  The payload names its event in ``event`` and its
session in ``session_id``.  Every goose hook but ``PreToolUse`` and ``Stop`` is observation
only, and none adds text to the model's context: goose is told no location by a hook (its
MCP server, ``tmuxlocd mcp``, answers when asked).  Its events tell the agent's state.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import GONE, IDLE, WORKING, Harness

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

PLUGIN = "tmuxlocd"


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        (
            "Start goose again: it loads plugins at start-up.  Its hooks tell no location "
            "(goose adds no hook's text to the model's context), only the agent's state; for "
            f"the location, add the MCP server ({' '.join([*exe, 'mcp'])}) as a goose "
            "extension.  These hooks follow goose's documented contract and were not run "
            "here."
        )
    ]


_BASE = "~/.agents/plugins/" + PLUGIN
HARNESS = Harness(
    "goose",
    "goose",
    versions="its hooks documentation (read, not run)",
    run_here=False,
    binary="goose",
    home_dir="${XDG_CONFIG_HOME:-~/.config}/goose",
    user_files={"hooks": _BASE + "/hooks/hooks.json", "manifest": _BASE + "/plugin.json"},
    project_files={
        "hooks": ".agents/plugins/tmuxlocd/hooks/hooks.json",
        "manifest": ".agents/plugins/tmuxlocd/plugin.json",
    },
    manifest={
        "name": PLUGIN,
        "version": "1",
        "description": "tmuxlocd: the agent's state in tmux",
    },
    events={},
    hook_events=[],
    event_field="event",
    states={
        "SessionStart": IDLE,
        "UserPromptSubmit": WORKING,
        "PostToolUse": WORKING,
        "PostToolUseFailure": WORKING,
        "Stop": IDLE,
        "SessionEnd": GONE,
    },
    state_hooks=[
        ("SessionStart", None),
        ("UserPromptSubmit", None),
        ("PostToolUse", None),
        ("PostToolUseFailure", None),
        ("Stop", None),
        ("SessionEnd", None),
    ],
    mcp="",
    next_steps=next_steps,
)
