"""What the API says of agents (SPEC §13): the JSON shapes, pure.

``tmuxlocd.core.agents`` keeps the record as plain objects (the hook imports it without site);
these are its answers and the ``agent.state`` event's payload, encoded by msgspec.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from tmuxlocd.core.agents import Agent
from tmuxlocd.core.location import Location

AgentState = Literal["working", "waiting", "idle"]
AgentStateOrGone = Literal["working", "waiting", "idle", "gone"]
Harness = Literal[
    "claude",
    "codex",
    "gemini",
    "copilot",
    "qwen",
    "opencode",
    "antigravity",
    "cursor",
    "goose",
    "crush",
    "kiro",
    "pi",
    "cline",
]
# What ``/v1/panes/{pane}/wait`` waits for of a pane's agent (beside ``activity.Until``).
AgentUntil = Literal["agent-idle", "agent-waiting"]
AGENT_UNTILS: tuple[str, ...] = ("agent-idle", "agent-waiting")


class AgentInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One agent: its pane (and that pane's Location now: null once the pane is gone), the
    harness and session, its state, since when (seconds since the epoch) and, for
    ``waiting``, why."""

    pane: str
    server: str
    harness: str
    session_id: str
    state: AgentStateOrGone
    reason: str | None = None
    since: float
    pid: int
    location: Location | None = None


class AgentList(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/agents``."""

    agents: tuple[AgentInfo, ...]


class AgentReport(msgspec.Struct, frozen=True, kw_only=True):
    """The body of ``POST /v1/agents/self``: what a hook event says of its session's agent.
    The pane is never in it: the daemon places the caller by the kernel."""

    harness: Harness
    session_id: str
    event: str = ""
    state: AgentStateOrGone
    reason: str = ""


def info(agent: Agent, location: Location | None, *, gone: bool = False) -> AgentInfo:
    state = "gone" if gone else agent.state
    return AgentInfo(
        pane=agent.pane,
        server=agent.server,
        harness=agent.harness,
        session_id=agent.session_id,
        state=state,  # type: ignore[arg-type]
        reason=agent.reason or None,
        since=agent.since,
        pid=agent.proc.pid,
        location=location,
    )
