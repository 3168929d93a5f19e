"""Daemon settings: one frozen Struct, from TOML and/or command-line flags (SPEC §7).

The TOML keys are the long flag names: ``listen``, ``socket-name`` (``-L``), ``socket-path``
(``-S``), ``hooks``, ``log-level``, ``stream-write-timeout``, ``pane-options``.  An unknown
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


class Config(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, rename="kebab"):
    listen: tuple[str, ...] = ()  # empty: the default Unix socket (SPEC §6)
    socket_name: tuple[str, ...] = ()  # -L NAME: watch only these (with socket_path)
    socket_path: tuple[str, ...] = ()  # -S PATH
    hooks: bool = True  # --no-hooks sets False
    log_level: LogLevel = "info"
    stream_write_timeout: Seconds = WRITE_TIMEOUT_S
    pane_options: bool = False  # keep @tmuxlocd_agent on each agent's pane (SPEC §13)


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
    except TypeError as exc:
        raise ConfigError(str(exc)) from None
    # A flag's value meets the same constraints as the file's (replace checks none).
    try:
        return msgspec.convert(msgspec.to_builtins(merged), Config)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"command line: {exc}") from None
