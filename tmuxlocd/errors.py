"""One exception tree for the whole package."""

from __future__ import annotations


class TmuxlocdError(Exception):
    """Root of every error tmuxlocd raises on purpose."""


class ProtocolError(TmuxlocdError):
    """tmux sent something the control-mode parser cannot accept."""


class LayoutError(TmuxlocdError):
    """A window_layout string is malformed or its checksum is wrong."""


class RowError(TmuxlocdError):
    """A list-* row had the wrong tag or field count."""


class ConfigError(TmuxlocdError):
    """The configuration file or flags are invalid."""


class TmuxUnavailable(TmuxlocdError):
    """The tmux server is not running or the control client went away."""
