"""Change events of SPEC §5 and the diff that produces them.

Pure.  ``diff`` compares two pane-id -> Location maps of one server and yields exactly the
``pane.added`` / ``pane.changed`` / ``pane.removed`` events, and nothing when nothing changed.
Events come out with an empty id and zero time; the hub stamps them when it publishes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, get_args

import msgspec

from tmuxlocd.core.activity import Activity
from tmuxlocd.core.agent_view import AgentInfo
from tmuxlocd.core.location import Location, ServerRef, changed_fields, sort_pane_ids


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    id: str = ""
    time: float = 0.0


class SnapshotEvent(_Event, frozen=True, kw_only=True, tag="snapshot"):
    panes: tuple[Location, ...] = ()


class PaneAdded(_Event, frozen=True, kw_only=True, tag="pane.added"):
    location: Location


class PaneChanged(_Event, frozen=True, kw_only=True, tag="pane.changed"):
    location: Location
    changed: tuple[str, ...]


class PaneRemoved(_Event, frozen=True, kw_only=True, tag="pane.removed"):
    pane: str
    server: str
    last: Location


class PaneActivity(_Event, frozen=True, kw_only=True, tag="pane.activity"):
    """A watched pane turned busy or idle, changed command, or died (spec "Pane activity").
    Only streams that ask for it with ``types=`` get it."""

    location: Location  # with the pane's activity filled in (``after``)
    before: Activity
    after: Activity
    changed: tuple[str, ...]


class AgentStateChanged(_Event, frozen=True, kw_only=True, tag="agent.state"):
    """An agent started, changed state or is gone (SPEC §13); ``before`` is its last
    state (null: it is new).  Only streams that ask for it with ``types=`` get it."""

    agent: AgentInfo
    before: str | None = None


class ServerUp(_Event, frozen=True, kw_only=True, tag="server.up"):
    server: ServerRef


class ServerDown(_Event, frozen=True, kw_only=True, tag="server.down"):
    server: ServerRef


class Reset(_Event, frozen=True, kw_only=True, tag="reset"):
    pass


class Lagged(_Event, frozen=True, kw_only=True, tag="lagged"):
    pass


ChangeEvent = (
    PaneAdded | PaneChanged | PaneRemoved | ServerUp | ServerDown | PaneActivity | AgentStateChanged
)
Event = SnapshotEvent | ChangeEvent | Reset | Lagged

# Types a client may name in ?types= (change events only; SPEC §5).
ChangeType = Literal["pane.added", "pane.changed", "pane.removed", "server.up", "server.down"]
CHANGE_TYPES: frozenset[str] = frozenset(get_args(ChangeType))
# Types a stream gets only when it names them (a stream without ``types=`` is told of
# locations only, as before activity existed).
ActivityType = Literal["pane.activity", "agent.state"]
ACTIVITY_TYPES: frozenset[str] = frozenset(("pane.activity",))
AGENT_TYPES: frozenset[str] = frozenset(("agent.state",))
STREAM_TYPES: frozenset[str] = CHANGE_TYPES | frozenset(get_args(ActivityType))

# Every tag an event of /v1/events may carry (a newer daemon may send others).
EVENT_TYPES: frozenset[str] = frozenset(t.__struct_config__.tag for t in get_args(Event))
# The formats of /v1/events a program reads (``text`` is for people: tmuxlocd.core.streams).
EventFormat = Literal["ndjson", "sse"]

HEARTBEAT_JSON = b'{"type":"heartbeat"}'

encoder = msgspec.json.Encoder()
event_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)


def event_type(event: Event) -> str:
    return event.__struct_config__.tag  # type: ignore[return-value]


def diff(
    old: Mapping[str, Location],
    new: Mapping[str, Location],
    candidates: Iterable[str] | None = None,
) -> list[ChangeEvent]:
    """Events that turn ``old`` into ``new`` (both pane id -> Location, one server).

    ``candidates`` limits the comparison to those pane ids (the panes of the windows that
    were recomputed); ``None`` compares everything.  Order: removals, then changes and
    additions, each by pane number, so replaying them is deterministic.
    """
    ids = set(old) | set(new) if candidates is None else set(candidates)
    removed: list[ChangeEvent] = []
    rest: list[ChangeEvent] = []
    shared: dict[tuple[int, int], list[str]] = {}
    for pane_id in sort_pane_ids(ids):
        a = old.get(pane_id)
        b = new.get(pane_id)
        if a is None and b is None:
            continue
        if b is None:
            assert a is not None
            removed.append(PaneRemoved(pane=pane_id, server=a.server.socket_path, last=a))
        elif a is None:
            rest.append(PaneAdded(location=b))
        elif a is not b:
            # changed_fields says whether anything differs, at a fraction of a deep compare
            # of the two Locations first (their parts are compared by identity, and a
            # window's parts once for all its panes).
            changed = changed_fields(a, b, shared)
            if changed:
                rest.append(PaneChanged(location=b, changed=tuple(changed)))
    return removed + rest


def apply(state: dict[str, Location], event: Event) -> None:
    """Replay one event onto a pane-key -> Location map (a subscriber's view; tests use it).

    Keys are ``socket_path + " " + pane id`` so that several servers can share one map.
    """
    match event:
        case SnapshotEvent(panes=panes):
            state.clear()
            for loc in panes:
                state[pane_key(loc.server.socket_path, loc.pane.id)] = loc
        case PaneAdded(location=loc) | PaneChanged(location=loc):
            state[pane_key(loc.server.socket_path, loc.pane.id)] = loc
        case PaneRemoved(pane=pane, server=server):
            state.pop(pane_key(server, pane), None)
        case _:
            pass


def pane_key(socket_path: str, pane_id: str) -> str:
    return f"{socket_path} {pane_id}"


def location_of(event: Event) -> Location | None:
    """The Location an event is about (the last one, for a removal)."""
    match event:
        case PaneAdded(location=loc) | PaneChanged(location=loc):
            return loc
        case PaneRemoved(last=loc):
            return loc
        case _:
            return None
