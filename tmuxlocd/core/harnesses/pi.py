"""pi (``@mariozechner/pi-coding-agent``; 0.73.1, run in the e2e suite).

No command hooks: pi loads TypeScript or JavaScript extensions into its own process (from
``$PI_CODING_AGENT_DIR/extensions/``, ``~/.pi/agent`` by default; a project's
``.pi/extensions/``).  ``install`` writes one (shipped as ``tmuxlocd/data/pi-plugin.js``) that
runs ``tmuxlocd context pi`` with Claude-shaped events from pi's own events:

- ``before_agent_start`` (a prompt): UserPromptSubmit; the text becomes a custom message
  after the prompt, which pi stores in the session and sends again when it is continued;
- ``tool_result`` of the ``bash`` tool: PostToolUse; the text is added to the result;
- ``session_compact``: PreCompact with the trigger ``manual``: the history was summarised,
  so what it held is forgotten and the next prompt tells it again;
- ``session_start`` SessionStart, ``agent_end`` Stop, ``session_shutdown`` SessionEnd: the
  agent's state only.  pi cannot add to a history before a prompt, so the first prompt
  tells the location.

The extension runs in pi's process, on its pane's tty: the tty rule places it, and the
agent is pi itself.  pi shows no permission dialog and has no question tool: never
``waiting``.  No MCP support, no sandbox setting.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    GONE,
    IDLE,
    ORIGIN_TURN,
    PLUGIN,
    PRECOMPACT,
    PROMPT,
    TOOL,
    WORKING,
    Harness,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

PLUGIN_NAME = "tmuxlocd.js"


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        (
            "Start pi again (or /reload): it loads extensions at start-up.  The location "
            "arrives with the first prompt.  pi has no MCP support; none is written."
        )
    ]


HARNESS = Harness(
    "pi",
    "pi",
    versions="0.73.1 (run)",
    binary="pi",
    home_dir="${PI_CODING_AGENT_DIR:-~/.pi/agent}",
    user_files={"hooks": "${PI_CODING_AGENT_DIR:-~/.pi/agent}/extensions/" + PLUGIN_NAME},
    project_files={"hooks": ".pi/extensions/" + PLUGIN_NAME},
    layout=PLUGIN,
    mcp="",
    events={"UserPromptSubmit": PROMPT, "PostToolUse": TOOL, "PreCompact": PRECOMPACT},
    hook_events=[],
    shell_tool="bash",
    # pi 0.73.1 (run): the custom message and a tool result's text are stored in the session
    # and sent again when it is continued (``--continue``, ``/resume``).
    replayed=frozenset((ORIGIN_TURN,)),
    states={
        "SessionStart": IDLE,
        "UserPromptSubmit": WORKING,
        "PostToolUse": WORKING,
        "Stop": IDLE,
        "SessionEnd": GONE,
    },
    next_steps=next_steps,
)
