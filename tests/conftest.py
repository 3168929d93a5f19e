"""Session-wide test settings: which tmux binary (``tests/tmuxbin.py``), the markers, and
no way to the user's tmux.

A tmux client finds its server through ``$TMUX`` (inside a pane) and ``$TMUX_TMPDIR`` (the
socket directory), so a suite run from inside tmux could reach the user's own server.  These
are removed from the test process here, before any test module is imported, rather than made
a reason to fail: running the tests from a tmux pane is how tmux users work, and every test
gives the processes it starts the environment they need (``Rig.env``, ``tmux_env``).  A
session-wide fixture then checks, before and after the run, that they stayed away.

Every test under ``tests/integration`` drives a real tmux and is marked ``integration``
whether its module says so or not, so that ``pytest -m integration`` selects every
tmux-facing test (the per-version runs of ``.ci/run``), new files included.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import tmuxbin
from tmuxlocd.host.system import HOST

# Read by tmux clients to find a server: never inherited by a test (see above).
TMUX_FINDERS = ("TMUX", "TMUX_PANE", "TMUX_TMPDIR")
for _name in TMUX_FINDERS:
    os.environ.pop(_name, None)

try:
    TMUX = tmuxbin.choose()  # before any test module looks tmux up
except tmuxbin.BadTmux as exc:
    raise pytest.UsageError(str(exc)) from None

INTEGRATION = Path(__file__).resolve().parent / "integration"


def pytest_report_header() -> str:
    return (
        f"tmux: {TMUX} ({tmuxbin.version(TMUX)}; choose with ${tmuxbin.ENV}); "
        f"host: {HOST.name} (choose with $TMUXLOCD_HOST)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    portable = HOST.name != "linux"
    for item in items:
        if INTEGRATION in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.integration)
        marker = item.get_closest_marker("linux_host")
        if portable and marker is not None:
            why = marker.args[0] if marker.args else "a fact of the linux host"
            item.add_marker(pytest.mark.skip(reason=f"TMUXLOCD_HOST={HOST.name}: {why}"))


def _tmux_finders() -> list[str]:
    return [name for name in TMUX_FINDERS if name in os.environ]


@pytest.fixture(scope="session", autouse=True)
def no_way_to_the_users_tmux() -> Iterator[None]:
    assert _tmux_finders() == [], "the test process must not know the user's tmux"
    yield
    assert _tmux_finders() == [], "a test left a way to a tmux server in os.environ"
