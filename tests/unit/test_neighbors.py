"""Pane neighbours: against tmux 3.3a's own direction targets, and as properties of random trees.

tmux resolves ``{up-of}`` (etc.) by collecting the panes across the top border whose columns
touch the pane's (one cell of slack on the right, so corner-only contacts count), wrapping
round to the opposite window edge when the pane is at the top, and picking the most recently
active of them.  The captured ``candidates`` are that whole collection for every pane, so the
tests can demand: our list == tmux's non-wrapped candidates that really share edge cells.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tmuxlocd.core.errors import LayoutError
from tmuxlocd.core.layout import (
    DIRECTIONS,
    Direction,
    LayoutCell,
    Neighbor,
    Rect,
    format_layout,
    layout_checksum,
    leaf_boxes,
    neighbors,
    neighbors_of_layout,
    pane_rects,
    parse_layout,
)
from tmuxlocd.core.location import Neighbors, pane_neighbors

DATA = Path(__file__).resolve().parents[1] / "data" / "layouts"
CAPTURES = {path.stem: json.loads(path.read_text()) for path in sorted(DATA.glob("*.json"))}
WITH_TARGETS = sorted(name for name, cap in CAPTURES.items() if "candidates" in cap)
OPPOSITE: dict[Direction, Direction] = {
    "above": "below",
    "below": "above",
    "left": "right",
    "right": "left",
}


def pane_number(pane_id: str) -> int:
    return int(pane_id.removeprefix("%"))


def tmux_rects(panes: list[dict[str, Any]]) -> dict[int, Rect]:
    return {pane_number(p["id"]): Rect(p["left"], p["top"], p["width"], p["height"]) for p in panes}


def contact(p: Rect, q: Rect, direction: Direction) -> tuple[bool, int]:
    """Is ``q`` one border away from ``p`` on that side, and how many edge cells do they share?"""
    if direction in ("left", "right"):
        adjacent = (
            q.left == p.left + p.width + 1
            if direction == "right"
            else p.left == q.left + q.width + 1
        )
        shared = min(p.top + p.height, q.top + q.height) - max(p.top, q.top)
    else:
        adjacent = (
            q.top == p.top + p.height + 1 if direction == "below" else p.top == q.top + q.height + 1
        )
        shared = min(p.left + p.width, q.left + q.width) - max(p.left, q.left)
    return adjacent, max(shared, 0)


def at_window_edge(p: Rect, direction: Direction, width: int, height: int) -> bool:
    return {
        "above": p.top == 0,
        "below": p.top + p.height == height,
        "left": p.left == 0,
        "right": p.left + p.width == width,
    }[direction]


def check_against_tmux(cap: dict[str, Any]) -> Counter[str]:
    """Assert our neighbours agree with tmux's captured targets; count the cases seen."""
    seen: Counter[str] = Counter()
    rects = tmux_rects(cap["panes"])
    ours = neighbors_of_layout(cap["window_layout"])
    assert set(ours) == set(rects)
    width, height = cap["window_width"], cap["window_height"]
    for p_id, per_direction in cap["candidates"].items():
        p = pane_number(p_id)
        for direction in DIRECTIONS:
            expected: list[Neighbor] = []
            for q_id in per_direction[direction]:
                q = pane_number(q_id)
                adjacent, shared = contact(rects[p], rects[q], direction)
                if not adjacent:
                    # tmux only looks elsewhere when wrapping round the window edge.
                    assert at_window_edge(rects[p], direction, width, height), (p_id, direction)
                    seen["wrapped"] += 1
                elif shared == 0:
                    seen["corner"] += 1
                else:
                    expected.append(Neighbor(q, shared))
            expected.sort(key=lambda n: (-n.shared, n.pane))
            assert ours[p][direction] == tuple(expected), (p_id, direction)
            if not at_window_edge(rects[p], direction, width, height):
                assert expected, (p_id, direction)
                seen["interior"] += 1

            # The single answer after `select-pane -t P`, judged geometrically.
            answer = cap["targets"][p_id][direction]
            mine = {n.pane for n in ours[p][direction]}
            if answer is None or answer == p_id:
                assert not mine, (p_id, direction)
                seen["none"] += 1
                continue
            adjacent, shared = contact(rects[p], rects[pane_number(answer)], direction)
            if not adjacent:
                assert not mine, (p_id, direction, answer)
            elif shared > 0:
                assert pane_number(answer) in mine, (p_id, direction, answer)
            else:
                assert mine, (p_id, direction, answer)
    return seen


@pytest.mark.parametrize("name", WITH_TARGETS)
def test_neighbors_match_tmux_targets(name: str) -> None:
    check_against_tmux(CAPTURES[name])


def test_captured_cases_cover_every_kind() -> None:
    assert len(WITH_TARGETS) >= 10
    seen: Counter[str] = Counter()
    for name in WITH_TARGETS:
        seen += check_against_tmux(CAPTURES[name])
    assert {"wrapped", "corner", "interior", "none"} <= set(seen)


def test_example() -> None:
    layout = "1c26,200x60,0,0{100x60,0,0,0,99x60,101,0[99x30,101,0,1,99x29,101,31,2]}"
    assert neighbors_of_layout(layout) == {
        0: {
            "above": (),
            "below": (),
            "left": (),
            "right": (Neighbor(1, 30), Neighbor(2, 29)),
        },
        1: {"above": (), "below": (Neighbor(2, 99),), "left": (Neighbor(0, 30),), "right": ()},
        2: {"above": (Neighbor(1, 99),), "below": (), "left": (Neighbor(0, 29),), "right": ()},
    }


def test_sorted_by_shared_then_pane_number() -> None:
    # Three panes of equal height on the right of one tall pane: ties go by pane number.
    rects = {
        9: Rect(0, 0, 10, 32),
        5: Rect(11, 0, 10, 10),
        3: Rect(11, 11, 10, 10),
        7: Rect(11, 22, 10, 10),
        1: Rect(11, 33, 10, 2),  # below the tall pane's bottom: not a neighbour
    }
    assert neighbors(rects)[9]["right"] == (Neighbor(3, 10), Neighbor(5, 10), Neighbor(7, 10))


def test_a_pane_of_size_zero_has_no_neighbour_across_that_edge() -> None:
    # tmux 3.5a left this layout after resize-window -x 35 -y 26: pane 9 is 5x0.  Its rows
    # are empty, so it shares no cell with pane 23 across its right edge.
    layout = (
        "81b3,35x26,0,0{19x26,0,0[19x12,0,0{9x12,0,0,15,9x12,10,0,22},19x6,0,13{9x6,0,13"
        "[9x1,0,13,18,9x1,0,15,17,9x2,0,17{1x2,0,17,2,7x2,2,17,5}],9x6,10,13[9x2,10,13"
        "{1x2,10,13,7,1x2,12,13,6,5x2,14,13[5x1,14,13,10,5x0,14,15,9]},9x1,10,16,11,9x1,10,"
        "18,20]},19x6,0,20,21],15x26,20,0,23}"
    )
    found = neighbors_of_layout(layout)
    assert found[9]["right"] == ()
    assert 9 not in {n.pane for n in found[23]["left"]}
    rects = {1: Rect(0, 0, 10, 32), 2: Rect(11, 5, 10, 0), 3: Rect(0, 33, 0, 2)}
    assert neighbors(rects)[1]["right"] == ()
    assert neighbors(rects)[1]["below"] == ()


def test_single_pane_and_empty() -> None:
    assert neighbors_of_layout("ae9d,200x60,0,0,0") == {
        0: {"above": (), "below": (), "left": (), "right": ()}
    }
    assert neighbors({}) == {}


def test_neighbors_of_layout_is_cached_and_strict() -> None:
    layout = CAPTURES["tiled-32"]["window_layout"]
    assert neighbors_of_layout(layout) is neighbors_of_layout(layout)
    with pytest.raises(LayoutError):
        neighbors_of_layout("0000," + layout[5:])


def boxes_of_tree(layout: str) -> list[tuple[int, int, int, int, int]]:
    """What ``leaf_boxes`` must give: the strict parser's rectangles, in the same order."""
    rects = pane_rects(parse_layout(layout))
    return [(p, r.left, r.top, r.left + r.width, r.top + r.height) for p, r in rects.items()]


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_leaf_boxes_are_the_trees_rectangles(name: str) -> None:
    layout = CAPTURES[name]["window_layout"]
    assert leaf_boxes(layout) == boxes_of_tree(layout)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "garbage",
        "ae9d,",
        "ae9d,200x60,0,0",  # a leaf without its pane number
        "1234,80x24,0,0{40x24,0,0,39x24,41,0,1}",  # pre-1.8: the first leaf has no number
        "ae9d,200x60,0,0,0 ",
        "AE9D,200x60,0,0,0",
        "ae9d,200x60,0,0,-1",
    ],
)
def test_leaf_boxes_refuse_what_is_not_a_layout(text: str) -> None:
    with pytest.raises(LayoutError):
        leaf_boxes(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="0123456789abx,{}[]", max_size=60))
@example("200x60,0,0,7")
@example("200x60,0,0{100x60,0,0,0,99x60,101,0[99x30,101,0,1,99x29,101,31,2]}")
def test_leaf_boxes_agree_with_the_parser_wherever_it_accepts(body: str) -> None:
    # Mostly strings the parser refuses; where it accepts, the scan must give its answer.
    layout = f"{layout_checksum(body):04x},{body}"
    try:
        expected = boxes_of_tree(layout)
    except LayoutError:
        try:
            leaf_boxes(layout)
        except LayoutError:
            pass
        return
    assert leaf_boxes(layout) == expected


# --- random layout trees --------------------------------------------------------------------

# Split probability in tenths by depth: enough nesting for a few dozen panes at most.
SPLIT_CHANCE = (8, 6, 5, 3)
# Strategies are built once: constructing them inside the composite dominated its run time.
TENTHS = st.integers(0, 9)
PANE_NUMBERS = st.integers(0, 5000)
SplitKind = Literal["lr", "tb"]
SPLIT_KINDS: tuple[tuple[SplitKind, ...], ...] = (("lr",), ("tb",), ("lr", "tb"))
KINDS = {kinds: st.sampled_from(kinds) for kinds in SPLIT_KINDS}
WINDOW_WIDTHS = st.integers(1, 120)
WINDOW_HEIGHTS = st.integers(1, 50)
RAW = st.integers(0, 1 << 16)  # reduced modulo a bound: shrinks towards the bound's minimum


@st.composite
def layout_trees(draw: st.DrawFn) -> LayoutCell:
    """Random trees with tmux's geometry: children tile their split, one border cell apart."""
    used: set[int] = set()

    def build(left: int, top: int, width: int, height: int, depth: int) -> LayoutCell:
        kinds = tuple(
            k for k, size in zip(SPLIT_KINDS[2], (width, height), strict=True) if size >= 3
        )
        if not kinds or depth >= len(SPLIT_CHANCE) or draw(TENTHS) >= SPLIT_CHANCE[depth]:
            pane = draw(PANE_NUMBERS)
            while pane in used:  # keep numbers unique without rejecting draws
                pane += 1
            used.add(pane)
            return LayoutCell(width, height, left, top, "pane", pane)
        kind = draw(KINDS[kinds])
        size = width if kind == "lr" else height
        count = 2 + draw(RAW) % (min(4, (size + 1) // 2) - 1)
        room = size - (count - 1)  # cells left for the children after the borders
        cuts: set[int] = set()
        while len(cuts) < count - 1:
            cut = 1 + draw(RAW) % (room - 1)
            while cut in cuts:  # distinct cut points without rejecting draws
                cut = cut % (room - 1) + 1
            cuts.add(cut)
        children = []
        pos = left if kind == "lr" else top
        bounds = sorted(cuts)
        for start, end in zip([0, *bounds], [*bounds, room], strict=True):
            part = end - start
            if kind == "lr":
                children.append(build(pos, top, part, height, depth + 1))
            else:
                children.append(build(left, pos, width, part, depth + 1))
            pos += part + 1
        return LayoutCell(width, height, left, top, kind, None, tuple(children))

    return build(0, 0, draw(WINDOW_WIDTHS), draw(WINDOW_HEIGHTS), 0)


def painted_neighbors(
    rects: dict[int, Rect], width: int, height: int
) -> dict[int, dict[Direction, tuple[Neighbor, ...]]]:
    """Reference answer: paint the window and count the pane cells just past each border."""
    grid = [[-1] * width for _ in range(height)]
    for pane, r in rects.items():
        for y in range(r.top, r.top + r.height):
            grid[y][r.left : r.left + r.width] = [pane] * r.width
    result: dict[int, dict[Direction, tuple[Neighbor, ...]]] = {}
    for pane, r in rects.items():
        cells: dict[Direction, list[tuple[int, int]]] = {
            "above": [(x, r.top - 2) for x in range(r.left, r.left + r.width)],
            "below": [(x, r.top + r.height + 1) for x in range(r.left, r.left + r.width)],
            "left": [(r.left - 2, y) for y in range(r.top, r.top + r.height)],
            "right": [(r.left + r.width + 1, y) for y in range(r.top, r.top + r.height)],
        }
        result[pane] = {}
        for direction, points in cells.items():
            counts = Counter(
                grid[y][x]
                for x, y in points
                if 0 <= x < width and 0 <= y < height and grid[y][x] >= 0
            )
            found = [Neighbor(q, n) for q, n in counts.items()]
            found.sort(key=lambda n: (-n.shared, n.pane))
            result[pane][direction] = tuple(found)
    return result


@settings(max_examples=100, deadline=None)
@given(layout_trees())
def test_random_tree_round_trip(tree: LayoutCell) -> None:
    text = format_layout(tree)
    assert parse_layout(text) == tree
    assert format_layout(parse_layout(text)) == text


@settings(max_examples=100, deadline=None)
@given(layout_trees())
def test_random_tree_neighbors(tree: LayoutCell) -> None:
    rects = pane_rects(tree)
    result = neighbors(rects)
    assert result == painted_neighbors(rects, tree.width, tree.height)
    assert result == neighbors_of_layout(format_layout(tree))
    assert leaf_boxes(format_layout(tree)) == boxes_of_tree(format_layout(tree))
    # The Locations' table (read off the leaves) names the same panes, in the same order.
    assert pane_neighbors(format_layout(tree)) == {
        f"%{p}": Neighbors(**{d: tuple(f"%{n.pane}" for n in found[d]) for d in DIRECTIONS})
        for p, found in result.items()
    }
    for p, per_direction in result.items():
        r = rects[p]
        assert tuple(per_direction) == DIRECTIONS
        for direction, found in per_direction.items():
            assert p not in {n.pane for n in found}
            assert len({n.pane for n in found}) == len(found)
            for n in found:
                assert n.shared > 0
                assert Neighbor(p, n.shared) in result[n.pane][OPPOSITE[direction]]
            edge = r.height if direction in ("left", "right") else r.width
            if at_window_edge(r, direction, tree.width, tree.height):
                assert not found
            else:
                # Along the far side of the border, pane runs alternate with single border
                # cells, so the uncovered cells number between (runs - 1) and (runs + 1).
                # Hence an edge of two or more cells always has a neighbour; a one-cell edge
                # can face nothing but the end of a perpendicular border (tmux's minimum
                # pane size is 1, so tmux can produce that).
                if edge >= 2:
                    assert found
                uncovered = edge - sum(n.shared for n in found)
                assert len(found) - 1 <= uncovered <= len(found) + 1
    if len(rects) == 1:
        assert all(not found for found in next(iter(result.values())).values())
