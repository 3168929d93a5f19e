"""A populated private tmux server with a daemon listening on a Unix socket and on TCP, and a
relay from a loopback TCP port to the daemon's Unix socket (for HTTP tools that speak TCP only:
the daemon sees a Unix peer, as every Unix client is seen)."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.daemontest import Daemon, Rig, private_rig


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def populate(rig: Rig) -> None:
    """Two sessions, four windows, nine panes (splits both ways)."""
    run = rig.tmux.run
    run("split-window", "-h", "-t", "main")
    run("split-window", "-v", "-t", "main")
    run("new-window", "-d", "-t", "main", "-n", "logs")
    run("split-window", "-d", "-t", "main:logs")
    run("new-session", "-d", "-s", "other", "-x", "120", "-y", "40")
    run("split-window", "-h", "-t", "other")
    run("new-window", "-d", "-t", "other", "-n", "w2")
    run("split-window", "-d", "-t", "other:w2")


@contextlib.contextmanager
def populated_daemon() -> Iterator[tuple[Rig, Daemon, int, str]]:
    """(rig, daemon, its TCP port, its token), the daemon stopped cleanly after."""
    with private_rig(start=True) as rig:
        populate(rig)
        port = free_port()
        daemon = Daemon(rig, "--listen", f"tcp:127.0.0.1:{port}").wait_ready()
        try:
            rig.sync()
            token = (Path(rig.daemon_socket).parent / "token").read_text().strip()
            yield rig, daemon, port, token
        finally:
            assert daemon.stop() == 0, daemon.logs()


class Relay:
    """127.0.0.1:<port> -> the Unix socket ``path``, one thread per connection."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = int(self.listener.getsockname()[1])
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._pipe, args=(conn,), daemon=True).start()

    def _pipe(self, conn: socket.socket) -> None:
        with conn, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
            try:
                upstream.connect(self.path)
            except OSError:
                return
            pair = {conn: upstream, upstream: conn}
            while not self.done.is_set():
                ready, _, _ = select.select(list(pair), [], [], 0.5)
                for sock in ready:
                    try:
                        data = sock.recv(1 << 16)
                    except OSError:
                        return
                    if not data:
                        return
                    try:
                        pair[sock].sendall(data)
                    except OSError:
                        return

    def close(self) -> None:
        self.done.set()
        self.listener.close()
        self.thread.join(5)
