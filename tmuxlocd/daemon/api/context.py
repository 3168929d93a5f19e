"""What one application holds (no globals: two apps in one process share nothing)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import msgspec

from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.core.queries import Choose
from tmuxlocd.core.shared import Binding, choose_bound
from tmuxlocd.core.streams import EventFrames, SnapshotFrames
from tmuxlocd.daemon.activity_watch import ActivityWatcher
from tmuxlocd.daemon.agent_registry import AgentRegistry
from tmuxlocd.daemon.alerts import Alerts
from tmuxlocd.daemon.api.auth import Guard
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.host.heap import Trimmer


class Settings(msgspec.Struct, frozen=True, kw_only=True):
    tcp_token: str | Callable[[], str] | None
    heartbeat: float
    max_streams: int
    queue_size: int
    write_timeout: float


class Rereads:
    """Which callers' ttys had a re-read for which model version (``Lookup.confirm_self``)."""

    LIMIT = 4096  # ttys remembered; past it the memory starts again (a re-read each, at worst)

    def __init__(self) -> None:
        self._done: dict[int, int] = {}

    def claim(self, tty_nr: int, version: int) -> bool:
        """True when ``tty_nr`` has had no re-read at ``version`` yet (and records one)."""
        if self._done.get(tty_nr) == version:
            return False
        if len(self._done) >= self.LIMIT:
            self._done.clear()
        self._done[tty_nr] = version
        return True


class Bindings:
    """Which client of a shared server each harness session is bound to (spec §2,
    ``core.shared.choose_bound``), by ``<harness>:<session id>``; bounded, newest kept."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._bound: dict[str, Binding] = {}

    def chooser(self, session: str, *, rebind: bool = False) -> Choose:
        def choose(clients: Sequence[ProcStat], sole: int) -> Sequence[ProcStat]:
            chosen, bound = choose_bound(self._bound.get(session), clients, sole, rebind=rebind)
            self._bound.pop(session, None)
            if len(self._bound) >= self.LIMIT:
                del self._bound[next(iter(self._bound))]
            self._bound[session] = bound
            return chosen

        return choose


class Closable(Protocol):
    """A live stream as the application sees it (``events.Stream``): ended on shutdown."""

    def close(self) -> None: ...


class Context:
    """The hub, the settings and the live streams of one application; handlers get it.

    It names no route and no stream type (they name it): the OpenAPI document comes from
    ``describe``, which the application makes from its routes."""

    def __init__(self, hub: Hub, settings: Settings, describe: Callable[[], bytes]) -> None:
        self.hub = hub
        self.settings = settings
        self.describe = describe
        self.guard = Guard(settings.tcp_token)
        self.streams: set[Closable] = set()
        # The pane activity watcher (tmuxlocd.daemon.activity_watch), once the daemon made one.
        self.activity: ActivityWatcher | None = None
        # The agents the harnesses' hooks report (tmuxlocd.daemon.agent_registry), once made.
        self.agents: AgentRegistry | None = None
        # The alerts on agents (tmuxlocd.daemon.alerts), when turned on.
        self.alerts: Alerts | None = None
        self.frames = SnapshotFrames()  # snapshot frames shared by the streams of this app
        self.event_frames = EventFrames()  # and what the publisher writes to them directly
        self.openapi: bytes | None = None  # the document, made on first request
        self.trimmer = Trimmer()  # heap back to the system after streams' bursts
        self.rereads = Rereads()  # the stale-picture re-reads made for callers
        self.bindings = Bindings()  # harness sessions to shared servers' clients
