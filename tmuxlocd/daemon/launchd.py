"""launchd's socket activation (macOS): the listening sockets of a LaunchAgent's ``Sockets``
entry (tmuxlocd.clients.launchd writes it), as systemd's ``LISTEN_FDS`` are elsewhere.

``READY=1`` has no launchd counterpart: nothing replaces ``systemd.notify``.
"""

from __future__ import annotations

import logging
import socket
import sys

log = logging.getLogger(__name__)

SOCKETS_KEY = "Listeners"  # tmuxlocd.clients.launchd.SOCKETS_KEY


def listen_fds() -> list[socket.socket]:
    """The sockets launchd holds for this job (none when not started by launchd)."""
    if sys.platform == "darwin":
        from tmuxlocd.host.darwin import launch_sockets

        try:
            fds = launch_sockets(SOCKETS_KEY)
        except OSError as exc:
            log.error("launchd's sockets could not be had: %s", exc)
            return []
        return [socket.socket(fileno=fd) for fd in fds]
    else:
        return []
