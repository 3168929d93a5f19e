"""The event journal: ids, the ring of recent events, and the resume decision (spec §5).

Pure (no clock, no I/O: the time and the instance name are given).  Events are stamped
``<instance>:<seq>`` in order and encoded once; the ring keeps the last ``ring_size`` of them
for resuming, as their bytes alone (an event's objects are rebuilt only for a stream that
resumes: at 1,000 panes a Location's objects are most of an event's 2.5 KB, and 16,384 of
them were 40 MB of the daemon).  ``resume`` decides what a subscriber that names a last
event id gets: the events after it (an exact resume), or nothing but a ``reset`` and a
fresh snapshot (an id of another instance, a future one, or one that left the ring).
"""

from __future__ import annotations

from collections import deque

import msgspec

from tmuxlocd.core.events import (
    AgentStateChanged,
    ChangeEvent,
    Event,
    Lagged,
    PaneActivity,
    Reset,
    encoder,
    event_decoder,
)

RING_SIZE = 16_384  # the spec asks for at least 10,000 events of history
# pane.activity (and agent.state) events are kept in a ring of their own, so that a busy
# pane's many starts and ends never push out the location events a stream without activity
# resumes from.
ACTIVITY_RING_SIZE = 4_096


class Published(msgspec.Struct, frozen=True):
    seq: int
    event: Event
    json: bytes


Kept = tuple[int, bytes]  # a ring entry: the seq and the event's JSON


def unkept(entry: Kept) -> Published:
    seq, json = entry
    return Published(seq, event_decoder.decode(json), json)


class Journal:
    def __init__(self, instance: str, *, ring_size: int = RING_SIZE) -> None:
        self.instance = instance
        self.seq = 0
        self._ring: deque[Kept] = deque(maxlen=ring_size)
        self._activity_ring: deque[Kept] = deque(maxlen=ACTIVITY_RING_SIZE)

    @property
    def ring(self) -> list[Published]:
        """The location events kept, rebuilt (for inspection: a resume reads ``since``)."""
        return [unkept(entry) for entry in self._ring]

    @property
    def activity_ring(self) -> list[Published]:
        return [unkept(entry) for entry in self._activity_ring]

    def event_id(self, seq: int | None = None) -> str:
        return f"{self.instance}:{self.seq if seq is None else seq}"

    def parse_event_id(self, value: str) -> int | None:
        """The seq of an id of this instance from which every later event is still in the
        ring; None otherwise (the subscriber then gets ``reset`` and a snapshot)."""
        instance, sep, number = value.rpartition(":")
        if not sep or instance != self.instance or not (number.isascii() and number.isdigit()):
            return None
        seq = int(number)
        if seq > self.seq:
            return None
        oldest = self._ring[0][0] if self._ring else self.seq + 1
        # Resuming from seq needs every event after it: seq + 1 must still be in the ring.
        if seq + 1 < oldest and seq != self.seq:
            return None
        return seq

    def stamp(self, events: list[ChangeEvent], now: float) -> list[Published]:
        """Give each event the next id and the time, encode it once, keep it in the ring."""
        out: list[Published] = []
        for event in events:
            self.seq += 1
            stamped = msgspec.structs.replace(event, id=self.event_id(), time=now)
            item = Published(self.seq, stamped, encoder.encode(stamped))
            opt_in = isinstance(stamped, PaneActivity | AgentStateChanged)
            ring = self._activity_ring if opt_in else self._ring
            ring.append((item.seq, item.json))
            out.append(item)
        return out

    def since(self, seq: int) -> list[Published]:
        later = _after(self._ring, seq)
        if not self._activity_ring or self._activity_ring[-1][0] <= seq:
            return [unkept(entry) for entry in later]
        both = sorted(later + _after(self._activity_ring, seq))
        return [unkept(entry) for entry in both]

    def marker(self, kind: str, now: float) -> Reset | Lagged:
        """``reset`` or ``lagged``: carries the id of the last event published before it, so
        that resuming from the snapshot that follows replays exactly the later changes."""
        cls = Reset if kind == "reset" else Lagged
        return cls(id=self.event_id(), time=now)


def _after(ring: deque[Kept], seq: int) -> list[Kept]:
    """The entries of ``ring`` (in seq order) after ``seq``, read from the newest end: a
    resume usually asks for the last few."""
    later: list[Kept] = []
    for entry in reversed(ring):
        if entry[0] <= seq:
            break
        later.append(entry)
    later.reverse()
    return later
