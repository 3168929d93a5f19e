"""Fan-out decisions: which streams share an admission, a list of items and its bytes, and
when a stream's sink takes a publication or leaves it to the queue.  The hub is the real one
(in memory), fed states built from replies captured from real tmux (tests/data/mirror)."""

from __future__ import annotations

import json
from collections.abc import Callable

from tests.unit.test_queries import captured
from tests.unit.test_streams import core, resized
from tmuxlocd.core.events import SnapshotEvent, pane_key
from tmuxlocd.core.location import Location
from tmuxlocd.core.queries import Selection
from tmuxlocd.core.streams import EventFrames, http_chunk
from tmuxlocd.daemon.hub import Hub, Published


def dechunk(data: bytes) -> bytes:
    size, _, rest = data.partition(b"\r\n")
    assert rest.endswith(b"\r\n") and len(rest) == int(size, 16) + 2
    return rest[:-2]


def test_a_run_of_events_is_one_chunk_encoded_once_per_format() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    items = hub.update(resized(resized(state, "%2", 100), "%3", 90))
    assert len(items) >= 2
    frames = EventFrames()
    nd = frames.chunk(items, "ndjson")
    assert frames.chunk(items, "ndjson") is nd  # the same list: the same bytes object
    assert frames.chunk(list(items), "ndjson") is nd  # an equal run: the same bytes too
    lines = dechunk(nd).split(b"\n")
    assert lines[-1] == b"" and [json.loads(x)["id"] for x in lines[:-1]] == [
        i.event.id for i in items
    ]
    sse = dechunk(frames.chunk(items, "sse"))
    assert frames.chunk(items, "ndjson") is nd  # the last answer was another format's
    assert sse.startswith(f"id: {items[0].event.id}\nevent: pane.changed\ndata: ".encode())
    # a part of the run is its own chunk, not a slice of another's
    assert dechunk(frames.chunk(items[1:], "ndjson")) == items[1].json + b"\n" + b"".join(
        i.json + b"\n" for i in items[2:]
    )
    # a newer publication: the older bytes are let go
    later = hub.update(state)
    frames.chunk(later, "ndjson")
    assert frames.chunk(items, "ndjson") is not nd


def test_http_chunk() -> None:
    assert http_chunk(b"x" * 26) == b"1a\r\n" + b"x" * 26 + b"\r\n"


def test_take_shares_the_list_and_never_repeats_an_event() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    everything = core(hub, Selection())
    everything.last_seq = everything.snapshot().seq
    items = hub.update(resized(state, "%2", 100))
    assert everything.take(items) is items
    assert everything.take(items) == []  # already told
    more = hub.update(resized(state, "%2", 110))
    assert everything.take(items + more) == more  # the part it has not told, in order
    # a session selection decides pane by pane: its own list
    other = core(hub, Selection(server=state.socket_path, session="$1"))
    other.last_seq = other.snapshot().seq
    change = hub.update(resized(resized(state, "%2", 120), "%0", 70))
    mine = [i for i in change if other.admits(i.event)]
    assert [i.event.location.pane.id for i in other.take(mine)] == ["%0"]  # type: ignore[union-attr]


def test_only_scoped_streams_keep_members() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    everything = core(hub, Selection())
    everything.snapshot()
    assert everything.members == {}
    session = core(hub, Selection(server=state.socket_path, session="$1"))
    session.snapshot()
    assert set(session.members) == {pane_key(state.socket_path, p) for p in ("%0", "%1", "%3")}


def test_subscribers_of_one_key_are_admitted_once_and_share_the_list() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    calls = 0

    def admits(_event: object) -> bool:
        nonlocal calls
        calls += 1
        return True

    got: list[list[Published]] = []

    def sink(items: list[Published]) -> bool:
        got.append(items)
        return True

    with hub.subscribe(admits, key="k") as a, hub.subscribe(admits, key="k") as b:
        a.sink = b.sink = sink
        items = hub.update(resized(state, "%2", 100))
        assert calls == len(items)  # one subscriber decided for both
        assert (
            len(got) == 2 and got[0] is got[1] and [i.seq for i in got[0]] == [i.seq for i in items]
        )
        assert not a.queue and not b.queue


def test_the_first_subscriber_of_a_key_decides_and_leaving_ends_its_say() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    asked: list[str] = []

    def admits(who: str) -> Callable[[object], bool]:
        def admit(_event: object) -> bool:
            asked.append(who)
            return True

        return admit

    got: dict[str, int] = {}

    def sink(who: str) -> Callable[[list[Published]], bool]:
        def write(items: list[Published]) -> bool:
            got[who] = got.get(who, 0) + len(items)
            return True

        return write

    with hub.subscribe(admits("a"), key="k") as a:
        a.sink = sink("a")
        with hub.subscribe(admits("b"), key="k") as b:
            b.sink = sink("b")
            items = hub.update(resized(state, "%2", 100))
            assert set(asked) == {"a"} and got == {"a": len(items), "b": len(items)}
        asked.clear()
        hub.update(resized(state, "%2", 110))
        assert set(asked) == {"a"} and got["b"] == len(items)  # b left: nothing more
    # Everyone of the key left: a newcomer of that key decides for itself.
    asked.clear()
    with hub.subscribe(admits("c"), key="k") as c:
        c.sink = sink("c")
        later = hub.update(resized(state, "%2", 120))
        assert set(asked) == {"c"} and got["c"] == len(later)
    assert not hub.subscribers


def test_a_declining_sink_leaves_this_and_later_publications_to_the_queue() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    answers = [True, False, True]
    written: list[int] = []

    def sink(items: list[Published]) -> bool:
        ok = answers.pop(0)
        if ok:
            written.extend(i.seq for i in items)
        return ok

    with hub.subscribe(lambda e: True, maxsize=100) as sub:
        sub.sink = sink
        first = hub.update(resized(state, "%2", 100))
        second = hub.update(resized(state, "%2", 110))
        third = hub.update(resized(state, "%2", 120))
        assert written == [i.seq for i in first]
        # declined: the sink is dropped, so nothing may overtake what is queued
        dropped = sub.sink is None  # (a plain bool: mypy narrowed the attribute above)
        assert dropped and answers == [True]
        assert [i.seq for i in sub.drain()] == [i.seq for i in second + third]
        # the queue's bound still holds without a sink: lagged, nothing kept
    with hub.subscribe(lambda e: True, maxsize=1) as sub:
        hub.update(resized(state, "%2", 130))
        hub.update(resized(state, "%2", 140))
        assert sub.lagged and not sub.queue


def test_a_closed_subscriber_has_no_sink() -> None:
    hub = Hub()
    hub.update(captured())
    with hub.subscribe(lambda e: True) as sub:
        sub.sink = lambda items: True
    assert sub.closed and sub.sink is None


def test_streams_of_one_selection_share_a_snapshot_frame_without_building_it() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    first = core(hub, Selection())
    seq, frame = first.snapshot_frame()
    assert seq == hub.seq and json.loads(frame)["type"] == "snapshot"
    built: list[object] = []
    real = hub.snapshot

    def counted(predicate: Callable[[Location], bool] | None = None) -> SnapshotEvent:
        built.append(predicate)
        return real(predicate)

    hub.snapshot = counted  # type: ignore[method-assign]
    second = core(hub, Selection(), frames=first.frames)
    assert second.snapshot_frame() == (seq, frame) and second.snapshot_frame()[1] is frame
    assert built == []  # taken, not built again
    # A scoped stream keeps its members: it builds its own (and shares the bytes).
    window = next(iter(state.windows))
    scoped = core(hub, Selection(window=window), frames=first.frames)
    scoped.snapshot_frame()
    assert len(built) == 1 and scoped.members
    # Once something is published, the frame is of the new seq.
    hub.update(resized(state, "%2", 100))
    assert second.snapshot_frame()[0] == hub.seq != seq
