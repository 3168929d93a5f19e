"""The public import path of the typed clients: ``from tmuxlocd.client import Client``.

The clients live in ``tmuxlocd.clients.client``; this module only hands their names on.
"""

from __future__ import annotations

from tmuxlocd.clients.client import (
    Activity,
    AsyncClient,
    Caller,
    Client,
    ClientError,
    DaemonUnavailable,
    DirectionNeighbors,
    Health,
    NeighborEntry,
    PaneList,
    PaneNeighbors,
    PaneSummary,
    PaneSummaryList,
    SelfInfo,
    ServerHealth,
    SyncFailedError,
    Tree,
    TreeServer,
    TreeSession,
    TreeWindow,
    WaitAnswer,
    socket_path,
)

__all__ = [
    "Activity",
    "AsyncClient",
    "Caller",
    "Client",
    "ClientError",
    "DaemonUnavailable",
    "DirectionNeighbors",
    "Health",
    "NeighborEntry",
    "PaneList",
    "PaneNeighbors",
    "PaneSummary",
    "PaneSummaryList",
    "SelfInfo",
    "ServerHealth",
    "SyncFailedError",
    "Tree",
    "TreeServer",
    "TreeSession",
    "TreeWindow",
    "WaitAnswer",
    "socket_path",
]
