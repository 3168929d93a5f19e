"""Crush (``charmbracelet/crush``, a native binary; its hooks documentation was read, the
hooks were not run here).

``~/.config/crush/crush.json`` (``$XDG_CONFIG_HOME``; a project's ``crush.json``), JSON with
comments: ``{"hooks": {"PreToolUse": [{"matcher": "^bash$", "command": ..., "timeout":
<seconds>}]}}``, a flat list of entries, each with its matcher.  The payload names its event
in ``event``, and ``session_id``, ``tool_name``.  Its documented events are ``PreToolUse``
and ``PreCompact``; a ``PreToolUse`` hook's ``context`` is appended to what the model sees
of that tool call (kept in the history).  So the location is told with a shell command,
before it runs, when it differs from what the session was told: a prompt's decision, taken
at the shell tool.  The agent is ``working`` at each tool call; no event tells of its end.
Its MCP servers are under ``mcp`` (another shape): not written.
"""

from __future__ import annotations

from _json import encode_basestring

from tmuxlocd.core.harnesses.base import FLAT, HOOK_TIMEOUT_S, ORIGIN_TURN, PROMPT, WORKING, Harness

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

SHELL = "^bash$"


def render(event_name: str, text: str) -> str:
    """Its output envelope: ``context``, with no ``decision`` (the permission flow runs as
    it would)."""
    return f'{{"context": {encode_basestring(text)}}}\n'


def entry(command: str) -> dict[str, object]:
    return {"name": "tmuxlocd", "command": command, "timeout": HOOK_TIMEOUT_S}


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        (
            "Start Crush again.  These hooks follow Crush's documented contract and were "
            "not run here: the location is told before a shell command when it changed.  "
            "No MCP server is written for it."
        )
    ]


HARNESS = Harness(
    "crush",
    "Crush",
    versions="its hooks documentation (read, not run)",
    run_here=False,
    binary="crush",
    home_dir="${XDG_CONFIG_HOME:-~/.config}/crush",
    user_files={"hooks": "${XDG_CONFIG_HOME:-~/.config}/crush/crush.json"},
    project_files={"hooks": "crush.json"},
    events={"PreToolUse": PROMPT},
    hook_events=[("PreToolUse", SHELL)],
    event_field="event",
    shell_tool="bash",
    replayed=frozenset((ORIGIN_TURN,)),
    render=render,
    states={"PreToolUse": WORKING},
    state_hooks=[("PreToolUse", None)],
    layout=FLAT,
    entry=entry,
    mcp="",
    comments=True,
    next_steps=next_steps,
)
