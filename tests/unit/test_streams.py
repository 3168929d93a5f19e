"""Stream decisions without aiohttp: admission, membership of scoped selections, coalescing at
interval edges, text frames, shared snapshot frames.  The hub is the real one (in memory),
fed states built from replies captured from real tmux (tests/data/mirror)."""

from __future__ import annotations

import json

import msgspec

from tests.unit.test_queries import captured
from tmuxlocd.core.events import CHANGE_TYPES
from tmuxlocd.core.model import ServerState
from tmuxlocd.core.queries import Selection
from tmuxlocd.core.streams import SnapshotFrames, StreamCore
from tmuxlocd.daemon.hub import Hub


def core(
    hub: Hub,
    selection: Selection,
    fmt: str = "ndjson",
    interval: float | None = None,
    frames: SnapshotFrames | None = None,
) -> StreamCore:
    return StreamCore(
        hub,
        frames or SnapshotFrames(),
        selection,
        CHANGE_TYPES,
        fmt,  # type: ignore[arg-type]
        interval=interval,
        turn=None,
        with_neighbors=True,
    )


def resized(state: ServerState, pane: str, width: int) -> ServerState:
    panes = dict(state.panes)
    panes[pane] = msgspec.structs.replace(panes[pane], width=width)
    return msgspec.structs.replace(state, panes=panes, by_window=None)  # grouped anew


def events_of(frames: list[bytes]) -> list[dict[str, object]]:
    return [json.loads(line) for frame in frames for line in frame.splitlines() if line]


def test_a_stream_admits_only_its_selection() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    window = core(hub, Selection(server=state.socket_path, window="@1"))
    window.snapshot()
    published = hub.update(resized(state, "%2", 100)) + hub.update(
        resized(resized(state, "%2", 100), "%3", 90)
    )
    admitted = [item for item in published if window.admits(item.event)]
    assert [item.event.location.pane.id for item in admitted] == ["%2"]  # type: ignore[union-attr]
    out = events_of(window.process(admitted, now=0.0))
    assert [e["type"] for e in out] == ["pane.changed"]


def test_a_pane_leaving_a_session_is_told_once() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    # session $1 ("other") holds @2 and, linked, @0
    other = core(hub, Selection(server=state.socket_path, session="$1"))
    snap = other.snapshot()
    assert {loc.pane.id for loc in snap.event.panes} == {"%0", "%1", "%3"}
    # @0 unlinked from $1: its panes leave the session
    links = tuple(w for w in state.winlinks if not (w.session_id == "$1" and w.window_id == "@0"))
    left = msgspec.structs.replace(state, winlinks=links)
    items = [i for i in hub.update(left) if other.admits(i.event)]
    told = events_of(other.process(items, now=0.0))
    assert sorted(e["location"]["pane"]["id"] for e in told) == ["%0", "%1"]  # type: ignore[index]
    # a later change of a pane that left is not its business any more
    items = [i for i in hub.update(resized(left, "%0", 70)) if other.admits(i.event)]
    assert other.process(items, now=0.0) == []


def test_coalescing_keeps_the_trailing_edge_and_drops_a_change_undone() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    stream = core(hub, Selection(), interval=1.0)
    stream.snapshot()
    first = hub.update(resized(state, "%2", 100))
    # the first change of an interval goes at once
    assert len(events_of(stream.process(first, now=10.0))) == 1
    second = hub.update(resized(state, "%2", 120))
    third = hub.update(resized(state, "%2", 100))  # and back, within the interval
    assert stream.process(second + third, now=10.5) == []
    assert stream.coalescer is not None and stream.coalescer.holding
    # at the interval's end: %2 is where it was told last, so nothing is sent
    assert stream.process([], now=11.0) == []
    fourth = hub.update(resized(state, "%2", 90))
    fifth = hub.update(resized(state, "%2", 80))
    assert len(events_of(stream.process(fourth, now=12.5))) == 1
    assert stream.process(fifth, now=12.6) == []
    (last,) = events_of(stream.process([], now=13.6))  # the trailing edge: the latest state
    assert last["location"]["pane"]["width"] == 80  # type: ignore[index]
    assert "pane.width" in last["changed"]  # type: ignore[operator]


def test_a_text_stream_frames_only_changes_of_its_text() -> None:
    hub = Hub()
    state = captured()
    hub.update(state)
    text = core(hub, Selection(server=state.socket_path, pane="%2"), fmt="text")
    frame = text.frame_snapshot(text.snapshot())
    assert frame.startswith(b"id: ") and b"data: tmux location:" in frame
    # %2's text does not name its width: a resize is no new text
    items = [i for i in hub.update(resized(state, "%2", 100)) if text.admits(i.event)]
    assert items and text.process(items, now=0.0) == []


def test_equal_snapshots_are_framed_once() -> None:
    hub = Hub()
    hub.update(captured())
    frames = SnapshotFrames()
    a, b = core(hub, Selection(), frames=frames), core(hub, Selection(), frames=frames)
    first, second = a.frame_snapshot(a.snapshot()), b.frame_snapshot(b.snapshot())
    assert first is second  # one buffer for both
    hub.update(resized(captured(), "%2", 100))
    assert b.frame_snapshot(b.snapshot()) is not first
