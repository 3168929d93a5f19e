"""The whole of tmuxlocd's systemd support: socket activation and readiness, stdlib only.

``listen_fds()`` takes the listening sockets systemd passes (``LISTEN_PID`` / ``LISTEN_FDS``,
from fd 3 on) and ``notify()`` reports ``READY=1`` / ``STOPPING=1`` to ``$NOTIFY_SOCKET``.
Both are no-ops outside systemd.
"""

from __future__ import annotations

import logging
import os
import socket

from tmuxlocd.core.errors import ConfigError

log = logging.getLogger(__name__)

SD_LISTEN_FDS_START = 3
_FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)


def listen_fds(*, unset_environment: bool = True) -> list[socket.socket]:
    """The sockets systemd passed to this very process (none if not activated).

    Each must be a listening stream socket (Unix, IPv4 or IPv6); anything else is a
    ``ConfigError``, since serving on a socket of the wrong kind would fail later and
    obscurely.  The variables are removed so that children do not believe them.
    """
    pid = os.environ.get("LISTEN_PID", "")
    count = os.environ.get("LISTEN_FDS", "")
    if unset_environment:
        for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
            os.environ.pop(name, None)
    if not pid or not count:
        return []
    if not (pid.isascii() and pid.isdigit()) or int(pid) != os.getpid():
        return []  # meant for another process (e.g. a parent that exec'd a wrapper)
    if not (count.isascii() and count.isdigit()):
        raise ConfigError(f"LISTEN_FDS is not a number: {count!r}")
    sockets: list[socket.socket] = []
    for fd in range(SD_LISTEN_FDS_START, SD_LISTEN_FDS_START + int(count)):
        try:
            sock = socket.socket(fileno=fd)
        except OSError as exc:
            raise ConfigError(f"inherited fd {fd} is not a socket: {exc}") from None
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        if sock.type != socket.SOCK_STREAM or sock.family not in _FAMILIES or not listening:
            sock.detach()
            raise ConfigError(
                f"inherited fd {fd} is not a listening stream socket (Unix, IPv4 or IPv6)"
            )
        sock.set_inheritable(False)
        sockets.append(sock)
    return sockets


def notify(state: str) -> bool:
    """Send ``state`` (e.g. ``READY=1``) to the service manager; False if there is none."""
    address = os.environ.get("NOTIFY_SOCKET", "")
    if not address:
        return False
    if address[0] == "@":
        address = "\0" + address[1:]  # abstract namespace
    try:
        # SOCK_CLOEXEC is Linux's (and systemd's): a socket of this process alone elsewhere.
        cloexec = getattr(socket, "SOCK_CLOEXEC", 0)
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | cloexec) as sock:
            sock.connect(address)
            sock.sendall(state.encode())
    except OSError as exc:
        log.debug("sd_notify failed", extra={"sd_state": state, "sd_error": str(exc)})
        return False
    return True
