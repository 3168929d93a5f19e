"""Floating panes (tmux 3.7+): layouts captured from real 3.7c and next-3.8
(``tests/tools/capture_floating.py``), and properties of random tiled layouts given floating
panes the way tmux writes them (cells in the tree that do not tile, a ``<...>`` section)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.unit.test_neighbors import layout_trees
from tmuxlocd.core.errors import LayoutError
from tmuxlocd.core.layout import (
    LayoutCell,
    format_layout,
    layout_checksum,
    leaf_boxes,
    neighbors_of_layout,
    pane_rects,
    parse_window_layout,
    tiled_boxes,
)
from tmuxlocd.core.location import (
    Location,
    ServerRef,
    layout_facts,
    pane_neighbors,
    text_form,
    window_locations,
)
from tmuxlocd.core.model import Pane, Session, Window, Winlink

CAPTURED = json.loads((Path(__file__).resolve().parents[1] / "data" / "floating.json").read_text())
SNAPSHOTS = [(version, snap) for version, snaps in sorted(CAPTURED.items()) for snap in snaps]


def snapshot_id(item: tuple[str, dict[str, Any]]) -> str:
    return f"{item[0]}-{item[1]['label'].replace(' ', '-')}"


# ----------------------------------------------------------------------------------------------
# Captured from real tmux.


def test_the_captures_cover_both_versions_and_every_case() -> None:
    assert set(CAPTURED) == {"3.7c", "next-3.8"}
    layouts = [snap["window_layout"] for _, snap in SNAPSHOTS]
    assert any("<" in text and ",-" in text for text in layouts)  # negative offsets
    assert any(text.count(",", text.index("<")) >= 3 for text in layouts if "<" in text)
    assert any(snap["zoomed"] for _, snap in SNAPSHOTS)
    assert any("[" in text.split("<")[0].split("{", 1)[-1] for text in layouts)  # nested


@pytest.mark.parametrize("item", SNAPSHOTS, ids=snapshot_id)
def test_tiled_and_floating_panes_are_tmuxs(item: tuple[str, dict[str, Any]]) -> None:
    """Which panes float is what tmux's ``pane_floating_flag`` says (before a zoom, for a
    zoomed window); where each is, what ``list-panes`` says."""
    _, snap = item
    tiled, floating = tiled_boxes(snap["window_layout"])
    want_floating = {p["id"] for p in snap["panes"] if p["floating"]}
    assert {f"%{b[0]}" for b in floating} == want_floating
    assert {f"%{b[0]}" for b in tiled} == {p["id"] for p in snap["panes"]} - want_floating
    if not snap["zoomed"]:  # a zoomed window's panes are not where its full layout has them
        where = {p["id"]: (p["left"], p["top"], p["width"], p["height"]) for p in snap["panes"]}
        for pane, left, top, right, bottom in [*tiled, *floating]:
            assert where[f"%{pane}"] == (left, top, right - left, bottom - top)
    parsed = parse_window_layout(snap["window_layout"])
    assert {c.pane for c in parsed.floating} == {b[0] for b in floating}
    if "<" in snap["window_layout"]:  # topmost first, as the section lists them
        section = snap["window_layout"].split("<", 1)[1]
        listed = [int(n) for n in re.findall(r"\d+x\d+,-?\d+,-?\d+,(\d+)", section)]
        assert [c.pane for c in parsed.floating[: len(listed)]] == listed


@pytest.mark.parametrize("item", SNAPSHOTS, ids=snapshot_id)
def test_floating_panes_change_no_tiled_neighbours(item: tuple[str, dict[str, Any]]) -> None:
    """The tiled panes' neighbours are those of the same tiled boxes alone; a floating pane
    has none, and ``covers`` the tiled panes it lies over."""
    _, snap = item
    layout = snap["window_layout"]
    tiled, floating = tiled_boxes(layout)
    facts = layout_facts(layout)
    assert facts is not None
    assert set(facts.neighbors) == {f"%{b[0]}" for b in tiled}
    for box in floating:
        assert f"%{box[0]}" not in facts.neighbors
        covers = facts.floating[f"%{box[0]}"]
        for pane in covers:
            other = next(b for b in tiled if f"%{b[0]}" == pane)
            assert box[1] < other[3] and other[1] < box[3] and box[2] < other[4]
    tables = neighbors_of_layout(layout)
    assert set(tables) == {b[0] for b in tiled}
    for pane, neighbours in facts.neighbors.items():
        for direction in ("above", "below", "left", "right"):
            assert getattr(neighbours, direction) == tuple(
                f"%{n.pane}" for n in tables[int(pane[1:])][direction]
            )


def test_the_tiled_part_of_the_captures_tiles() -> None:
    for _, snap in SNAPSHOTS:
        tiled = parse_window_layout(snap["window_layout"]).tiled
        assert tiled is not None  # every capture keeps at least one tiled pane
        rects = pane_rects(tiled)
        area = sum((r.width + 1) * (r.height + 1) for r in rects.values())
        assert area == (tiled.width + 1) * (tiled.height + 1)


# ----------------------------------------------------------------------------------------------
# Hand-made cases tmux also writes (see capture_floating.py's notes).


@pytest.mark.parametrize(
    ("layout", "tiled", "floating"),
    [
        # every pane floats: the root is a floating leaf, or a split of floating leaves
        ("87e6,28x6,41,11,0<28x6,41,11,0>", [], [0]),
        ("2b23,80x24,0,0[40x6,4,2,1,40x6,8,4,2]<40x6,8,4,2,40x6,4,2,1>", [], [2, 1]),
        # a single tiled pane and a floating one: tmux makes a split root for the two
        ("7bff,80x24,0,0[80x24,0,0,0,40x6,4,2,1]<40x6,4,2,1>", [0], [1]),
        # next-3.8 after killing the topmost floating pane: the section is gone, the cell not
        ("31b1,80x24,0,0[80x24,0,0,0,40x6,3,3,1]", [0], [1]),
        # next-3.8 after rotate-window: one floating pane missing from the section
        (
            "7807,80x24,0,0[80x11,0,0,1,80x12,0,12,2,40x6,4,2,3,40x6,8,4,0]<40x6,4,2,3>",
            [1, 2],
            [3, 0],
        ),
    ],
)
def test_layouts_tmux_writes_in_corners(layout: str, tiled: list[int], floating: list[int]) -> None:
    got_tiled, got_floating = tiled_boxes(layout)
    assert [b[0] for b in got_tiled] == tiled
    assert [b[0] for b in got_floating] == floating
    if not tiled:
        assert pane_neighbors(layout) == {}
        assert layout_facts(layout) is not None  # read, not "a layout it cannot read"


@pytest.mark.parametrize(
    "layout",
    [
        "64c7,80x24,0,0{40x24,0,0,0,39x24,41,0,1,40x6,4,2,2}<40x6,4,2,2",  # no '>'
        "0000,80x24,0,0{40x24,0,0,0,39x24,41,0,1,40x6,4,2,2}<40x6,4,2,2>",  # checksum
        "x,80x24,0,0,0<>",
        "{:04x},80x24,0,0,0<>",
        "{:04x},80x24,0,0,0<40x6,4,2>",
        "{:04x},80x24,0,0,0<40x6,4,2,1,,>",
        "{:04x},80x24,0,0,0<40x6,4,2,1,40x6,4,2,1>",  # twice
        "{:04x},80x24,0,0,0<40x6,--4,2,1>",
        "{:04x},80x24,-0,0,0<40x6,4,2,1>",
        "{:04x},80x24,0,0{{40x24,0,0,0,38x24,41,0,1}}<40x6,4,2,2>",  # tiled part does not tile
    ],
)
def test_what_is_not_a_floating_layout_is_refused(layout: str) -> None:
    if layout.startswith("{:04x}"):
        body = layout[7:]
        layout = f"{layout_checksum(body):04x},{body}"
    with pytest.raises(LayoutError):
        parse_window_layout(layout)
    with pytest.raises(LayoutError):
        tiled_boxes(layout)
    assert layout_facts(layout) is None


# ----------------------------------------------------------------------------------------------
# Properties: any tiled layout, given floating panes the way tmux writes them.

FLOAT_GEOMETRY = st.tuples(
    st.integers(1, 60), st.integers(1, 30), st.integers(-80, 160), st.integers(-40, 80)
)


def _head(cell: LayoutCell) -> str:
    return f"{cell.width}x{cell.height},{cell.left},{cell.top},{cell.pane}"


def with_floating(tree: LayoutCell, floats: list[LayoutCell], nested: bool) -> str:
    """``tree`` with ``floats`` written as tmux does: each float's cell also inside the tree
    (3.7: in the root split; next-3.8 with ``nested``: in the split of the first leaf), and
    the section after it, topmost (last made) first."""
    if tree.pane is not None:
        tree = LayoutCell(tree.width, tree.height, tree.left, tree.top, "tb", None, (tree,))
    if nested:
        path: list[LayoutCell] = [tree]
        while path[-1].children[0].pane is None:
            path.append(path[-1].children[0])
        host = path[-1]
        grown = LayoutCell(
            host.width,
            host.height,
            host.left,
            host.top,
            host.kind,
            None,
            (host.children[0], *floats, *host.children[1:]),
        )
        for parent in reversed(path[:-1]):
            grown = LayoutCell(
                parent.width,
                parent.height,
                parent.left,
                parent.top,
                parent.kind,
                None,
                (grown, *parent.children[1:]),
            )
        tree = grown
    else:
        tree = LayoutCell(
            tree.width, tree.height, tree.left, tree.top, tree.kind, None, (*tree.children, *floats)
        )
    body = format_layout(tree)[5:] + "<" + ",".join(_head(f) for f in reversed(floats)) + ">"
    return f"{layout_checksum(body):04x},{body}"


@settings(max_examples=150, deadline=None)
@given(layout_trees(), st.lists(FLOAT_GEOMETRY, min_size=1, max_size=4), st.booleans())
def test_floating_panes_never_change_the_tiled_panes(
    tree: LayoutCell, geometry: list[tuple[int, int, int, int]], nested: bool
) -> None:
    text = format_layout(tree)
    first = max(pane_rects(tree)) + 1
    floats = [LayoutCell(w, h, x, y, "pane", first + i) for i, (w, h, x, y) in enumerate(geometry)]
    layout = with_floating(tree, floats, nested)
    tiled, floating = tiled_boxes(layout)
    assert tiled == leaf_boxes(text)  # the same tiled panes, in the same order
    assert [b[0] for b in floating] == [f.pane for f in reversed(floats)]
    assert pane_neighbors(layout) == pane_neighbors(text)
    assert neighbors_of_layout(layout) == neighbors_of_layout(text)
    parsed = parse_window_layout(layout)
    assert parsed.tiled is not None and pane_rects(parsed.tiled) == pane_rects(tree)


@settings(max_examples=100, deadline=None)
@given(layout_trees())
def test_a_tiled_layout_takes_the_fast_path_unchanged(tree: LayoutCell) -> None:
    text = format_layout(tree)
    assert tiled_boxes(text) == (leaf_boxes(text), [])
    parsed = parse_window_layout(text)
    assert parsed.tiled == tree and parsed.floating == ()


# ----------------------------------------------------------------------------------------------
# Locations and the text form.


def _locations(layout: str, panes: list[tuple[str, int, int, int, int]]) -> dict[str, Location]:
    window = Window(id="@1", name="w", layout=layout, zoomed=False, active_pane="%0")
    rows = tuple(
        Pane(
            id=pid,
            window_id="@1",
            index=n,
            active=pid == "%0",
            tty=f"/dev/pts/{n}",
            pid=100 + n,
            left=left,
            top=top,
            width=w,
            height=h,
        )
        for n, (pid, left, top, w, h) in enumerate(panes)
    )
    return window_locations(
        ServerRef(socket_path="/tmp/tmux-0/x", pid=1),
        window,
        [Winlink(session_id="$0", window_id="@1", index=0, active=True)],
        {"$0": Session(id="$0", name="s", attached=0)},
        rows,
    )


def test_a_floating_panes_location_and_text_form() -> None:
    layout = (
        "7809,80x24,0,0{40x24,0,0,0,39x24,41,0,1,40x6,4,2,2,40x6,8,4,3,20x5,-5,-3,4}"
        "<20x5,-5,-3,4,40x6,8,4,3,40x6,4,2,2>"
    )
    panes = [
        ("%0", 0, 0, 40, 24),
        ("%1", 41, 0, 39, 24),
        ("%2", 4, 2, 40, 6),
        ("%3", 8, 4, 40, 6),
        ("%4", -5, -3, 20, 5),
    ]
    locs = _locations(layout, panes)
    assert locs["%0"].neighbors.right == ("%1",)
    assert not locs["%0"].pane.floating and locs["%0"].pane.covers == ()
    assert locs["%2"].pane.floating and locs["%2"].pane.covers == ("%0", "%1")
    assert locs["%4"].pane.covers == ("%0",)
    assert locs["%4"].pane.left == -5  # tmux's pane_left, negative
    for pane in ("%2", "%3", "%4"):
        n = locs[pane].neighbors
        assert n.above == n.below == n.left == n.right == ()
    text = text_form(locs["%2"], with_neighbors=True)
    assert text.splitlines()[1].endswith("pane 2 %2 (floating)")
    assert text.splitlines()[3] == "neighbors: floating, covers %0,%1"
    tiled = text_form(locs["%1"], with_neighbors=True)
    assert "(floating)" not in tiled
    assert tiled.splitlines()[3] == "neighbors: above none; below none; left %0; right none"
    # The JSON of a tiled pane is what it was before floating panes: no new keys.
    assert b"floating" not in msgspec.json.encode(locs["%1"])
    assert b'"floating":true' in msgspec.json.encode(locs["%2"])
