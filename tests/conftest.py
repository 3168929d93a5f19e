"""Session-wide test settings: which tmux binary (``tests/tmuxbin.py``) and the markers.

Every test under ``tests/integration`` drives a real tmux and is marked ``integration``
whether its module says so or not, so that ``pytest -m integration`` selects every
tmux-facing test (the per-version runs of ``.ci/run``), new files included.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import tmuxbin

try:
    TMUX = tmuxbin.choose()  # before any test module looks tmux up
except tmuxbin.BadTmux as exc:
    raise pytest.UsageError(str(exc)) from None

INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_report_header() -> str:
    return f"tmux: {TMUX} ({tmuxbin.version(TMUX)}; choose with ${tmuxbin.ENV})"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if INTEGRATION in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)
