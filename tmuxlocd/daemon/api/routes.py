"""The routes of API v1 (SPEC §4, §5): adding one is one entry here, its handler, its Struct."""

from __future__ import annotations

from typing import Any

from tmuxlocd.core.agent_view import AgentInfo, AgentList
from tmuxlocd.core.answers import (
    Accepted,
    AlertTestAnswer,
    DirectionNeighbors,
    Health,
    PaneList,
    PaneNeighbors,
    PaneSummaryList,
    SelfAnswer,
    SyncAnswer,
    Tree,
    WaitAnswer,
)
from tmuxlocd.core.events import Event
from tmuxlocd.core.location import Location
from tmuxlocd.daemon.api import agents, events, views, waits
from tmuxlocd.daemon.api.params import (
    AgentReportQuery,
    AgentsQuery,
    EventsQuery,
    HealthQuery,
    NeighborsQuery,
    NoQuery,
    NotifyQuery,
    PaneQuery,
    PanesQuery,
    SelfQuery,
    SyncQuery,
    TreeQuery,
    WaitQuery,
)
from tmuxlocd.daemon.api.route import Reply, Route

ROUTES: tuple[Route[Any], ...] = (
    Route(
        "GET",
        "/v1/self",
        views.get_self,
        SelfQuery,
        "Where the calling process is (from its peer credentials)",
        (
            Reply(200, "inside or outside tmux", SelfAnswer, text=True),
            Reply(204, "the text form, outside tmux"),
        ),
        errors=(503,),
        etag=True,
        repeat=views.repeat_self,
    ),
    Route(
        "GET",
        "/v1/panes",
        views.get_panes,
        PanesQuery,
        "The panes matching the filters, a page of them",
        (
            Reply(
                200, "full Locations, or summaries with detail=summary", (PaneList, PaneSummaryList)
            ),
        ),
        errors=(404, 409, 503),
        etag=True,
    ),
    Route(
        "GET",
        "/v1/panes/{pane}",
        views.get_pane,
        PaneQuery,
        "One pane's Location",
        (Reply(200, "the Location", Location, text=True),),
        errors=(404, 409, 503),
        etag=True,
    ),
    Route(
        "GET",
        "/v1/panes/{pane}/wait",
        waits.get_wait,
        WaitQuery,
        "Wait until a pane is idle, busy, has exited or changed activity, or its agent is "
        "idle or waiting (a long-poll: at once if already true; timeout and a pane gone "
        "are outcomes of their own)",
        (Reply(200, "how the wait ended", WaitAnswer),),
        errors=(404, 409, 503),
        allow_head=False,
    ),
    Route(
        "GET",
        "/v1/panes/{pane}/neighbors",
        views.get_neighbors,
        NeighborsQuery,
        "The panes sharing each edge of a pane",
        (Reply(200, "every direction", PaneNeighbors),),
        errors=(404, 409, 503),
        etag=True,
    ),
    Route(
        "GET",
        "/v1/panes/{pane}/neighbors/{direction}",
        views.get_neighbors,
        NeighborsQuery,
        "The panes sharing one edge of a pane",
        (Reply(200, "one direction", DirectionNeighbors),),
        errors=(404, 409, 503),
        etag=True,
    ),
    Route(
        "GET",
        "/v1/tree",
        views.get_tree,
        TreeQuery,
        "Servers, sessions, windows and panes",
        (Reply(200, "the tree", Tree),),
        errors=(404, 409, 503),
        etag=True,
    ),
    Route(
        "GET",
        "/v1/events",
        events.get_events,
        EventsQuery,
        "The change stream (SSE, NDJSON, or the text form of one pane)",
        (
            Reply(
                200,
                "a snapshot, then change events, one Event a frame (format=text: SSE "
                "of the text form)",
                Event,
                media=("text/event-stream", "application/x-ndjson"),
            ),
        ),
        errors=(404, 409, 503),
        allow_head=False,
    ),
    Route(
        "GET",
        "/v1/agents",
        agents.get_agents,
        AgentsQuery,
        "The agents the harnesses' hooks reported, where each is and its state",
        (Reply(200, "the agents, in pane order", AgentList),),
        errors=(404, 409, 503),
    ),
    Route(
        "POST",
        "/v1/agents/self",
        agents.post_agent_self,
        AgentReportQuery,
        "From a harness's hook: its session's agent state, placed in the caller's own pane "
        "by the kernel (its tty, else its nearest ancestor's)",
        (Reply(200, "the agent as now recorded (state gone: no longer)", AgentInfo),),
        errors=(404, 409, 503),
    ),
    Route(
        "POST",
        "/v1/sync",
        views.post_sync,
        SyncQuery,
        "Re-sync now; answers once the resulting events are published (a barrier)",
        (Reply(200, "the id of the last event published", SyncAnswer),),
        errors=(404, 503),
    ),
    Route(
        "POST",
        "/v1/notify",
        views.post_notify,
        NotifyQuery,
        "From tmux hooks: re-sync that server (or all), coalesced",
        (Reply(202, "accepted", Accepted),),
        body=True,
    ),
    Route(
        "POST",
        "/v1/alerts/test",
        views.post_alerts_test,
        NoQuery,
        "One test alert through each configured alert channel (SPEC §14)",
        (Reply(200, "each channel's delivery", AlertTestAnswer),),
        errors=(409,),
    ),
    Route(
        "GET",
        "/v1/health",
        views.get_health,
        HealthQuery,
        "The daemon's state and each server's observer",
        (Reply(200, "ok or degraded", Health),),
        etag=True,
    ),
    Route(
        "GET",
        "/v1/openapi.json",
        views.get_openapi,
        NoQuery,
        "This document",
        (Reply(200, "the OpenAPI 3.1 document", dict[str, Any]),),
        etag=True,
    ),
)
