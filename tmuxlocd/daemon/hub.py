"""The hub: the live model of every watched server, the event sequence, and subscribers.

Observers hand the hub a fresh ``ServerState`` after each re-sync; the hub rebuilds the
Locations of the windows that changed, diffs them against what it had, stamps the resulting
events with ``<instance>:<seq>`` ids, keeps them in a ring buffer for resuming, and fans them
out to subscribers.  Each event is JSON-encoded once, however many subscribers get it.

A subscriber owns a bounded queue.  When it falls behind, its queue is dropped and it is
marked lagged (SPEC §5: it then gets ``lagged`` and a fresh ``snapshot``), so one slow reader
never blocks the daemon or grows its memory without bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterator, Mapping
from typing import Literal, Protocol

from tmuxlocd.core.errors import SyncFailed
from tmuxlocd.core.events import (
    ChangeEvent,
    Event,
    Lagged,
    Reset,
    ServerDown,
    ServerUp,
    SnapshotEvent,
    diff,
    event_type,
    location_of,
)
from tmuxlocd.core.journal import RING_SIZE, Journal, Published
from tmuxlocd.core.location import Location, LocationBuilder, ServerRef
from tmuxlocd.core.model import ServerState
from tmuxlocd.core.queries import TtyIndex

ObserverStatus = Literal["attached", "down", "error"]

QUEUE_SIZE = 4_096  # per subscriber; past this it is lagged, not buffered


class Syncer(Protocol):
    """What re-reads tmux for the hub (the daemon's watcher; a fake in tests)."""

    async def sync(self, server: str | None = None) -> dict[str, str]:
        """Re-sync every server now (or one), returning once published: each server whose
        re-read was not published, and why (empty: all were)."""
        ...

    def notify(self, server: str | None = None) -> None:
        """A hook or client asked for a re-sync: coalesced, nothing waits for it."""
        ...


class ServerEntry:
    """What the hub holds for one server."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.state = ServerState(socket_path=socket_path)
        self.builder = LocationBuilder()
        self.locations: dict[str, Location] = self.builder.locations
        self.observer: ObserverStatus = "down"
        # While observer == "error": the failing command and tmux's words.
        self.last_error: str | None = None
        self.last_sync: float | None = None  # time.monotonic() of the last applied re-sync
        self.safety_net_catches = 0  # changes only the safety net found (mirror.Effect.caught)

    @property
    def ref(self) -> ServerRef:
        return ServerRef(socket_path=self.socket_path, pid=self.state.pid)


Predicate = Callable[[Event], bool]


# Writes a publication's admitted items straight to the stream's connection; False when it
# cannot now (the reader is behind, the connection closing): they are queued instead.
Sink = Callable[[list[Published]], bool]


class Subscriber:
    """One change stream's queue.  ``wait()`` returns when there is something to drain.

    With a ``sink`` set (by the stream, once its first frames are written and while its
    connection takes bytes), admitted events skip the queue and the stream's task: the
    publisher writes them.  The first time the sink declines, it is dropped, and this batch
    and every later one are queued, in order, until the stream's task has written them all
    and sets it again."""

    def __init__(
        self, hub: Hub, predicate: Predicate, maxsize: int, key: Hashable | None = None
    ) -> None:
        self.hub = hub
        self.predicate = predicate
        self.key = key
        self.maxsize = maxsize
        self.queue: deque[Published] = deque()
        self.lagged = False
        self.closed = False
        self.sink: Sink | None = None
        self._wake = asyncio.Event()

    def admit(self, items: list[Published]) -> list[Published]:
        return [item for item in items if self.predicate(item.event)]

    def offer(self, admitted: list[Published]) -> None:
        """Items of one publication this subscriber's predicate admits (``admit``)."""
        if self.closed or self.lagged or not admitted:
            return
        if self.sink is not None and not self.queue:
            if self.sink(admitted):
                return
            self.sink = None
        for item in admitted:
            if len(self.queue) >= self.maxsize:
                # Falling behind: drop what is queued (memory stays bounded) and remember
                # it, so the stream can send `lagged` and a fresh snapshot when the reader
                # comes back.
                self.queue.clear()
                self.lagged = True
                break
            self.queue.append(item)
        self._wake.set()

    def close(self) -> None:
        self.closed = True
        self.sink = None
        self._wake.set()

    async def wait(self, timeout: float | None = None) -> None:
        """Wait until something is queued, the subscriber lagged or closed, or timeout."""
        if self.queue or self.lagged or self.closed:
            return
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._wake.wait()

    def drain(self) -> list[Published]:
        items = list(self.queue)
        self.queue.clear()
        return items


class Hub:
    def __init__(self, *, ring_size: int = RING_SIZE, clock: Callable[[], float] = time.time):
        self.journal = Journal(secrets.token_hex(4), ring_size=ring_size)
        self.servers: dict[str, ServerEntry] = {}
        self.subscribers: set[Subscriber] = set()
        # The same subscribers by admission key (Hub.subscribe's ``key``; one without a key
        # is a group of its own), each group in the order it subscribed.
        self._groups: dict[Hashable, dict[Subscriber, None]] = {}
        self.started = time.monotonic()
        self._clock = clock
        self._rdev_cache: dict[str, int] = {}
        self._ttys = TtyIndex(self._rdev)
        # None until the daemon attaches its watcher: a hub alone has nothing to re-read.
        self.syncer: Syncer | None = None
        # Called with every batch published, after the streams (a daemon part that must
        # hear of panes that end, such as the agent registry): callables, so the hub
        # imports none of them.
        self.on_published: list[Callable[[list[Published]], None]] = []
        # Moves with every applied re-sync and every server that goes or is forgotten: an
        # answer computed at one version is the answer at that version (memo.Kept).
        self.version = 0

    # ------------------------------------------------------------------ ids

    @property
    def instance(self) -> str:
        return self.journal.instance

    @property
    def seq(self) -> int:
        return self.journal.seq

    @property
    def ring(self) -> list[Published]:
        return self.journal.ring

    def event_id(self, seq: int | None = None) -> str:
        return self.journal.event_id(seq)

    def parse_event_id(self, value: str) -> int | None:
        """The seq of an id of this instance still in the ring, else None (-> reset)."""
        return self.journal.parse_event_id(value)

    # ------------------------------------------------------------------ servers

    def server(self, socket_path: str) -> ServerEntry:
        entry = self.servers.get(socket_path)
        if entry is None:
            entry = self.servers[socket_path] = ServerEntry(socket_path)
        return entry

    def set_observer(
        self, socket_path: str, status: ObserverStatus, error: str | None = None
    ) -> None:
        entry = self.server(socket_path)
        entry.observer = status
        entry.last_error = error if status == "error" else None

    def update(self, state: ServerState) -> list[Published]:
        """Apply a fresh re-sync of one server; publish and return its events."""
        self.version += 1
        entry = self.server(state.socket_path)
        was_running = entry.state.running
        # A changed server pid changes every window's inputs, so every pane is compared then.
        old, new = entry.builder.build(state)
        events: list[ChangeEvent] = []
        if state.running and not was_running:
            events.append(ServerUp(server=ServerRef(socket_path=state.socket_path, pid=state.pid)))
        events.extend(diff(old, new))
        entry.state = state
        entry.locations = entry.builder.locations
        entry.last_sync = time.monotonic()
        if events:
            self._ttys.clear()
        return self.publish(events)

    def server_down(self, socket_path: str, status: ObserverStatus = "down") -> list[Published]:
        """The server went away: its panes are removed, then ``server.down``."""
        self.version += 1
        entry = self.server(socket_path)
        entry.observer = status
        entry.last_error = None
        if not entry.state.running:
            return []
        ref = entry.ref
        events: list[ChangeEvent] = list(diff(entry.locations, {}))
        events.append(ServerDown(server=ref))
        entry.state = ServerState(socket_path=socket_path)
        entry.builder = LocationBuilder()
        entry.locations = entry.builder.locations
        entry.last_sync = time.monotonic()
        self._ttys.clear()
        return self.publish(events)

    def forget(self, socket_path: str) -> None:
        self.version += 1
        self.servers.pop(socket_path, None)
        self._ttys.clear()

    # ------------------------------------------------------------------ publishing

    def publish(self, events: list[ChangeEvent]) -> list[Published]:
        out = self.journal.stamp(events, self._clock())
        if out:
            # The whole publication at once: a stream written directly gets it in one write.
            # Subscribers with one key admit the same items: the first of each group decides
            # for all of them (one filter pass per selection, none per stream), and they all
            # get the same list (its bytes are shared too: streams.EventFrames).  Copies:
            # nothing a write does may change what is being iterated.
            for group in list(self._groups.values()):
                members = tuple(group)
                admitted = members[0].admit(out)
                if not admitted:
                    continue
                for sub in members:
                    # A sink is set only while nothing is queued and the subscriber is
                    # neither lagged nor closed (``Subscriber``): its write needs no check.
                    sink = sub.sink
                    if sink is not None:
                        if sink(admitted):
                            continue
                        sub.sink = None
                    sub.offer(admitted)
            for listener in self.on_published:
                listener(out)  # e.g. a pane's end is its agents' end
        return out

    def since(self, seq: int) -> list[Published]:
        return self.journal.since(seq)

    def snapshot(self, predicate: Callable[[Location], bool] | None = None) -> SnapshotEvent:
        panes = tuple(loc for loc in self.all_locations() if predicate is None or predicate(loc))
        return SnapshotEvent(id=self.event_id(), time=self._clock(), panes=panes)

    def marker(self, kind: Literal["reset", "lagged"]) -> Reset | Lagged:
        return self.journal.marker(kind, self._clock())

    @contextlib.contextmanager
    def subscribe(
        self, predicate: Predicate, maxsize: int = QUEUE_SIZE, key: Hashable | None = None
    ) -> Iterator[Subscriber]:
        """A subscriber of every later publication; ``key``: subscribers with equal keys
        have predicates that admit the same events (None: its own)."""
        sub = Subscriber(self, predicate, maxsize, key)
        group_key: Hashable = sub if key is None else key
        self.subscribers.add(sub)
        self._groups.setdefault(group_key, {})[sub] = None
        try:
            yield sub
        finally:
            sub.close()
            self.subscribers.discard(sub)
            group = self._groups.get(group_key)
            if group is not None:
                group.pop(sub, None)
                if not group:
                    del self._groups[group_key]

    def close_subscribers(self) -> None:
        for sub in list(self.subscribers):
            sub.close()

    # ------------------------------------------------------------------ queries

    def all_locations(self) -> Iterator[Location]:
        for entry in self.servers.values():
            yield from entry.locations.values()

    def server_states(self) -> Iterator[ServerState]:
        """(queries.View) every watched server's last state."""
        for entry in self.servers.values():
            yield entry.state

    def locations_of(self, socket_path: str) -> Mapping[str, Location]:
        """(queries.View) one server's Locations, by pane id."""
        entry = self.servers.get(socket_path)
        return entry.locations if entry is not None else {}

    def any_running(self) -> bool:
        return any(entry.state.running for entry in self.servers.values())

    def _rdev(self, tty: str) -> int | None:
        # A pty path always names the same device number, so the stat is done once per path.
        rdev = self._rdev_cache.get(tty)
        if rdev is None:
            try:
                rdev = os.stat(tty).st_rdev
            except OSError:
                return None
            self._rdev_cache[tty] = rdev
        return rdev

    def panes_by_rdev(self, rdev: int) -> list[Location]:
        """The panes whose pane_tty is the device ``rdev`` (normally zero or one)."""
        return self._ttys.panes(rdev, self.servers, self.locations_of)

    # ------------------------------------------------------------------ syncing

    def attach(self, syncer: Syncer) -> None:
        self.syncer = syncer

    async def sync(self, server: str | None = None) -> str:
        """The barrier of POST /v1/sync: re-sync, publish, then return the last event id.

        Raises ``SyncFailed`` when any server's re-read was not published: a barrier never
        claims a re-read it did not make."""
        if self.syncer is not None:
            failed = await self.syncer.sync(server)
            if failed:
                raise SyncFailed(failed)
        return self.event_id()

    def degraded(self) -> bool:
        return any(entry.observer == "error" for entry in self.servers.values())

    def notify(self, server: str | None = None) -> None:
        if self.syncer is not None:
            self.syncer.notify(server)


__all__ = [
    "Hub",
    "ObserverStatus",
    "Published",
    "ServerEntry",
    "Sink",
    "Subscriber",
    "Syncer",
    "event_type",
    "location_of",
]
