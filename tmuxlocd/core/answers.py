"""The bodies of HTTP API v1 answers (SPEC §4), shared by the daemon and its clients.

Pure.  The daemon encodes these and the clients decode them, so there is one definition of
each.  Defaults are there for decoding: a field a newer daemon adds is ignored, one an older
daemon lacks gets its default.  Encoding always writes every field.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from tmuxlocd.core.activity import Activity
from tmuxlocd.core.agent_view import AgentInfo
from tmuxlocd.core.layout import Direction
from tmuxlocd.core.location import Location, Neighbors, PaneRef

VerifiedBy = Literal["tty", "ancestor", "client"]
Reason = Literal[
    "no_controlling_tty",
    "no_server",
    "tty_not_a_pane",
    "tty_reused",
    "shared_ancestor",
    "shared_ssh_master",
]


class Caller(msgspec.Struct, frozen=True, kw_only=True):
    pid: int
    tty: str | None = None
    env_pane: str | None = None
    ancestor_pane: str | None = None
    # With verified_by "client": the pid of the shared server's client whose pane this is.
    client: int | None = None


class SelfAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/self``: where the calling process is, with the hints when it is nowhere."""

    inside_tmux: bool
    verified_by: VerifiedBy | None = None
    reason: Reason | None = None
    # One line for a person when the caller is in no pane for a reason they can act on or
    # should know (a shared process, a reused tty): what was found, and the fix if any.
    hint: str | None = None
    caller: Caller
    location: Location | None = None


class NeighborEntry(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    index: int
    shared: int


class PaneNeighbors(msgspec.Struct, frozen=True, kw_only=True):
    pane: str
    above: tuple[NeighborEntry, ...] = ()
    below: tuple[NeighborEntry, ...] = ()
    left: tuple[NeighborEntry, ...] = ()
    right: tuple[NeighborEntry, ...] = ()


class DirectionNeighbors(msgspec.Struct, frozen=True, kw_only=True):
    pane: str
    direction: Direction
    panes: tuple[NeighborEntry, ...] = ()


class PaneSummary(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    index: int
    active: bool
    left: int
    top: int
    width: int
    height: int
    window_id: str
    session_id: str
    neighbors: Neighbors = Neighbors()
    # Only with ?activity=1 (absent otherwise, so summaries are what they were).
    activity: Activity | msgspec.UnsetType = msgspec.UNSET


def summary_of(loc: Location, *, with_activity: bool = False) -> PaneSummary:
    """``detail=summary``: the pane's geometry and neighbours, without names or layout."""
    p = loc.pane
    act: Activity | msgspec.UnsetType = msgspec.UNSET
    if with_activity:
        act = Activity(
            command=p.command,
            busy=p.busy,
            dead=p.dead,
            exit_status=p.exit_status,
            exit_signal=p.exit_signal,
        )
    return PaneSummary(
        id=p.id,
        index=p.index,
        active=p.active,
        left=p.left,
        top=p.top,
        width=p.width,
        height=p.height,
        window_id=loc.window.id,
        session_id=loc.session.id,
        neighbors=loc.neighbors,
        activity=act,
    )


# Tagged by ``detail`` so that a client (and the OpenAPI document's oneOf) tells the two apart,
# an empty page included.
class PaneList(msgspec.Struct, frozen=True, kw_only=True, tag_field="detail", tag="full"):
    panes: tuple[Location, ...]
    total: int
    truncated: bool = False


class PaneSummaryList(msgspec.Struct, frozen=True, kw_only=True, tag_field="detail", tag="summary"):
    panes: tuple[PaneSummary, ...]
    total: int
    truncated: bool = False


class TreeWindow(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    index: int
    name: str
    active: bool
    zoomed: bool
    layout: str
    panes: tuple[PaneRef, ...] = ()


class TreeSession(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    windows: tuple[TreeWindow, ...] = ()


class TreeServer(msgspec.Struct, frozen=True, kw_only=True):
    socket_path: str
    pid: int | None = None
    running: bool = False
    sessions: tuple[TreeSession, ...] = ()


class Tree(msgspec.Struct, frozen=True, kw_only=True):
    servers: tuple[TreeServer, ...] = ()


class ServerHealth(msgspec.Struct, frozen=True, kw_only=True):
    socket_path: str
    running: bool
    sessions: int = 0
    windows: int = 0
    panes: int = 0
    observer: str = "down"
    last_sync_age_s: float | None = None
    last_error: str | None = None  # while observer is "error": the command and tmux's words
    # Changes only the safety net (the digest) found, nothing having announced them.
    safety_net_catches: int = 0


class AlertChannelHealth(msgspec.Struct, frozen=True, kw_only=True):
    """One alert channel (SPEC §14): what it delivered, what failed, and the last failure
    (kept after it works again; ``failing`` says whether the last delivery failed)."""

    name: str
    sent: int = 0
    failed: int = 0
    failing: bool = False
    last_error: str | None = None


class AlertsHealth(msgspec.Struct, frozen=True, kw_only=True):
    delay_s: float
    turn_end_s: float
    pending: int = 0  # waits not yet as long as the delay
    standing: int = 0  # alerts fired and not yet cleared
    channels: tuple[AlertChannelHealth, ...] = ()


class AlertTestResult(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    ok: bool
    error: str | None = None


class AlertTestAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """``POST /v1/alerts/test``: each channel's delivery of one test alert."""

    channels: tuple[AlertTestResult, ...] = ()


class Health(msgspec.Struct, frozen=True, kw_only=True):
    status: str
    version: str = ""
    uptime_s: float = 0.0
    servers: tuple[ServerHealth, ...] = ()
    subscribers: int = 0
    waits: int = 0  # pending GET /v1/panes/{pane}/wait
    watched_panes: int = 0  # panes whose activity is being watched (waits, activity streams)
    alerts: AlertsHealth | None = None  # None: alerts are off


class ServerFailure(msgspec.Struct, frozen=True, kw_only=True):
    """One server a barrier could not re-read (503 sync_failed), and why."""

    socket_path: str
    error: str


class SyncAnswer(msgspec.Struct, frozen=True):
    seq: str = ""


class Accepted(msgspec.Struct, frozen=True):
    """``POST /v1/notify``: 202, the re-sync is coming (coalesced)."""

    accepted: bool = True


class ErrorBody(msgspec.Struct, frozen=True, omit_defaults=True):
    code: str  # snake_case, stable: clients branch on it
    message: str  # for people
    servers: tuple[ServerFailure, ...] | None = None  # sync_failed: which, and why


class ErrorAnswer(msgspec.Struct, frozen=True):
    """Every error of the HTTP API, aiohttp's own included."""

    error: ErrorBody


class WaitAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """``GET /v1/panes/{pane}/wait``: how the wait ended.  ``outcome`` is what happened
    (``timeout`` and ``gone`` are never dressed as met); ``met`` whether it is what
    ``until`` asked for; ``location`` the pane now, with its activity (null when gone)."""

    outcome: Literal[
        "idle",
        "busy",
        "exit",
        "change",
        "timeout",
        "gone",
        "agent-idle",
        "agent-waiting",
        "agent-gone",
    ]
    until: Literal["idle", "busy", "exit", "change", "agent-idle", "agent-waiting"]
    met: bool
    location: Location | None = None
    activity: Activity = Activity()
    before: Activity = Activity()
    waited_ms: float = 0.0
    reason: str | None = None
    agent: AgentInfo | None = None  # the pane's agent, for the agent conditions
