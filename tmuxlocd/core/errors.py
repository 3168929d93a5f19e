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


class CommandFailed(TmuxUnavailable):
    """A command the daemon sent got ``%error``, a short or malformed answer, or no answer.

    ``command`` is the command's name and ``detail`` what tmux said (or that it said nothing),
    so that health and the log can name both.
    """

    def __init__(self, command: str, detail: str) -> None:
        super().__init__(f"{command}: {detail}")
        self.command = command
        self.detail = detail


class CommandTimeout(CommandFailed):
    """tmux did not answer a command before its deadline."""


class SyncFailed(TmuxlocdError):
    """A barrier's re-read was not published: ``servers`` maps socket paths to why."""

    def __init__(self, servers: dict[str, str]) -> None:
        super().__init__("; ".join(f"{path}: {why}" for path, why in sorted(servers.items())))
        self.servers = servers
