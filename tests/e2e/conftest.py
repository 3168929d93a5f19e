"""The end-to-end suite: the real harnesses (pinned npm packages, ``npmcache``) in panes of
a private tmux server, against stub models that record what reaches them.

Every test here is marked ``e2e`` and runs only when asked for: ``pytest -m e2e tests/e2e``
(a marker expression naming e2e) or ``TMUXLOCD_E2E=1``.  Otherwise it is skipped, so that the
default ``pytest`` run neither downloads the harnesses nor waits on them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.panes import HarnessRig

HERE = Path(__file__).resolve().parent
ENV = "TMUXLOCD_E2E"


def selected(config: pytest.Config) -> bool:
    markexpr = str(config.getoption("markexpr", "") or "")
    return os.environ.get(ENV) == "1" or ("e2e" in markexpr and "not e2e" not in markexpr)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run = selected(config)
    skip = pytest.mark.skip(reason=f"end-to-end: select with -m e2e or {ENV}=1")
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.e2e)
            # A harness run takes seconds to a minute; a test runs several.
            item.add_marker(pytest.mark.timeout(600))
            if not run:
                item.add_marker(skip)


@pytest.fixture
def hrig() -> Iterator[HarnessRig]:
    """A private tmux server (window ``main``, pane ``hrig.first_pane``) and a throwaway
    HOME; no daemon until the test starts one."""
    r = HarnessRig()
    try:
        yield r
    finally:
        r.cleanup()
