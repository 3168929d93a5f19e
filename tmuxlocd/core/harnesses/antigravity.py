"""Antigravity CLI (``agy``; a native binary outside npm: its hooks documentation was read,
the hooks were not run here).

``~/.gemini/config/hooks.json`` (a project's ``.agents/hooks.json``): a named hook at the
top level, ``{"<name>": {"PreInvocation": [{"type": "command", ...}]}}``, a flat list of
handlers per non-tool event (only ``PreToolUse``/``PostToolUse`` take ``{matcher, hooks}``
groups).  ``PreInvocation`` runs before every model call, and only a turn's first
(``invocationNum`` 0) is a prompt; no event name on stdin (``--event``), the session is
``conversationId``.  It reads ``injectSteps`` with one ``ephemeralMessage`` step, which is
in the model's context for that turn only: every turn's first call is told the location.
"""

from __future__ import annotations

from _json import encode_basestring

from tmuxlocd.core.harnesses.base import FLAT, IDLE, ORIGIN_TURN, PROMPT, WORKING, Harness


def inject_steps(event_name: str, text: str) -> str:
    return f'{{"injectSteps": [{{"ephemeralMessage": {encode_basestring(text)}}}]}}\n'


def next_steps(project: bool, exe: object) -> list[str]:
    return [
        (
            "Start a new Antigravity CLI session (agy).  These hooks follow Antigravity's "
            "documented contract and were not run here; `tmuxlocd doctor antigravity` checks "
            "the file only.  No MCP server is written for it."
        )
    ]


HARNESS = Harness(
    "antigravity",
    "Antigravity CLI",
    versions="its hooks documentation (read, not run)",
    run_here=False,
    binary="agy",
    home_dir="~/.gemini/config",
    user_files={"hooks": "~/.gemini/config/hooks.json"},
    project_files={"hooks": ".agents/hooks.json"},
    mcp="",
    events={"PreInvocation": PROMPT},
    hook_events=[("PreInvocation", None)],
    event_in_argv=True,
    session_field="conversationId",
    first_call_field="invocationNum",
    shell_tool="run_command",
    replayed=frozenset((ORIGIN_TURN,)),
    ephemeral=True,
    render=inject_steps,
    # ``PreInvocation`` before every model call of a turn, ``Stop`` when the agent stops
    # (``terminationReason``).  No hook tells of its permission dialog or of a session's
    # end: it is never ``waiting`` here, and it is gone when its process exits.
    states={"PreInvocation": WORKING, "Stop": IDLE},
    # The context hook's ``PreInvocation`` reports ``working`` already.
    state_hooks=[("Stop", None)],
    layout=FLAT,
    # Installs before this wrote Antigravity's under "hooks": ``remove`` takes ours out of
    # both.
    hooks_key="tmuxlocd",
    next_steps=next_steps,
)
