"""``agents --pick`` without a terminal (core/picker.py), and the alert settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from tmuxlocd.core import picker
from tmuxlocd.core.errors import ConfigError
from tmuxlocd.daemon.config import Config, load_config, merge


def agent(pane: str, state: str, since: float, reason: str | None = None) -> dict[str, object]:
    return {
        "pane": pane,
        "server": "/tmp/tmux-1/default",
        "harness": "claude",
        "session_id": f"s{pane}",
        "state": state,
        "since": since,
        "reason": reason,
        "location": {"session": {"name": "main"}, "window": {"index": 1}, "pane": {"index": 0}},
    }


def test_those_that_need_you_first_longest_first() -> None:
    found = [
        agent("%1", "idle", 10.0),
        agent("%2", "waiting", 50.0),
        agent("%3", "working", 5.0),
        agent("%4", "waiting", 20.0),
    ]
    assert [a["pane"] for a in picker.ordered(found)] == ["%4", "%2", "%3", "%1"]


def test_a_row_and_the_keys() -> None:
    row = picker.row(agent("%4", "waiting", 100.0, "permission: Bash\x1b"), 163.0, 200)
    assert row == "   %4  claude     waiting     1m03s  main:1.0        permission: Bash"
    assert picker.row(agent("%4", "idle", 0.0), 1.0, 10) == "   %4  cla"
    assert [picker.key(k) for k in (b"\x1b[A", b"j", b"\r", b"q", b"x")] == [
        "up",
        "down",
        "enter",
        "quit",
        "",
    ]
    assert picker.moved(0, 3, "up") == 2 and picker.moved(2, 3, "down") == 0
    assert picker.moved(5, 2, "") == 1 and picker.moved(0, 0, "down") == 0


def test_alert_settings(tmp_path: Path) -> None:
    assert Config().alerts is False  # off by default
    path = tmp_path / "config.toml"
    path.write_text('alerts = true\nalert-delay = 0.5\nalert-command = ["notify", "x"]\n')
    config = load_config(path)
    assert (config.alerts, config.alert_delay) == (True, 0.5)
    assert config.channels == ("desktop", "tmux", "command")  # a command adds its channel
    path.write_text('alert-channels = ["command"]\n')
    with pytest.raises(ConfigError, match="alert-command is not set"):
        load_config(path)
    path.write_text('alert-channels = ["pager"]\n')
    with pytest.raises(ConfigError, match="alert-channels"):
        load_config(path)
    with pytest.raises(ConfigError):
        merge(Config(), alert_delay=-1.0)
    assert merge(Config(), alert_channels=("terminal",)).channels == ("terminal",)
