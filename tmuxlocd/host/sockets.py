"""tmux's sockets: the directory tmux puts them in, the ones there, and whether one is alive.

tmux's own rule (``$TMUX_TMPDIR``, else ``/tmp``, resolved, then ``tmux-<uid>``), written once
for the daemon's watcher, its API and the no-daemon lookups; the liveness probe is also the one the
daemon uses on its own socket before it takes the path over.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from collections.abc import Mapping


def socket_dir(env: Mapping[str, str] | None = None, uid: int | None = None) -> str:
    """The directory of tmux's sockets for ``uid`` (this user's by default).

    tmux resolves the base directory (``realpath`` in ``expand_paths``, 3.2a to 3.6b), and
    ``#{socket_path}`` and ``$TMUX`` then name the resolved path: ``/private/tmp/...`` on
    macOS, where ``/tmp`` is a symlink, and the target of a symlinked ``$TMUX_TMPDIR``
    anywhere.  The daemon keys its servers by this path, so it must be tmux's own spelling,
    or a ``?server=$TMUX`` and a hook's ``--server "#{socket_path}"`` would name no server."""
    env = os.environ if env is None else env
    base = os.path.realpath(env.get("TMUX_TMPDIR") or "/tmp")
    return os.path.join(base, f"tmux-{os.getuid() if uid is None else uid}")


def resolve_server(name_or_path: str, env: Mapping[str, str] | None = None) -> str:
    """A -L name or a socket path -> the socket path, its directory resolved as tmux's own
    (``socket_dir``): one server, one spelling."""
    if "/" in name_or_path:
        return socket_path_key(name_or_path)
    return os.path.join(socket_dir(env), name_or_path)


def socket_path_key(path: str) -> str:
    """A socket path (``-S``) with its directory resolved: the one spelling of a server."""
    path = os.path.abspath(path)
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def socket_from_tmux_env(value: str | None) -> str | None:
    """``$TMUX`` is ``<socket>,<server pid>,<session index>``; the socket path may itself hold
    commas, so the two numbers are taken off the end."""
    if not value:
        return None
    parts = value.rsplit(",", 2)
    return parts[0] if len(parts) == 3 and parts[0] else None


def list_sockets(directory: str) -> list[str]:
    """The sockets in ``directory`` (a missing or unreadable one has none), by name."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return []
    out = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            if stat.S_ISSOCK(os.stat(path).st_mode):
                out.append(path)
        except OSError:
            continue
    return out


def socket_alive(path: str) -> bool:
    """Does something listen on the Unix socket ``path``?  A connect() tells, and starts
    nothing.  Refused or gone: no.  Anything else (a full backlog): someone is there, and a
    socket that cannot be proved dead is taken as alive."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISSOCK(st.st_mode):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.setblocking(False)
        try:
            sock.connect(path)
        except BlockingIOError:
            return True  # the backlog is full: someone is there
        except OSError as exc:
            return exc.errno not in (errno.ECONNREFUSED, errno.ENOENT)
    return True
