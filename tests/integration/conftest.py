"""Fixtures of the tmux-facing tests: a private rig and a daemon on it, one test each.

Modules that share one across their tests define module-scoped fixtures of the same names
with the same helpers (``tests/daemontest.py``: ``private_rig``, ``running_daemon``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.daemontest import Daemon, Rig, private_rig, running_daemon


@pytest.fixture
def rig() -> Iterator[Rig]:
    """A private tmux socket directory and daemon paths; the server not started."""
    with private_rig() as rig:
        yield rig


@pytest.fixture
def daemon(rig: Rig) -> Iterator[Daemon]:
    with running_daemon(rig) as d:
        yield d
