"""Layout strings: parsing, formatting, checksums and pane rectangles, against tmux 3.3a data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tmuxlocd.core.errors import LayoutError
from tmuxlocd.core.layout import (
    MAX_DEPTH,
    LayoutCell,
    Rect,
    format_layout,
    layout_checksum,
    pane_rects,
    parse_layout,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "layouts"
CAPTURES = {path.stem: json.loads(path.read_text()) for path in sorted(DATA.glob("*.json"))}


def with_checksum(body: str) -> str:
    return f"{layout_checksum(body):04x},{body}"


def tmux_rects(panes: list[dict[str, Any]]) -> dict[int, Rect]:
    return {
        int(p["id"].removeprefix("%")): Rect(p["left"], p["top"], p["width"], p["height"])
        for p in panes
    }


def test_captures_present() -> None:
    # The scenarios the rest of this file relies on; a missing file means a broken capture.
    assert {"single", "nested-3-deep", "tiled-32", "zoomed", "offset-columns"} <= set(CAPTURES)
    assert max(len(c["panes"]) for c in CAPTURES.values()) >= 30


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_round_trip(name: str) -> None:
    cap = CAPTURES[name]
    for layout in (cap["window_layout"], cap["window_visible_layout"]):
        assert format_layout(parse_layout(layout)) == layout


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_checksum_matches_tmux(name: str) -> None:
    layout = CAPTURES[name]["window_layout"]
    assert layout_checksum(layout[5:]) == int(layout[:4], 16)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_corrupted_checksum_raises(name: str) -> None:
    layout = CAPTURES[name]["window_layout"]
    wrong = f"{int(layout[:4], 16) ^ 0x0101:04x}"
    with pytest.raises(LayoutError, match="checksum"):
        parse_layout(wrong + layout[4:])
    # A changed body under the old checksum is caught too.
    changed = layout.replace("x", "x1", 1)
    with pytest.raises(LayoutError, match="checksum"):
        parse_layout(changed)


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_pane_rects_equal_tmux(name: str) -> None:
    cap = CAPTURES[name]
    root = parse_layout(cap["window_layout"])
    assert (root.width, root.height) == (cap["window_width"], cap["window_height"])
    expected = tmux_rects(cap.get("unzoomed_panes", cap["panes"]))
    rects = pane_rects(root)
    assert rects == expected
    # Layout order is reading order: tmux's list-panes order (pane index order) for these.
    assert list(rects) == list(expected)


def test_zoomed_window_layouts() -> None:
    cap = CAPTURES["zoomed"]
    assert cap["zoomed"]
    zoomed_pane = int(cap["zoomed_pane"].removeprefix("%"))
    full = pane_rects(parse_layout(cap["window_layout"]))
    visible = pane_rects(parse_layout(cap["window_visible_layout"]))
    assert len(full) == 3
    assert visible == {zoomed_pane: Rect(0, 0, cap["window_width"], cap["window_height"])}
    # While zoomed, tmux reports the zoomed pane as filling the window.
    assert tmux_rects(cap["panes"])[zoomed_pane] == visible[zoomed_pane]
    assert full[zoomed_pane] != visible[zoomed_pane]


def test_parse_structure() -> None:
    root = parse_layout(
        with_checksum("200x60,0,0{100x60,0,0,0,99x60,101,0[99x30,101,0,1,99x29,101,31,2]}")
    )
    assert root == LayoutCell(
        200, 60, 0, 0, "lr", None,
        (
            LayoutCell(100, 60, 0, 0, "pane", 0),
            LayoutCell(
                99, 60, 101, 0, "tb", None,
                (
                    LayoutCell(99, 30, 101, 0, "pane", 1),
                    LayoutCell(99, 29, 101, 31, "pane", 2),
                ),
            ),
        ),
    )  # fmt: skip
    assert parse_layout("ae9d,200x60,0,0,0") == LayoutCell(200, 60, 0, 0, "pane", 0)


MALFORMED_BODIES = {
    "empty body": "",
    "leaf without pane number": "10x10,0,0",
    "pre-1.8 leaves": "21x10,0,0{10x10,0,0,10x10,11,0}",
    "split without children": "10x10,0,0{}",
    "trailing comma in split": "21x10,0,0{10x10,0,0,1,10x10,11,0,2,}",
    "unclosed split": "21x10,0,0{10x10,0,0,1,10x10,11,0,2",
    "wrong closer": "21x10,0,0{10x10,0,0,1,10x10,11,0,2]",
    "trailing text": "10x10,0,0,1 ",
    "two roots": "10x10,0,0,1,10x10,0,0,2",
    "leading zero": "10x010,0,0,1",
    "leading zero in pane": "10x10,0,0,01",
    "negative": "10x10,0,-1,1",
    "spaces": "10x10, 0,0,1",
    "non-ascii digits": "10x10,0,0,\u0661",
    "over 32 bits": "10x10,0,0,4294967296",
    "eleven digits": "10x10,0,0,12345678901",
    "duplicate pane": "21x10,0,0{10x10,0,0,1,10x10,11,0,1}",
    "pane then split": "21x10,0,0,1{10x10,0,0,1,10x10,11,0,2}",
    "widths do not add up": "22x10,0,0{10x10,0,0,1,10x10,11,0,2}",
    "no border between": "20x10,0,0{10x10,0,0,1,10x10,10,0,2}",
    "child height differs": "21x10,0,0{10x10,0,0,1,10x9,11,0,2}",
    "child top differs": "21x10,0,0{10x10,0,0,1,10x10,11,1,2}",
    "tb heights do not add up": "10x20,0,0[10x10,0,0,1,10x10,0,11,2]",
    "tb child left differs": "10x21,0,0[10x10,0,0,1,10x10,1,11,2]",
    "first child offset": "21x10,5,0{10x10,0,0,1,10x10,11,0,2}",
}
GEOMETRY_ONLY = {
    "widths do not add up",
    "no border between",
    "child height differs",
    "child top differs",
    "tb heights do not add up",
    "tb child left differs",
    "first child offset",
}


@pytest.mark.parametrize("case", sorted(MALFORMED_BODIES))
def test_malformed_raises(case: str) -> None:
    layout = with_checksum(MALFORMED_BODIES[case])
    with pytest.raises(LayoutError):
        parse_layout(layout)
    if case in GEOMETRY_ONLY:
        # tmux's syntax is fine there; only the sizes are inconsistent.
        assert format_layout(parse_layout(layout, check_geometry=False)) == layout


@pytest.mark.parametrize(
    "layout",
    [
        "",
        "ae9d",
        "ae9d,",
        "AE9D,200x60,0,0,0",  # tmux writes lowercase; the parser accepts only what tmux writes
        "e9d,200x60,0,0,0",
        "ae9d;200x60,0,0,0",
    ],
)
def test_bad_checksum_field(layout: str) -> None:
    with pytest.raises(LayoutError):
        parse_layout(layout)


def test_error_messages_are_specific() -> None:
    with pytest.raises(LayoutError, match=r"pre-1\.8"):
        parse_layout(with_checksum(MALFORMED_BODIES["pre-1.8 leaves"]))
    with pytest.raises(LayoutError, match="no pane number"):
        parse_layout(with_checksum("10x10,0,0"))
    with pytest.raises(LayoutError, match="twice"):
        parse_layout(with_checksum(MALFORMED_BODIES["duplicate pane"]))
    with pytest.raises(LayoutError, match="add up"):
        parse_layout(with_checksum(MALFORMED_BODIES["widths do not add up"]))


def test_deep_nesting_is_a_layout_error() -> None:
    depth = MAX_DEPTH + 1
    body = "1x1,0,0{" * depth + "1x1,0,0,1" + "}" * depth
    with pytest.raises(LayoutError, match="deeper"):
        parse_layout(with_checksum(body))
    # Far beyond the recursion limit: still a LayoutError, never RecursionError.
    body = "1x1,0,0{" * 10_000
    with pytest.raises(LayoutError):
        parse_layout(with_checksum(body))


def test_nesting_at_the_limit_round_trips() -> None:
    body = "1x1,0,0{" * MAX_DEPTH + "1x1,0,0,7" + "}" * MAX_DEPTH
    layout = with_checksum(body)
    root = parse_layout(layout)
    assert format_layout(root) == layout
    assert pane_rects(root) == {7: Rect(0, 0, 1, 1)}


@pytest.mark.parametrize(
    "cell",
    [
        LayoutCell(10, 10, 0, 0, "pane", None),
        LayoutCell(10, 10, 0, 0, "lr", None),
        LayoutCell(10, 10, 0, 0, "tb", 3, (LayoutCell(10, 10, 0, 0, "pane", 1),)),
        LayoutCell(10, 10, 0, 0, "pane", 1, (LayoutCell(10, 10, 0, 0, "pane", 2),)),
    ],
)
def test_format_rejects_inconsistent_cells(cell: LayoutCell) -> None:
    with pytest.raises(LayoutError):
        format_layout(cell)


LAYOUT_ALPHABET = "0123456789x,{}[]"
SAMPLE_BODIES = [cap["window_layout"][5:] for cap in CAPTURES.values()]


def _parse_or_layout_error(layout: str) -> None:
    try:
        root = parse_layout(layout)
    except LayoutError:
        return
    # Whatever is accepted is canonical: it formats back to the very same string.
    assert format_layout(root) == layout


@settings(max_examples=300, deadline=None)
@given(st.text())
@example("ae9d,200x60,0,0,0")
@example("0000,")
def test_arbitrary_text_only_raises_layout_error(text: str) -> None:
    _parse_or_layout_error(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=LAYOUT_ALPHABET, max_size=80))
def test_arbitrary_body_with_valid_checksum(body: str) -> None:
    _parse_or_layout_error(with_checksum(body))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(SAMPLE_BODIES),
    st.lists(
        st.tuples(
            st.sampled_from(["delete", "insert", "replace"]),
            st.integers(min_value=0),
            st.sampled_from(LAYOUT_ALPHABET),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_mutated_captures(body: str, edits: list[tuple[str, int, str]]) -> None:
    chars = list(body)
    for op, index, char in edits:
        i = index % (len(chars) + 1)
        if op == "insert":
            chars.insert(i, char)
        elif chars and i < len(chars):
            if op == "delete":
                del chars[i]
            else:
                chars[i] = char
    _parse_or_layout_error(with_checksum("".join(chars)))
