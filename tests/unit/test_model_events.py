"""Rows -> model -> Locations -> diff/text form, on rows captured from tmux 3.3a.

The rows below were produced by the row formats of tmuxlocd.core.model on a private tmux 3.3a
server (a 160x48 session "work" with a window split left/right, a second window, and a
window linked into a second session).
"""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmuxlocd.core.errors import RowError
from tmuxlocd.core.events import (
    PaneAdded,
    PaneChanged,
    PaneRemoved,
    SnapshotEvent,
    apply,
    diff,
    encoder,
    pane_key,
)
from tmuxlocd.core.location import (
    LocationBuilder,
    Neighbors,
    build_locations,
    changed_fields,
    text_form,
)
from tmuxlocd.core.model import (
    PANE_FORMAT,
    SESSION_FORMAT,
    WINDOW_FORMAT,
    ServerState,
    Session,
    compare_digest,
    group_panes,
    parse_pane_row,
    parse_window_query,
    state_from_rows,
)
from tmuxlocd.daemon.hub import Hub

SESSIONS = ["S\t$0\t1\twork", "S\t$1\t0\tother"]
WINDOWS = [
    "W\t$0\t@0\t1\t1\t0\t%0\tcc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}\teditor",
    "W\t$0\t@1\t2\t0\t0\t%2\tafbf,158x40,0,0,2\tlogs",
    "W\t$1\t@2\t0\t1\t0\t%3\tafc0,158x40,0,0,3\tshell",
    "W\t$1\t@0\t5\t0\t0\t%0\tcc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}\teditor",
]
PANES = [
    "P\t@0\t%0\t0\t1\t/dev/pts/5\t1234\t0\t0\t79\t40\t0",
    "P\t@0\t%1\t1\t0\t/dev/pts/6\t1240\t80\t0\t78\t40\t0",
    "P\t@1\t%2\t0\t1\t/dev/pts/7\t1250\t0\t0\t158\t40\t0",
    "P\t@2\t%3\t0\t1\t/dev/pts/8\t1260\t0\t0\t158\t40\t0",
]
SOCK = "/tmp/tmux-1000/default"


def state(**changes: object) -> ServerState:
    base = state_from_rows(SOCK, 4242, SESSIONS, WINDOWS, PANES)
    return msgspec.structs.replace(base, **changes)


def test_formats_have_tag_and_tabs() -> None:
    for fmt, tag in ((SESSION_FORMAT, "S"), (WINDOW_FORMAT, "W"), (PANE_FORMAT, "P")):
        assert fmt.split("\t")[0] == tag
        # the name (free-ish text) is always the last field
        assert "\n" not in fmt


def test_location_of_split_window_matches_spec_example() -> None:
    locs = build_locations(state())
    loc = locs["%0"]
    assert encoder.encode(loc) == (
        b'{"server":{"socket_path":"/tmp/tmux-1000/default","pid":4242},'
        b'"session":{"id":"$0","name":"work"},'
        b'"window":{"id":"@0","index":1,"name":"editor","active":true,"zoomed":false,'
        b'"layout":"cc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}"},'
        b'"pane":{"id":"%0","index":0,"active":true,"tty":"/dev/pts/5","pid":1234,'
        b'"left":0,"top":0,"width":79,"height":40},'
        b'"neighbors":{"above":[],"below":[],"left":[],"right":["%1"]},'
        b'"links":[{"session_id":"$1","session_name":"other","window_index":5}]}'
    )
    assert locs["%1"].neighbors.left == ("%0",)


def test_text_form_byte_for_byte() -> None:
    loc = build_locations(state())["%0"]
    assert text_form(loc) == (
        "tmux location:\n"
        'session work, window 1 "editor", pane 0 %0\n'
        "window active=1, pane active=1, layout cc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}\n"
    )
    assert text_form(loc, turn=7, with_neighbors=True) == (
        "tmux location (turn 7):\n"
        'session work, window 1 "editor", pane 0 %0\n'
        "window active=1, pane active=1, layout cc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}\n"
        "neighbors: above none; below none; left none; right %1\n"
    )


def test_text_form_escapes_window_name_as_json_keeping_utf8() -> None:
    rows = [WINDOWS[0].replace("\teditor", '\ted\\"it\\\\or \\t日本')]
    st_ = state_from_rows(SOCK, 1, SESSIONS, rows, PANES[:2])
    loc = build_locations(st_)["%0"]
    assert loc.window.name == 'ed\\"it\\or \t日本'
    line = text_form(loc).split("\n")[1]
    assert line == 'session work, window 1 "ed\\\\\\"it\\\\or \\t日本", pane 0 %0'
    assert len(text_form(loc).split("\n")) == 4  # three lines and the final newline


def test_hostile_session_name_keeps_three_lines() -> None:
    sessions = ["S\t$0\t1\tbad\\nname\\033[31m"]
    loc = build_locations(state_from_rows(SOCK, 1, sessions, WINDOWS[:1], PANES[:2]))["%0"]
    assert loc.session.name == "bad\nname\x1b[31m"
    assert text_form(loc).count("\n") == 3


@pytest.mark.parametrize(
    "row",
    [
        "P\t@0\t%0\t0\t1\t/dev/pts/5\t1234\t0\t0\t79\t40",  # a field short
        "X\t@0\t%0\t0\t1\t/dev/pts/5\t1234\t0\t0\t79\t40\t0",  # wrong tag
        "P\t@0\t%x\t0\t1\t/dev/pts/5\t1234\t0\t0\t79\t40\t0",  # bad id
        "P\t@0\t%0\tzero\t1\t/dev/pts/5\t1234\t0\t0\t79\t40\t0",  # bad number
        "",
    ],
)
def test_bad_rows_raise_row_error(row: str) -> None:
    with pytest.raises(RowError):
        parse_pane_row(row)


def test_window_query_rows() -> None:
    rows = [
        "Q\t@0\t%0\t0\t0\t/dev/pts/5\t1234\t0\t0\t79\t40\t0\t1\tcc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}\ted",
        "Q\t@0\t%1\t1\t1\t/dev/pts/6\t1240\t80\t0\t78\t40\t0\t1\tcc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}\ted",
    ]
    window, panes = parse_window_query(rows)
    assert window is not None and window.zoomed and window.active_pane == "%1"
    assert [p.id for p in panes] == ["%0", "%1"]


def test_diff_of_same_is_empty() -> None:
    locs = build_locations(state())
    assert diff(locs, locs) == []
    assert diff(locs, build_locations(state())) == []


def test_diff_kinds() -> None:
    old = build_locations(state())
    renamed = state_from_rows(
        SOCK, 4242, SESSIONS, [w.replace("\teditor", "\tvim") for w in WINDOWS], PANES
    )
    events = diff(old, build_locations(renamed))
    assert [type(e) for e in events] == [PaneChanged, PaneChanged]
    assert all(isinstance(e, PaneChanged) and e.changed == ("window.name",) for e in events)

    no_right = state_from_rows(
        SOCK,
        4242,
        SESSIONS,
        [
            w.replace("cc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}", "afbd,158x40,0,0,0")
            for w in WINDOWS
        ],
        [PANES[0].replace("\t79\t40", "\t158\t40"), *PANES[2:]],
    )
    events = diff(old, build_locations(no_right))
    kinds = {type(e).__name__: e for e in events}
    assert isinstance(kinds["PaneRemoved"], PaneRemoved) and kinds["PaneRemoved"].pane == "%1"
    changed = kinds["PaneChanged"]
    assert isinstance(changed, PaneChanged)
    assert set(changed.changed) == {"window.layout", "pane.width", "neighbors"}

    events = diff(build_locations(no_right), old)
    assert any(isinstance(e, PaneAdded) and e.location.pane.id == "%1" for e in events)


def test_builder_recomputes_only_changed_windows() -> None:
    builder = LocationBuilder()
    old, new = builder.build(state())
    assert old == {} and set(new) == {"%0", "%1", "%2", "%3"}
    first = dict(builder.locations)
    old, new = builder.build(state())
    assert old == {} and new == {} and builder.locations == first
    s = state_from_rows(
        SOCK, 4242, SESSIONS, [w.replace("\tlogs", "\tLOGS") for w in WINDOWS], PANES
    )
    old, new = builder.build(s)
    assert set(old) == set(new) == {"%2"}  # only the renamed window's pane
    assert builder.locations["%2"].window.name == "LOGS"
    assert builder.locations["%0"] is first["%0"]


def test_builder_sees_a_session_renamed_or_a_new_server_with_the_windows_left_alone() -> None:
    """Links and sessions as they were let the builder pass over a window by the identity of
    its row and panes; a renamed session (the mirror's winlinks the same tuple, and even the
    very dict of the last state changed in place) still rebuilds that session's panes."""
    builder = LocationBuilder()
    first = state()
    # The panes grouped once, each window's tuple kept from state to state (the mirror's).
    first = msgspec.structs.replace(first, by_window=group_panes(first.panes))
    builder.build(first)
    renamed = dict(first.sessions)
    renamed["$1"] = Session(id="$1", name="renamed", attached=0)
    second = msgspec.structs.replace(first, sessions=renamed)
    old, new = builder.build(second)
    assert set(new) == {"%0", "%1", "%3"}  # the windows $1 links: @0 (also in $0) and @2
    assert builder.locations["%3"].session.name == "renamed"
    renamed["$1"] = Session(id="$1", name="again", attached=0)
    builder.build(second)
    assert builder.locations["%3"].session.name == "again"
    old, new = builder.build(second)
    assert old == {} and new == {}
    # A window renamed, its panes' tuple the same: that window's pane is rebuilt.
    windows = dict(second.windows)
    windows["@1"] = msgspec.structs.replace(windows["@1"], name="LOGS")
    second = msgspec.structs.replace(second, windows=windows)
    old, new = builder.build(second)
    assert set(new) == {"%2"} and builder.locations["%2"].window.name == "LOGS"
    # A new server process under the same socket: every pane is rebuilt with its pid.
    old, new = builder.build(msgspec.structs.replace(second, pid=4343))
    assert set(new) == {"%0", "%1", "%2", "%3"}
    assert builder.locations["%2"].server.pid == 4343


def test_builder_names_windows_whose_layout_it_cannot_read() -> None:
    builder = LocationBuilder()
    builder.build(state())
    assert builder.unreadable == {}
    odd = [w.replace("afbf,158x40,0,0,2", "not a layout") for w in WINDOWS]
    builder.build(state_from_rows(SOCK, 4242, SESSIONS, odd, PANES))
    assert builder.unreadable == {"@1": "not a layout"}
    assert builder.locations["%2"].neighbors == Neighbors()
    builder.build(state())  # read again once tmux gives a layout
    assert builder.unreadable == {}


def test_home_session_is_lowest_id() -> None:
    loc = build_locations(state())["%0"]
    assert loc.session.id == "$0"
    assert [(link.session_id, link.window_index) for link in loc.links] == [("$1", 5)]


def test_changed_fields_lists_sections() -> None:
    a = build_locations(state())["%0"]
    b = msgspec.structs.replace(a, pane=msgspec.structs.replace(a.pane, tty="/dev/pts/9"))
    assert changed_fields(a, b) == ["pane.tty"]


def test_digest_agrees_with_model_and_names_differences() -> None:
    s = state()
    lay0 = "cc22,158x40,0,0{79x40,0,0,0,78x40,80,0,1}"
    digest = (
        f" S$0 W@0.1.0.{lay0} 1234 1240 W@1.2.0.afbf,158x40,0,0,2 1250"
        f" S$1 W@2.0.0.afc0,158x40,0,0,3 1260 W@0.5.0.{lay0} 1234 1240"
    )
    found = compare_digest(digest, s)
    assert not found.winlinks_differ and not found.windows
    respawned = digest.replace(" 1250", " 9999")
    assert compare_digest(respawned, s).windows == {"@1"}
    swapped = digest.replace("W@1.2.", "W@1.3.")
    assert compare_digest(swapped, s).winlinks_differ
    split = digest.replace(" 1260", " 1260 1270")
    assert compare_digest(split, s).windows == {"@2"}
    assert compare_digest("garbage", s).winlinks_differ
    resized = digest.replace("W@1.2.0.afbf,158x40,0,0,2", "W@1.2.0.afbf,158x39,0,0,2")
    assert compare_digest(resized, s).windows == {"@1"}
    zoomed = digest.replace("W@1.2.0.", "W@1.2.1.")
    assert compare_digest(zoomed, s).windows == {"@1"}


# ----------------------------------------------------------------------------------------------
# Property: replaying diff events onto the old map gives the new map, for random edits.

geometry = st.tuples(
    st.integers(0, 200), st.integers(0, 60), st.integers(1, 200), st.integers(1, 60)
)


@st.composite
def random_state(draw: st.DrawFn) -> ServerState:
    n = draw(st.integers(0, 6))
    panes = []
    for i in range(n):
        left, top, width, height = draw(geometry)
        window = draw(st.sampled_from(["@0", "@1", "@2"]))
        panes.append(
            f"P\t{window}\t%{i}\t{i}\t{int(draw(st.booleans()))}\t/dev/pts/{i}\t{100 + i}"
            f"\t{left}\t{top}\t{width}\t{height}\t0"
        )
    names = draw(
        st.lists(
            st.text(min_size=0, max_size=5).map(
                lambda t: t.replace("\t", " ").replace("\n", " ").replace("\\", "/")
            ),
            min_size=3,
            max_size=3,
        )
    )
    windows = [
        f"W\t$0\t@{i}\t{i}\t{int(i == 0)}\t0\t\tafbd,158x40,0,0,0\t{names[i]}" for i in range(3)
    ]
    return state_from_rows(SOCK, 1, SESSIONS[:1], windows, panes)


@settings(max_examples=200, deadline=None)
@given(random_state(), random_state())
def test_replaying_diff_gives_new_state(a: ServerState, b: ServerState) -> None:
    old, new = build_locations(a), build_locations(b)
    replica: dict[str, object] = {}
    apply(replica, SnapshotEvent(panes=tuple(old.values())))  # type: ignore[arg-type]
    for event in diff(old, new):
        apply(replica, event)  # type: ignore[arg-type]
    assert replica == {pane_key(SOCK, k): v for k, v in new.items()}
    assert diff(new, new) == []


@settings(max_examples=200, deadline=None)
@given(random_state(), random_state(), st.booleans())
def test_a_builder_kept_from_state_to_state_agrees_with_a_fresh_one(
    a: ServerState, b: ServerState, share: bool
) -> None:
    """What a builder keeps between builds (the windows' inputs, each pane's PaneRef while its
    row is the same object, the server's ref) never shows: its Locations are a fresh build's,
    and its diff turns the old ones into the new.  ``share``: ``b`` holds ``a``'s very Pane
    objects where the rows are equal, as the mirror's states do."""
    if share:
        same = {p: p for p in a.panes.values()}
        panes = {pid: same.get(p, p) for pid, p in b.panes.items()}
        b = msgspec.structs.replace(b, panes=panes, by_window=None)
        # And, as the mirror's states do, the very window rows, winlinks tuple and panes'
        # tuples of ``a`` where they are equal (the builder then passes windows over by
        # identity).
        grouped_a = group_panes(a.panes)
        a = msgspec.structs.replace(a, by_window=grouped_a)
        b = msgspec.structs.replace(
            b,
            windows={w: a.windows[w] if a.windows.get(w) == x else x for w, x in b.windows.items()},
            winlinks=a.winlinks if a.winlinks == b.winlinks else b.winlinks,
            by_window={
                w: grouped_a[w] if grouped_a.get(w) == t else t
                for w, t in group_panes(b.panes).items()
            },
        )
    builder = LocationBuilder()
    builder.build(a)
    before = dict(builder.locations)
    old, new = builder.build(b)
    assert builder.locations == build_locations(b)
    replica: dict[str, object] = {}
    apply(replica, SnapshotEvent(panes=tuple(before.values())))  # type: ignore[arg-type]
    for event in diff(old, new):
        apply(replica, event)  # type: ignore[arg-type]
    assert replica == {pane_key(SOCK, k): v for k, v in builder.locations.items()}
    for pane_id, loc in builder.locations.items():
        if pane_id in before and a.panes.get(pane_id) is b.panes[pane_id]:
            assert loc.pane is before[pane_id].pane  # kept, and passed over by identity


# ----------------------------------------------------------------------------------------------
# Hub: ids, ring, resume, lagged subscribers.


def test_hub_ids_resume_and_lag() -> None:
    hub = Hub(ring_size=8)
    assert hub.update(state())  # server.up + 4 added
    first_id = hub.event_id()
    seq = hub.parse_event_id(first_id)
    assert seq == hub.seq
    assert hub.parse_event_id("other:1") is None
    assert hub.parse_event_id(f"{hub.instance}:999") is None
    with hub.subscribe(lambda e: True, maxsize=2) as sub:
        for name in ("a", "b", "c", "d", "e", "f"):
            hub.update(
                state_from_rows(
                    SOCK, 4242, SESSIONS, [w.replace("\tlogs", f"\t{name}") for w in WINDOWS], PANES
                )
            )
        assert sub.lagged and not sub.queue  # dropped, never grown past maxsize
    assert [i.seq for i in hub.since(seq)] == list(range(seq + 1, hub.seq + 1))
    # the ring holds 8: resuming from the first id is now too old
    assert hub.parse_event_id(f"{hub.instance}:1") is None
    ids = [i.event.id for i in hub.ring]
    assert ids == sorted(ids, key=lambda x: int(x.split(":")[1]))


def test_hub_server_down_removes_panes() -> None:
    hub = Hub()
    hub.update(state())
    events = hub.server_down(SOCK)
    kinds = [type(i.event).__name__ for i in events]
    assert kinds.count("PaneRemoved") == 4 and kinds[-1] == "ServerDown"
    assert hub.server_down(SOCK) == []
