"""Neighbours computed from real tmux layouts against tmux's own answers (moved from the unit
tests: these start tmux)."""

from __future__ import annotations

import shutil

import pytest

from tests.tools import capture_layouts
from tests.unit.test_neighbors import check_against_tmux


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs a tmux binary")
def test_live_neighbors_match_tmux() -> None:
    tool = capture_layouts
    for cap in tool.capture_all(["offset-columns", "uneven-grid", "nested-3-deep"]).values():
        check_against_tmux(cap)
