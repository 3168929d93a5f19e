"""Layouts of a real tmux: parsed, formatted back and turned into the rectangles tmux reports
(moved from the unit tests: these start tmux)."""

from __future__ import annotations

import shutil

import pytest

from tests.tools import capture_layouts
from tests.unit.test_layout import tmux_rects
from tmuxlocd.core.layout import (
    format_layout,
    pane_rects,
    parse_layout,
)


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs a tmux binary")
def test_live_layouts_match_tmux() -> None:
    tool = capture_layouts
    live = tool.capture_all(
        ["single", "nested-3-deep", "uneven-grid", "zoomed", "tiny-tiled-6"],
        directions=False,
    )
    for cap in live.values():
        for layout in (cap["window_layout"], cap["window_visible_layout"]):
            assert format_layout(parse_layout(layout)) == layout
        rects = pane_rects(parse_layout(cap["window_layout"]))
        assert rects == tmux_rects(cap.get("unzoomed_panes", cap["panes"]))
