"""Scripts beside the daemon: every command of ``tests/battery.py`` has the same outcome with
the daemon attached as without it, but for what ``battery.DIFFERS`` names (and those do
differ, so that docs/side-effects.md's list stays true)."""

from __future__ import annotations

import shutil

import pytest

from tests import battery
from tests.tmuxtest import TMUX

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        TMUX is None or shutil.which("script") is None, reason="needs tmux and script"
    ),
]


@pytest.mark.parametrize("scenario", battery.SCENARIOS)
def test_scripts_do_the_same_with_the_daemon(scenario: str) -> None:
    without, with_ = battery.battery(scenario)
    differ = {name for name, _ in battery.STEPS if without[name] != with_[name]}
    report = {name: (without[name].brief(), with_[name].brief()) for name in differ}
    assert differ == battery.DIFFERS[scenario], report
    # The keys scripts send arrive, with and without it (tmux 3.7+ refused them while the
    # daemon's control client was read-only).
    for name in ("send-keys", "send-keys -l", "paste-buffer -p, send-keys Enter"):
        assert with_[name].rc == 0 and with_[name].shown != "not shown", with_[name]
