"""The daemon's lifecycle (SPEC §6): listeners, the watcher, the API, and a clean stop.

``serve()`` is one awaitable.  It binds every listener first (so that a second daemon fails
fast and clients connecting early wait in the backlog instead of being refused), starts the
watcher and gives it a moment for its first sync (so that the first ``/v1/self`` is already
right), then serves until SIGTERM/SIGINT or the caller's ``shutdown`` event.  Stopping ends
every stream, stops the watcher (which removes its tmux hooks) and removes the socket files
it created, within 2 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import logging
import os
import resource
import signal
import socket
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from tmuxlocd.core.errors import ConfigError
from tmuxlocd.core.mirror import Argv
from tmuxlocd.daemon import launchd, systemd
from tmuxlocd.daemon.activity_watch import ActivityWatcher
from tmuxlocd.daemon.agent_registry import FILE_NAME as AGENTS_FILE
from tmuxlocd.daemon.agent_registry import AgentRegistry
from tmuxlocd.daemon.alerts import Alerts
from tmuxlocd.daemon.api import context_of, create_app
from tmuxlocd.daemon.api.server import ApiRunner
from tmuxlocd.daemon.config import Config
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.daemon.rundir import Refused, check_directory
from tmuxlocd.daemon.token import TokenFile
from tmuxlocd.host.paths import default_socket_path
from tmuxlocd.host.sockets import socket_alive
from tmuxlocd.host.system import HOST

log = logging.getLogger(__name__)

STOP_BUDGET = 2.0  # SPEC §6: stop within 2 s
# How often the daemon checks that its socket files are still there (SPEC §6): one lstat each.
SOCKET_CHECK_INTERVAL = 1.0
FIRST_SYNC_WAIT = 3.0  # at most this long before serving, for the first sync of each server


def listen_backlog() -> int:
    """The system's largest listen backlog (SPEC §10: 1,000 clients connecting in one burst
    are all served).

    After a restart every subscriber reconnects at once.  A Unix socket whose backlog is full
    refuses a non-blocking connect with EAGAIN at once (asyncio then hands back a socket that
    fails on its first write), so a small backlog turns a reconnect storm into failures.  The
    kernel caps any larger value at ``net.core.somaxconn`` anyway.
    """
    value = HOST.backlog()  # net.core.somaxconn; kern.ipc.somaxconn on macOS
    return value if value > 0 else socket.SOMAXCONN


@dataclass
class Listener:
    name: str  # "unix:PATH" or "tcp:HOST:PORT", as given to on_ready
    sock: socket.socket
    owned_path: str | None = None  # a socket file this daemon created (and removes)
    identity: tuple[int, int] | None = None  # its (st_dev, st_ino), to remove only ours

    @property
    def unix_path(self) -> str | None:
        if self.sock.family != socket.AF_UNIX:
            return None
        name = self.sock.getsockname()
        return name if isinstance(name, str) and name else None


# ----------------------------------------------------------------------------------------------
# Unix sockets.


def bind_unix(path: str) -> Listener:
    path = os.path.abspath(path)
    check_directory(os.path.dirname(path))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISSOCK(st.st_mode):
            raise Refused(f"{path} exists and is not a socket; not touching it")
        if socket_alive(path):
            raise Refused(f"another tmuxlocd is already listening on {path}")
        log.info("removed a stale socket", extra={"socket_path": path})
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        # Bound under a umask so that the file is never, even briefly, open to others.
        old = os.umask(0o077)
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        sock.listen(listen_backlog())
        sock.setblocking(False)
        st = os.stat(path)
    except OSError as exc:
        sock.close()
        raise Refused(f"cannot listen on {path}: {exc}") from None
    return Listener(f"unix:{path}", sock, owned_path=path, identity=(st.st_dev, st.st_ino))


# ----------------------------------------------------------------------------------------------
# TCP.


def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def _tcp_name(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"tcp:[{host}]:{port}" if ":" in host else f"tcp:{host}:{port}"


def bind_tcp(host: str, port: int) -> Listener:
    address = "127.0.0.1" if host.lower() == "localhost" else host
    if not _loopback(address):
        raise Refused(
            f"refusing to listen on {host}: TCP listeners must be on a loopback address "
            "(127.0.0.1, ::1 or localhost)",
            code=2,
        )
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(listen_backlog())
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise Refused(f"cannot listen on tcp:{host}:{port}: {exc}") from None
    return Listener(_tcp_name(sock), sock)


def parse_listen(spec: str) -> tuple[str, str, int]:
    """``unix:PATH`` -> ("unix", PATH, 0); ``tcp:HOST:PORT`` -> ("tcp", HOST, PORT)."""
    kind, sep, rest = spec.partition(":")
    if sep and kind == "unix" and rest:
        return "unix", rest, 0
    if sep and kind == "tcp":
        host, sep2, port = rest.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if sep2 and host and port.isascii() and port.isdigit() and int(port) < 65536:
            return "tcp", host, int(port)
    raise ConfigError(f"bad listen address {spec!r}: expected unix:PATH or tcp:HOST:PORT")


def inherited(sockets: list[socket.socket]) -> list[Listener]:
    out: list[Listener] = []
    for sock in sockets:
        sock.setblocking(False)
        if sock.family == socket.AF_UNIX:
            out.append(Listener(f"unix:{sock.getsockname() or '(unnamed)'}", sock))
        elif _loopback(sock.getsockname()[0]):
            out.append(Listener(_tcp_name(sock), sock))
        else:
            raise Refused(f"the inherited socket {_tcp_name(sock)} is not on loopback", code=2)
    return out


def open_listeners(config: Config) -> list[Listener]:
    """systemd's (or launchd's) sockets if activated, else ``--listen``, else the default Unix
    socket."""
    activated = systemd.listen_fds() or launchd.listen_fds()
    if activated:
        return inherited(activated)
    listeners: list[Listener] = []
    try:
        for spec in config.listen or (f"unix:{default_socket_path()}",):
            kind, where, port = parse_listen(spec)
            listeners.append(bind_unix(where) if kind == "unix" else bind_tcp(where, port))
    except BaseException:
        close_listeners(listeners)
        raise
    return listeners


def close_listeners(listeners: list[Listener]) -> None:
    for listener in listeners:
        listener.sock.close()
        if listener.owned_path is not None:
            _remove_if_ours(listener.owned_path, listener.identity)


def _remove_if_ours(path: str, identity: tuple[int, int] | None) -> None:
    # A newer daemon may have replaced the file meanwhile: remove only the one we made.
    with contextlib.suppress(OSError):
        st = os.lstat(path)
        if identity is None or (st.st_dev, st.st_ino) == identity:
            os.unlink(path)


def lost(listener: Listener) -> bool:
    """Whether the socket file this daemon made is no longer there (deleted: macOS reaps idle
    files in ``/tmp`` and ``$TMPDIR``, and so may a tmpfiles cleaner) or is another file now."""
    if listener.owned_path is None:
        return False
    try:
        st = os.lstat(listener.owned_path)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return (st.st_dev, st.st_ino) != listener.identity


class _Replace(Protocol):
    async def __call__(self, old: socket.socket, new: socket.socket) -> None: ...


async def keep_sockets(
    listeners: list[Listener], replace: _Replace, interval: float = SOCKET_CHECK_INTERVAL
) -> None:
    """Bind again, at the same path, a Unix socket whose file was deleted under the running
    daemon: a client can only connect through the file, so without this a running daemon is
    unreachable until it restarts.  The old listening socket is closed (no one can reach it);
    connections it accepted go on.  A path that another daemon took meanwhile is left to it."""
    while True:
        await asyncio.sleep(interval)  # one lstat per listener: no wait on a condition here
        for i, old in enumerate(listeners):
            if not lost(old):
                continue
            path = old.owned_path
            assert path is not None
            old.owned_path = None  # never remove a file that is no longer ours
            try:
                new = bind_unix(path)
            except Refused as exc:
                log.error("the socket file %s was removed; cannot listen again: %s", path, exc)
                continue
            listeners[i] = new
            await replace(old.sock, new.sock)
            log.warning(
                "the socket file was removed under the daemon: listening again",
                extra={"socket_path": path},
            )


def _token_directory(listeners: list[Listener]) -> str:
    """Beside the first Unix socket, else beside where the default one would be."""
    first = next((lis.unix_path for lis in listeners if lis.unix_path), None)
    return os.path.dirname(first or os.path.abspath(default_socket_path()))


# ----------------------------------------------------------------------------------------------
# The lifecycle.


class _QuietClientErrors(logging.Filter):
    """aiohttp logs every request it cannot parse (garbage, a bad header, a line too long) as
    an ERROR with a traceback: any local process could fill the log that way.  Those are the
    client's fault: they go to debug level, in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, HttpProcessingError):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        record.msg = f"{record.getMessage()}: {exc.code} {exc.message}".replace("\n", " ")
        record.args = ()
        record.exc_info = record.exc_text = None
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


async def _stop_watchers(
    activity: ActivityWatcher | None,
    watcher: _Watcher | None,
    agents: AgentRegistry | None = None,
    alerts: Alerts | None = None,
) -> None:
    """The alerts, the activity watcher and the agents first: they take their hooks and
    options out over the observers' clients."""
    try:
        if alerts is not None:
            await alerts.close()
        if agents is not None:
            await agents.close()
        if activity is not None:
            await activity.close()
    finally:
        if watcher is not None:
            await watcher.stop()


class _Watcher(Protocol):
    async def wait_synced(self, timeout: float) -> None: ...

    async def pane_format(self, socket_path: str, pane_id: str, fmt: str) -> str | None: ...

    async def commands(
        self, socket_path: str, make: Callable[[Callable[[str], str]], Sequence[Argv]]
    ) -> list[list[str]] | None: ...

    async def stop(self) -> None: ...


def _freeze_startup_heap() -> None:
    """Leave what start-up made (modules, the app, the first sync's model) out of every
    later collection of the cyclic garbage collector.  Those objects live as long as the
    daemon, yet a full collection walked all of them, a pause of some 20 ms at 100 panes
    in the middle of a change's path (traced); frozen after one last collection, a full
    collection walks only what came since.  Reference counting still frees them; ``serve``
    unfreezes them when it ends."""
    gc.collect()
    gc.freeze()


async def start_watcher(hub: Hub, config: Config) -> _Watcher:
    # Imported here: the observer pulls in the tmux side, which the API alone does not need.
    from tmuxlocd.daemon.observer import Watcher

    watcher = Watcher(hub, config)
    await watcher.start()
    return watcher


OPEN_FILES_WANTED = 8192


def raise_open_files_limit(wanted: int = OPEN_FILES_WANTED) -> None:
    """Raise the soft limit on open files towards the hard one.

    1,000 streams (SPEC §6) plus the tmux clients and the listeners need more than the soft
    limit of 1,024 that many systems give a process; at that limit accept() fails and every
    new client waits in the backlog.
    """
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (ValueError, OSError) as exc:
        log.warning("could not raise the open files limit: %s", exc)


async def serve(
    config: Config,
    *,
    shutdown: asyncio.Event | None = None,
    on_ready: Callable[[list[str]], None] | None = None,
) -> int:
    """Run the daemon until SIGTERM/SIGINT or ``shutdown`` is set; the exit status.

    0 after a clean stop; 1 when it cannot start (another daemon on the socket, an unsafe
    socket directory); 2 for a bad listen address (e.g. TCP off loopback).
    """
    raise_open_files_limit()
    try:
        listeners = open_listeners(config)
    except Refused as exc:
        log.error("%s", exc)
        return exc.code
    except ConfigError as exc:
        log.error("%s", exc)
        return 2
    token: TokenFile | None = None
    if any(listener.sock.family != socket.AF_UNIX for listener in listeners):
        try:
            directory = _token_directory(listeners)
            check_directory(directory)
            token = TokenFile(directory)
        except (Refused, OSError) as exc:
            close_listeners(listeners)
            log.error("cannot write the TCP token: %s", exc)
            return 1
    return await _run(config, listeners, token, shutdown or asyncio.Event(), on_ready)


async def _run(
    config: Config,
    listeners: list[Listener],
    token: TokenFile | None,
    shutdown: asyncio.Event,
    on_ready: Callable[[list[str]], None] | None,
) -> int:
    loop = asyncio.get_running_loop()
    hooked: list[signal.Signals] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        # Only the main thread may own signals; an embedding caller stops us via `shutdown`.
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(sig, shutdown.set)
            hooked.append(sig)
    hub = Hub()
    app = create_app(
        hub,
        tcp_token=token.current if token is not None else None,
        write_timeout=config.stream_write_timeout,
    )
    quiet = _QuietClientErrors()
    server_log = logging.getLogger("aiohttp.server")
    server_log.addFilter(quiet)
    runner = ApiRunner(
        app,
        handle_signals=False,
        access_log=None,
        # A stream whose client hung up ends at once instead of at its next heartbeat.
        handler_cancellation=True,
        shutdown_timeout=STOP_BUDGET / 2,
    )
    watcher: _Watcher | None = None
    keeper: asyncio.Task[None] | None = None
    activity: ActivityWatcher | None = None
    agents: AgentRegistry | None = None
    alerts: Alerts | None = None
    status = 0
    try:
        watcher = await start_watcher(hub, config)
        # Costs nothing until a wait or an activity stream names a pane.
        activity = context_of(app).activity = ActivityWatcher(hub, watcher)
        await watcher.wait_synced(FIRST_SYNC_WAIT)
        agents = context_of(app).agents = AgentRegistry(
            hub,
            path=os.path.join(_token_directory(listeners), AGENTS_FILE),
            commands=watcher,
            pane_options=config.pane_options,
        )
        agents.start()
        if config.alerts:
            alerts = context_of(app).alerts = Alerts(config, agents, watcher, hub)
            alerts.start()
        await runner.setup()
        backlog = listen_backlog()
        sites: dict[socket.socket, web.SockSite] = {}
        for listener in listeners:
            # aiohttp listens again with its own backlog (128 unless told): pass ours.
            sites[listener.sock] = site = web.SockSite(runner, listener.sock, backlog=backlog)
            await site.start()
        _freeze_startup_heap()

        async def replace(old: socket.socket, new: socket.socket) -> None:
            sites[new] = site = web.SockSite(runner, new, backlog=backlog)
            await site.start()
            gone = sites.pop(old, None)
            if gone is not None:
                await gone.stop()  # closes the old listening socket; its connections go on

        keeper = asyncio.create_task(keep_sockets(listeners, replace), name="socket keeper")
        names = [listener.name for listener in listeners]
        log.info("listening", extra={"listeners": " ".join(names)})
        systemd.notify("READY=1")
        if on_ready is not None:
            on_ready(names)
        await shutdown.wait()
        log.info("stopping")
        systemd.notify("STOPPING=1")
    except Exception:
        log.exception("the daemon failed")
        status = 1
    finally:
        if keeper is not None:
            keeper.cancel()
        started = time.monotonic()
        # Streams end in the app's on_shutdown; the watcher's stop removes its tmux hooks.
        stopping = [runner.cleanup(), _stop_watchers(activity, watcher, agents, alerts)]
        try:
            async with asyncio.timeout(STOP_BUDGET - 0.2):
                results = await asyncio.gather(*stopping, return_exceptions=True)
            for result in results:
                if isinstance(result, BaseException):
                    log.error("error while stopping: %r", result)
        except TimeoutError:
            log.warning("stop took too long; exiting anyway")
        close_listeners(listeners)
        for sig in hooked:
            loop.remove_signal_handler(sig)
        server_log.removeFilter(quiet)
        gc.unfreeze()  # a process that serves again (tests do) collects as before
        stop_s = time.monotonic() - started
        log.info("stopped in %.3f s", stop_s, extra={"stop_s": round(stop_s, 3)})
    return status


__all__ = ["Refused", "default_socket_path", "serve"]
