"""What one application holds (no globals: two apps in one process share nothing)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from tmuxlocd.api.auth import Guard
from tmuxlocd.heap import Trimmer
from tmuxlocd.hub import Hub
from tmuxlocd.streams import EventFrames, SnapshotFrames

if TYPE_CHECKING:
    from tmuxlocd.api.events import Stream
    from tmuxlocd.api.route import Route


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    tcp_token: str | Callable[[], str] | None
    heartbeat: float
    max_streams: int
    queue_size: int
    write_timeout: float


class Context:
    """The hub, the settings and the live streams of one application; handlers get it."""

    def __init__(self, hub: Hub, settings: Settings, routes: tuple[Route[Any], ...]) -> None:
        self.hub = hub
        self.settings = settings
        self.routes = routes
        self.guard = Guard(settings.tcp_token)
        self.streams: set[Stream] = set()
        self.frames = SnapshotFrames()  # snapshot frames shared by the streams of this app
        self.event_frames = EventFrames()  # and what the publisher writes to them directly
        self.openapi: bytes | None = None  # the document, made on first request
        self.trimmer = Trimmer()  # heap back to the system after streams' bursts
