"""Daemon settings: one frozen Struct, from TOML and/or command-line flags (SPEC §7).

The TOML keys are the long flag names: ``listen``, ``socket-name`` (``-L``), ``socket-path``
(``-S``), ``hooks``, ``log-level``, ``stream-write-timeout``, ``pane-options``, and the alerts'
(SPEC §14): ``alerts``, ``alert-delay``, ``alert-turn-end``, ``alert-channels``,
``alert-command``, ``alert-timeout``, ``alert-terminal``.  An unknown
key or a bad value is a ``ConfigError`` that names it (the CLI turns that into exit 2).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from tmuxlocd.core.errors import ConfigError

LogLevel = Literal["debug", "info", "warning", "error"]

# A stream whose reader takes no bytes for this long is ended (SPEC §5): a subscriber that
# stopped reading costs its buffers only until then.
WRITE_TIMEOUT_S = 30.0
Seconds = Annotated[float, msgspec.Meta(gt=0, le=86400)]
Delay = Annotated[float, msgspec.Meta(ge=0, le=86400)]
Channel = Literal["desktop", "terminal", "tmux", "command"]
# A permission a harness approves on its own shows ``waiting`` for well under a second (the
# e2e runs): two are enough to tell those from a person being asked.
ALERT_DELAY_S = 2.0
ALERT_TIMEOUT_S = 5.0


class Config(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="kebab"):
    listen: tuple[str, ...] = ()  # empty: the default Unix socket (SPEC §6)
    socket_name: tuple[str, ...] = ()  # -L NAME: watch only these (with socket_path)
    socket_path: tuple[str, ...] = ()  # -S PATH
    hooks: bool = True  # --no-hooks sets False
    log_level: LogLevel = "info"
    stream_write_timeout: Seconds = WRITE_TIMEOUT_S
    pane_options: bool = False  # keep @tmuxlocd_agent on each agent's pane (SPEC §13)
    alerts: bool = False  # alerts on agents that wait (SPEC §14)
    alert_delay: Delay = ALERT_DELAY_S  # a wait this long gets its alert
    alert_turn_end: Delay = 0.0  # a turn that worked this long gets one when it ends (0: off)
    alert_channels: tuple[Channel, ...] = ("desktop", "tmux")
    alert_command: tuple[str, ...] = ()  # argv; the agent's fields in its environment
    alert_timeout: Seconds = ALERT_TIMEOUT_S  # each delivery's deadline
    alert_terminal: Literal["osc9", "osc777"] = "osc9"

    def __post_init__(self) -> None:
        if "command" in self.alert_channels and not self.alert_command:
            raise ValueError("alert-channels names command, but alert-command is not set")

    @property
    def channels(self) -> tuple[str, ...]:
        """The alert channels in use: an ``alert-command`` given is the command channel."""
        names = tuple(dict.fromkeys(self.alert_channels))
        return (*names, "command") if self.alert_command and "command" not in names else names


def default_config_path(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "tmuxlocd" / "config.toml"


def load_config(path: Path | None, *, explicit: bool = False) -> Config:
    """Read the TOML file at ``path``; a missing default file gives the defaults."""
    if path is None:
        return Config()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file {path} does not exist") from None
        return Config()
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    try:
        return msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def merge(base: Config, **flags: object) -> Config:
    """Flags given on the command line (not None / not empty) override the file."""
    given = {k: v for k, v in flags.items() if v is not None and v != ()}
    try:
        merged = msgspec.structs.replace(base, **given)
    except (TypeError, ValueError) as exc:
        raise ConfigError(str(exc)) from None
    # A flag's value meets the same constraints as the file's (replace checks none).
    try:
        return msgspec.convert(msgspec.to_builtins(merged), Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"command line: {exc}") from None
