"""bench.fanout_floor's reading of a control client's ``%layout-change``: its count of panes
is the project's parser's, on layouts captured from tmux."""

from __future__ import annotations

import json
from pathlib import Path

from bench.fanout_floor import layout_kind
from tmuxlocd.layout import pane_rects, parse_layout

LAYOUTS = sorted((Path(__file__).resolve().parents[1] / "data" / "layouts").glob("*.json"))


def test_the_floor_counts_the_panes_the_parser_finds() -> None:
    assert LAYOUTS
    for path in LAYOUTS:
        layout = json.loads(path.read_text())["window_layout"]
        seen: dict[bytes, int] = {}
        line = b"%layout-change @1 " + layout.encode() + b" " + layout.encode() + b" *"
        assert layout_kind(line, seen) == "pane.added"  # the window's first change
        assert seen[b"@1"] == len(pane_rects(parse_layout(layout))), path.name


def test_more_panes_is_an_addition_fewer_a_removal_the_same_nothing() -> None:
    two = b"%layout-change @3 1234,80x24,0,0{40x24,0,0,1,39x24,41,0,2} x *"
    one = b"%layout-change @3 1234,80x24,0,0,1 x *"
    seen: dict[bytes, int] = {b"@3": 1}
    assert layout_kind(two, seen) == "pane.added"
    assert layout_kind(two, seen) is None
    assert layout_kind(one, seen) == "pane.removed"
    assert layout_kind(b"%window-add @4", seen) is None
    assert seen == {b"@3": 1}
