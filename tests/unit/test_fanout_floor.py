"""bench.fanout_floor's reading of a control client's ``%layout-change``: its count of panes
is the project's parser's, on layouts captured from tmux."""

from __future__ import annotations

import json
from pathlib import Path

from bench.fanout_floor import layout_kind, rows_kinds
from tmuxlocd.core.attach import WAITER_MARK
from tmuxlocd.core.layout import pane_rects, parse_layout

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


# One round of the daemon's 3.3 hook waiter, as tmux 3.3a printed it for a split of @7 and, by
# the same command, the kill of a pane of @9 (hook_command's row format).
SPLIT_ROW = (
    b"|5 @7 0 b25d,80x24,0,0[80x12,0,0,1,80x11,0,13,2] "
    b"%1.0.1./dev/pts/1.10.0.0.80.12.0 %2.1.0./dev/pts/2.20.0.13.80.11.0"
)
KILL_ROW = b"|6 @9 0 a1b2,80x24,0,0,3 %3.0.1./dev/pts/3.30.0.0.80.24.0"


def test_the_floor_reads_a_waiter_round_window_by_window() -> None:
    mark = WAITER_MARK.encode()
    seen: dict[bytes, int] = {b"@7": 1, b"@9": 2}
    assert rows_kinds(mark + SPLIT_ROW + KILL_ROW, mark, seen) == ["pane.added", "pane.removed"]
    assert seen == {b"@7": 2, b"@9": 1}
    # The same rows again (a round for a change of another kind): nothing to publish.
    assert rows_kinds(mark + SPLIT_ROW, mark, seen) == []
    # An empty round (the option was cleared by an earlier one), another line, a cut row.
    assert rows_kinds(mark, mark, seen) == []
    assert rows_kinds(b"something a user's hook printed", mark, seen) == []
    assert rows_kinds(mark + b"|7 @7 0", mark, seen) == []
    assert seen == {b"@7": 2, b"@9": 1}
