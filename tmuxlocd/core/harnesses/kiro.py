"""Kiro CLI (``kiro-cli``, a native binary outside npm; its hooks documentation was read,
the hooks were not run here).

Hooks are in an agent's configuration: ``install`` writes the agent ``tmuxlocd``
(``~/.kiro/agents/tmuxlocd.json``, a project's ``.kiro/agents/``) with every tool, and
hooks ``{"<event>": [{"command": ..., "timeout_ms": ...}]}`` (a flat list; a tool hook's
entry carries its ``matcher``).  Its events: ``agentSpawn``, ``userPromptSubmit``,
``preToolUse``, ``postToolUse``, ``stop``; the payload names its event
(``hook_event_name``) and its ``cwd``, and no session: the session is taken to be the
working directory's (``session_from_cwd``).  What ``agentSpawn`` and ``userPromptSubmit``
print is added to the context as it is.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    FLAT,
    HOOK_TIMEOUT_S,
    IDLE,
    ORIGIN_TURN,
    PROMPT,
    START,
    WORKING,
    Harness,
    plain_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

AGENT = "tmuxlocd"


def entry(command: str) -> dict[str, object]:
    return {"command": command, "timeout_ms": HOOK_TIMEOUT_S * 1000}


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        (
            f"Run Kiro CLI with the agent: kiro-cli chat --agent {AGENT} (or make it the "
            f"default: kiro-cli settings chat.defaultAgent {AGENT}), or copy its hooks into "
            "your own agent.  These hooks follow Kiro's documented contract and were not run "
            "here."
        )
    ]


HARNESS = Harness(
    "kiro",
    "Kiro CLI",
    versions="its hooks documentation (read, not run)",
    run_here=False,
    binary="kiro-cli",
    home_dir="~/.kiro",
    user_files={"hooks": f"~/.kiro/agents/{AGENT}.json"},
    project_files={"hooks": f".kiro/agents/{AGENT}.json"},
    file_header={
        "name": AGENT,
        "description": "The default tools, with tmuxlocd's hooks (the tmux location)",
        "tools": ["*"],
    },
    events={"agentSpawn": START, "userPromptSubmit": PROMPT},
    hook_events=[("agentSpawn", None), ("userPromptSubmit", None)],
    session_from_cwd=True,
    shell_tool="execute_bash",
    replayed=frozenset((ORIGIN_TURN,)),
    render=plain_text,
    # No hook tells of its permission dialog or of a session's end: never ``waiting``
    # here, gone when its process exits.
    states={
        "agentSpawn": IDLE,
        "userPromptSubmit": WORKING,
        "postToolUse": WORKING,
        "stop": IDLE,
    },
    state_hooks=[("postToolUse", None), ("stop", None)],
    layout=FLAT,
    entry=entry,
    mcp="",
    next_steps=next_steps,
)
