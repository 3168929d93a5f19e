"""Change streams (spec §5), their decisions without the I/O.

``StreamCore`` holds what one ``GET /v1/events`` stream decides: which published events it
admits (the hub-side filter, cheap and stateless), whether a pane is in a window or session
selection (so that a pane leaving it is told once), ``?min_interval_ms`` coalescing
(``Coalescer``), and the bytes of each frame in SSE, NDJSON or the text form.  The HTTP
handler (api.py) only waits, writes and times.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Literal, Protocol

import msgspec

from tmuxlocd.core.events import (
    AgentStateChanged,
    Event,
    PaneActivity,
    PaneAdded,
    PaneChanged,
    PaneRemoved,
    ServerDown,
    ServerUp,
    SnapshotEvent,
    encoder,
    event_type,
    location_of,
    pane_key,
)
from tmuxlocd.core.journal import Published
from tmuxlocd.core.location import Location, changed_fields, text_form
from tmuxlocd.core.queries import Selection


class Source(Protocol):
    """What a stream reads of the hub (tmuxlocd.daemon.hub.Hub): the journal's position and
    a snapshot of the model.  A Protocol: the hub is the daemon's, above this module."""

    @property
    def instance(self) -> str: ...

    @property
    def seq(self) -> int: ...

    def snapshot(self, predicate: Callable[[Location], bool] | None = None) -> SnapshotEvent: ...


class Snapshot(msgspec.Struct, frozen=True):
    """What starts (or restarts) a stream, with the seq it reflects."""

    seq: int
    event: SnapshotEvent


def merge(old: Event, new: Event) -> Event | None:
    """Two events of one pane within one interval, as one (None: they cancel out)."""
    match old, new:
        case PaneAdded(), PaneChanged(location=loc):
            return PaneAdded(id=new.id, time=new.time, location=loc)
        case PaneAdded(), PaneRemoved():
            return None
        case PaneChanged(changed=a), PaneChanged(location=loc, changed=b):
            both = tuple(dict.fromkeys((*a, *b)))
            return PaneChanged(id=new.id, time=new.time, location=loc, changed=both)
        case PaneRemoved(last=last), PaneAdded(location=loc):
            changed = tuple(changed_fields(last, loc))
            if not changed:
                return None
            return PaneChanged(id=new.id, time=new.time, location=loc, changed=changed)
        case _:
            return new


class Coalescer:
    """``?min_interval_ms``: at most one event per pane per interval, trailing edge kept.

    Events are released in batches at least one interval apart; a batch holds at most one
    (merged) event per pane, ordered by id, so every pane's latest state arrives at the end
    of each interval and ids still increase along the stream.
    """

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.pending: dict[str, tuple[Event | None, int]] = {}
        self.other: list[Published] = []
        self.next_allowed = 0.0
        # The last Location this stream gave of each pane: a merged change names the fields
        # that differ from it (not every field touched on the way), and a pane that ends an
        # interval where it began it is not told of at all.
        self.told: dict[str, Location] = {}

    def start(self, panes: Iterable[Location]) -> None:
        """A snapshot was sent: what the subscriber now knows."""
        self.told = {pane_key(loc.server.socket_path, loc.pane.id): loc for loc in panes}

    def add(self, item: Published) -> None:
        loc = location_of(item.event)
        if loc is None:
            self.other.append(item)
            return
        key = pane_key(loc.server.socket_path, loc.pane.id)
        held = self.pending.get(key)
        if (
            held is not None
            and isinstance(held[0], PaneRemoved)
            and isinstance(item.event, PaneAdded)
            and held[0].last.server.pid != loc.server.pid
        ):
            # A restarted server re-uses pane ids: a different pane, not a change of the old
            # one.  The removal is told as it is (before `server.down`, in id order).
            self.other.append(Published(held[1], held[0], encoder.encode(held[0])))
            self.told.pop(key, None)
            held = None
        if held is None:
            self.pending[key] = (item.event, item.seq)
        else:
            self.pending[key] = (
                item.event if held[0] is None else merge(held[0], item.event),
                item.seq,
            )

    def clear(self) -> None:
        self.pending.clear()
        self.other.clear()

    @property
    def holding(self) -> bool:
        return bool(self.pending or self.other)

    def take(self, now: float) -> list[Published]:
        if not self.holding or now < self.next_allowed:
            return []
        out = list(self.other)
        for key, (event, seq) in self.pending.items():
            if event is None:
                continue
            if isinstance(event, PaneRemoved):
                self.told.pop(key, None)
            else:
                before = self.told.get(key)
                loc = location_of(event)
                assert loc is not None
                if isinstance(event, PaneChanged) and before is not None:
                    changed = tuple(changed_fields(before, loc))
                    if not changed:
                        continue  # changed and changed back within the interval
                    if changed != event.changed:
                        event = PaneChanged(
                            id=event.id, time=event.time, location=loc, changed=changed
                        )
                self.told[key] = loc
            out.append(Published(seq, event, encoder.encode(event)))
        out.sort(key=lambda p: p.seq)
        self.clear()
        self.next_allowed = now + self.interval
        return out


SSE_HEARTBEAT = b": heartbeat\n\n"


def sse(ident: str, kind: str, data: Iterable[str | bytes]) -> bytes:
    parts = [b"id: ", ident.encode(), b"\nevent: ", kind.encode(), b"\n"]
    for line in data:
        parts += [b"data: ", line.encode() if isinstance(line, str) else line, b"\n"]
    parts.append(b"\n")
    return b"".join(parts)


StreamFormat = Literal["sse", "ndjson", "text"]


def event_frame(event: Event, json: bytes, fmt: StreamFormat) -> bytes:
    """One event's frame in an SSE or NDJSON stream (``json``: the event, encoded)."""
    if fmt == "ndjson":
        return json + b"\n"
    return sse(event.id, event_type(event), (json,))


def http_chunk(data: bytes) -> bytes:
    """``data`` as one chunk of an HTTP/1.1 chunked body."""
    return b"%x\r\n%b\r\n" % (len(data), data)


class EventFrames:
    """The bytes of what is written straight to every ready stream as events are published.

    Streams of one format that tell the same events get the same bytes, so each run of
    frames is encoded (and chunked) once per publication, however many streams write it.
    Only the latest publication's bytes are kept: seqs only grow, so older ones never match.
    """

    def __init__(self) -> None:
        self._chunks: dict[tuple[str, tuple[int, ...]], bytes] = {}
        # The same, by the identity of a list the hub gives every stream of one selection
        # (the list is kept with its bytes, so its id cannot be another's meanwhile).
        self._lists: dict[tuple[str, int], tuple[list[Published], bytes]] = {}
        self._newest = 0
        # The last answer: a publication is asked for by every stream of a selection in a
        # row (1,000 streams of one selection, one lookup each), so this is the usual hit.
        self._last: tuple[list[Published], str, bytes] | None = None

    def chunk(self, items: list[Published], fmt: StreamFormat) -> bytes:
        last = self._last
        if last is not None and last[0] is items and last[1] == fmt:
            return last[2]
        data = self._chunk(items, fmt)
        self._last = (items, fmt, data)
        return data

    def _chunk(self, items: list[Published], fmt: StreamFormat) -> bytes:
        if items[-1].seq > self._newest:
            self._chunks.clear()
            self._lists.clear()
            self._newest = items[-1].seq
        shared = self._lists.get((fmt, id(items)))
        if shared is not None and shared[0] is items:
            return shared[1]
        key = (fmt, tuple(item.seq for item in items))
        data = self._chunks.get(key)
        if data is None:
            frames = b"".join(event_frame(item.event, item.json, fmt) for item in items)
            data = self._chunks[key] = http_chunk(frames)
        self._lists[(fmt, id(items))] = (items, data)
        return data


class SnapshotFrames:
    """Streams with the same selection that start between the same two events get the same
    bytes: one encoding, one buffer, however many subscribers connect (one per app)."""

    def __init__(self) -> None:
        # (selection, format) -> (hub seq, hub instance, framed snapshot)
        self._frames: dict[tuple[Selection, str], tuple[int, str, bytes]] = {}

    def get(self, key: tuple[Selection, str], seq: int, instance: str) -> bytes | None:
        cached = self._frames.get(key)
        if cached is not None and cached[0] == seq and cached[1] == instance:
            return cached[2]
        return None

    def put(self, key: tuple[Selection, str], seq: int, instance: str, frame: bytes) -> None:
        # Only frames of the current event are worth keeping: older ones never match.
        if len(self._frames) >= 64 or any(s != seq for s, _, _ in self._frames.values()):
            self._frames.clear()
        self._frames[key] = (seq, instance, frame)


class StreamCore:
    """One change stream's decisions: what it admits, membership of a scoped selection,
    coalescing, and its frames (SSE, NDJSON, text).  The shell moves the bytes."""

    def __init__(
        self,
        hub: Source,
        frames: SnapshotFrames,
        selection: Selection,
        types: frozenset[str],
        fmt: StreamFormat,
        *,
        interval: float | None,
        turn: int | None,
        with_neighbors: bool,
    ) -> None:
        self.hub = hub
        self.frames = frames
        self.selection = selection
        self.types = types
        self.fmt = fmt
        self.turn = turn
        self.with_neighbors = with_neighbors
        self.coalescer = Coalescer(interval) if interval else None
        self.last_seq = 0
        # Window/session selections: whether each pane is in the selection (absent: unknown,
        # after an exact resume), so that a pane leaving it is told once, and only then.
        self.members: dict[str, bool] = {}
        self.members_known = True
        self.last_text: str | None = None
        self.scoped = selection.scoped  # (asked per stream and publication: kept)

    # -------------------------------------------------------------- selection

    def admits(self, event: Event) -> bool:
        """The hub-side filter: cheap, stateless, called for every published event."""
        if event_type(event) not in self.types:
            return False
        match event:
            case ServerUp(server=ref) | ServerDown(server=ref):
                return self.selection.server is None or ref.socket_path == self.selection.server
            case PaneAdded(location=loc) | PaneRemoved(last=loc) | PaneActivity(location=loc):
                return self.selection.matches(loc)
            case AgentStateChanged(agent=agent):
                where = agent.location
                if where is None:  # its pane is gone: by the ids it had
                    sel = self.selection
                    return (
                        not sel.scoped
                        and sel.server in (None, agent.server)
                        and sel.pane in (None, agent.pane)
                    )
                return self.selection.matches(where)
            case PaneChanged(location=loc, changed=changed):
                if self.selection.matches(loc):
                    return True
                # It may have left the selection: the stream decides with what it knows.
                return (
                    self.selection.scoped
                    and (
                        self.selection.server is None
                        or loc.server.socket_path == self.selection.server
                    )
                    and any(f in changed for f in ("window.id", "session.id", "links"))
                )
            case _:
                return True

    def _relevant(self, item: Published) -> bool:
        """The stream-side filter: membership of window/session selections."""
        event = item.event
        loc = location_of(event)
        if loc is None or not self.selection.scoped:
            return True
        key = pane_key(loc.server.socket_path, loc.pane.id)
        if isinstance(event, PaneRemoved):
            self.members.pop(key, None)
            return True  # admitted only when its last location was in the selection
        now = self.selection.matches(loc)
        was = self.members.get(key)
        self.members[key] = now
        if now:
            return True
        return was is True or (was is None and not self.members_known)

    def snapshot(self) -> Snapshot:
        snap = self.hub.snapshot(self.selection.matches)
        # Only window/session selections need it: a dict of every pane for each of 1,000
        # streams of everything would be most of the daemon's memory.
        self.members = (
            {pane_key(loc.server.socket_path, loc.pane.id): True for loc in snap.panes}
            if self.selection.scoped
            else {}
        )
        self.members_known = True
        if self.coalescer is not None:
            self.coalescer.start(snap.panes)
        return Snapshot(self.hub.seq, snap)

    def snapshot_frame(self) -> tuple[int, bytes]:
        """A fresh snapshot's frame, and the seq it is of.

        A stream whose snapshot leaves it no state of its own (a selection that is not
        scoped, no coalescing, not text) takes the frame another stream of its selection
        made at this seq, without building the snapshot: 1,000 streams starting at once at
        1,000 panes made a million filter calls for one shared frame."""
        if self.fmt != "text" and not self.selection.scoped and self.coalescer is None:
            seq = self.hub.seq
            cached = self.frames.get((self.selection, self.fmt), seq, self.hub.instance)
            if cached is not None:
                self.members, self.members_known = {}, True
                return seq, cached
        snap = self.snapshot()
        return snap.seq, self.frame_snapshot(snap)

    # -------------------------------------------------------------- output

    def frame_event(self, event: Event, json: bytes | None = None) -> bytes:
        if self.fmt == "text":  # only `lagged` gets here: a bare marker, the text follows
            return sse(event.id, event_type(event), ())
        return event_frame(event, encoder.encode(event) if json is None else json, self.fmt)

    def frame_text(self, ident: str, kind: str, loc: Location | None, force: bool) -> bytes:
        if loc is None:
            if self.last_text is None and not force:
                return b""
            self.last_text = None
            return sse(ident, kind, (self.selection.pane or "",))
        text = text_form(loc, turn=self.turn, with_neighbors=self.with_neighbors)
        if text == self.last_text and not force:
            return b""
        self.last_text = text
        return sse(ident, kind, text.rstrip("\n").split("\n"))

    def frame_snapshot(self, snap: Snapshot) -> bytes:
        if self.fmt != "text":
            key = (self.selection, self.fmt)
            cached = self.frames.get(key, snap.seq, self.hub.instance)
            if cached is not None:
                return cached
            frame = self.frame_event(snap.event)
            self.frames.put(key, snap.seq, self.hub.instance, frame)
            return frame
        loc = snap.event.panes[0] if snap.event.panes else None
        # A text stream always (re)starts with the whole text.
        return self.frame_text(snap.event.id, "snapshot", loc, True)

    def frame_items(self, items: Iterable[Published]) -> list[bytes]:
        out: list[bytes] = []
        for item in items:
            if self.fmt == "text":
                loc = None if isinstance(item.event, PaneRemoved) else location_of(item.event)
                frame = self.frame_text(item.event.id, event_type(item.event), loc, False)
                if frame:
                    out.append(frame)
            else:
                out.append(self.frame_event(item.event, item.json))
        return out

    @property
    def direct(self) -> bool:
        """Whether published events can be framed for this stream as they come, the same
        bytes as every other stream of its format (``take``, ``EventFrames``): not when it
        coalesces or tells its text, which need the stream's own state at write time."""
        return self.coalescer is None and self.fmt != "text"

    @property
    def admission(self) -> tuple[Selection, frozenset[str]]:
        """What ``admits`` depends on besides the event: streams with equal values admit the
        same events, so the hub asks one of them per publication (Hub.subscribe's key)."""
        return (self.selection, self.types)

    def take(self, items: list[Published]) -> list[Published]:
        """Of these published items (in seq order), those this stream tells, in order: each
        newer than the last it told (its first frames may already cover some), and relevant
        to it.  The list itself when that is all of them, so that streams of one selection
        share one list, and its bytes (EventFrames)."""
        if not self.scoped and items and items[0].seq > self.last_seq:
            self.last_seq = items[-1].seq
            return items
        fresh = [item for item in items if item.seq > self.last_seq and self._relevant(item)]
        if fresh:
            self.last_seq = fresh[-1].seq
        return fresh

    def process(self, items: list[Published], now: float) -> list[bytes]:
        fresh = self.take(items)
        if self.coalescer is None:
            return self.frame_items(fresh)
        for item in fresh:
            self.coalescer.add(item)
        return self.frame_items(self.coalescer.take(now))
