"""The daemon's listeners and lifecycle (SPEC §6), with a stand-in for the tmux watcher.

``serve()`` runs in-process where it can (listeners, refusals, TCP token) and as a child
process where the test needs its own signals or inherited file descriptors (SIGTERM,
socket activation).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import resource
import shutil
import signal
import socket
import stat
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.api.apitest import StreamReader, short_dir
from tmuxlocd.core.errors import ConfigError
from tmuxlocd.daemon import serve as daemon
from tmuxlocd.daemon import systemd
from tmuxlocd.daemon import token as token_mod
from tmuxlocd.daemon.config import Config
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.host import linux

ROOT = Path(__file__).resolve().parents[2]


# Small file helpers: the checks are instant, but kept out of the async bodies on principle.
def exists(path: str) -> bool:
    return os.path.exists(path)


def read(path: str) -> str:
    return Path(path).read_text()


def write(path: str, text: str) -> None:
    Path(path).write_text(text)


class FakeWatcher:
    def __init__(self) -> None:
        self.stopped = False

    async def wait_synced(self, timeout: float) -> None:
        return None

    async def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def watchers(monkeypatch: pytest.MonkeyPatch) -> list[FakeWatcher]:
    made: list[FakeWatcher] = []

    async def start(hub: Hub, config: Config) -> FakeWatcher:
        made.append(FakeWatcher())
        return made[-1]

    monkeypatch.setattr(daemon, "start_watcher", start)
    return made


@pytest.fixture
def tmp() -> Iterator[str]:
    directory = short_dir()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


class Running:
    def __init__(self, task: asyncio.Task[int], shutdown: asyncio.Event, names: list[str]):
        self.task = task
        self.shutdown = shutdown
        self.names = names

    async def stop(self) -> int:
        self.shutdown.set()
        return await asyncio.wait_for(self.task, 5)


@contextlib.asynccontextmanager
async def running(config: Config) -> AsyncIterator[Running]:
    shutdown = asyncio.Event()
    ready: asyncio.Future[list[str]] = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(serve_quietly(config, shutdown, ready))
    either: set[asyncio.Future[Any]] = {task, ready}
    done, _ = await asyncio.wait(either, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    assert ready in done, f"the daemon did not start: {task.result() if task.done() else '?'}"
    daemon_ = Running(task, shutdown, ready.result())
    try:
        yield daemon_
    finally:
        if not task.done():
            await daemon_.stop()


async def serve_quietly(
    config: Config, shutdown: asyncio.Event, ready: asyncio.Future[list[str]]
) -> int:
    return await daemon.serve(config, shutdown=shutdown, on_ready=ready.set_result)


async def get(path: str, url: str) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=path)) as session,
        session.get("http://localhost" + url) as resp,
    ):
        return resp.status, await resp.json()


# ------------------------------------------------------------------------------ paths


def test_default_socket_path_on_macos_is_outside_the_reaped_trees() -> None:
    mac = daemon.default_socket_path({"HOME": "/Users/ann"}, platform="darwin")
    assert mac == "/Users/ann/Library/Caches/tmuxlocd/tmuxlocd.sock"
    assert len(mac.encode()) < 104  # macOS's sun_path
    assert daemon.default_socket_path({"TMUXLOCD_SOCKET": "/s"}, platform="darwin") == "/s"


def test_default_socket_path() -> None:
    uid = os.getuid()
    assert daemon.default_socket_path({}) == f"/tmp/tmuxlocd-{uid}/tmuxlocd.sock"
    assert daemon.default_socket_path({"XDG_RUNTIME_DIR": "/run/user/7"}) == (
        "/run/user/7/tmuxlocd/tmuxlocd.sock"
    )
    assert (
        daemon.default_socket_path(
            {"XDG_RUNTIME_DIR": "/run/user/7", "TMUXLOCD_SOCKET": "/x/y.sock"}
        )
        == "/x/y.sock"
    )
    assert daemon.default_socket_path({"TMUXLOCD_SOCKET": "", "XDG_RUNTIME_DIR": ""}) == (
        f"/tmp/tmuxlocd-{uid}/tmuxlocd.sock"
    )


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("unix:/a/b.sock", ("unix", "/a/b.sock", 0)),
        ("tcp:127.0.0.1:80", ("tcp", "127.0.0.1", 80)),
        ("tcp:[::1]:8080", ("tcp", "::1", 8080)),
        ("tcp:localhost:0", ("tcp", "localhost", 0)),
    ],
)
def test_parse_listen(spec: str, parsed: tuple[str, str, int]) -> None:
    assert daemon.parse_listen(spec) == parsed


@pytest.mark.parametrize(
    "spec",
    [
        "",
        "unix:",
        "tcp:",
        "tcp:1",
        "tcp:127.0.0.1:",
        "tcp:127.0.0.1:99999",
        "udp:127.0.0.1:1",
        "/a/b.sock",
        "tcp::80",
        "tcp:127.0.0.1:²",
    ],
)
def test_parse_listen_rejects(spec: str) -> None:
    with pytest.raises(ConfigError):
        daemon.parse_listen(spec)


# ------------------------------------------------------------------------------ Unix listener


async def test_serves_and_stops_cleanly(tmp: str, watchers: list[FakeWatcher]) -> None:
    directory = os.path.join(tmp, "run")
    path = os.path.join(directory, "d.sock")
    async with running(Config(listen=(f"unix:{path}",))) as d:
        assert d.names == [f"unix:{path}"]
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        status, body = await get(path, "/v1/health")
        assert status == 200 and body["status"] == "ok"
        assert await d.stop() == 0
    assert not exists(path)
    assert watchers and watchers[0].stopped


async def test_default_listener_follows_tmuxlocd_socket(
    tmp: str, watchers: list[FakeWatcher], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = os.path.join(tmp, "default.sock")
    monkeypatch.setenv("TMUXLOCD_SOCKET", path)
    async with running(Config()) as d:
        assert d.names == [f"unix:{path}"]
        assert (await get(path, "/v1/health"))[0] == 200


async def test_a_live_socket_is_not_taken_over(
    tmp: str, watchers: list[FakeWatcher], caplog: pytest.LogCaptureFixture
) -> None:
    path = os.path.join(tmp, "d.sock")
    config = Config(listen=(f"unix:{path}",))
    async with running(config):
        with caplog.at_level(logging.ERROR, logger="tmuxlocd.daemon.serve"):
            assert await daemon.serve(config, shutdown=asyncio.Event()) == 1
        assert any(
            "another tmuxlocd is already listening" in r.getMessage() for r in caplog.records
        )
        assert (await get(path, "/v1/health"))[0] == 200  # the first one is untouched


async def test_a_stale_socket_is_replaced(tmp: str, watchers: list[FakeWatcher]) -> None:
    path = os.path.join(tmp, "d.sock")
    with socket.socket(socket.AF_UNIX) as old:
        old.bind(path)  # bound, never listening, closed: nothing answers
    async with running(Config(listen=(f"unix:{path}",))):
        assert (await get(path, "/v1/health"))[0] == 200


async def answers_again(path: str, timeout: float = 10.0) -> int:
    """The status of /v1/health once the daemon answers at ``path`` again (within a deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return (await get(path, "/v1/health"))[0]
        except aiohttp.ClientConnectionError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def test_a_deleted_socket_file_is_bound_again(
    tmp: str, watchers: list[FakeWatcher], caplog: pytest.LogCaptureFixture
) -> None:
    """macOS reaps idle files (and directories) in /tmp and $TMPDIR: a daemon whose socket file
    is gone listens again at the same path, and a connection made before goes on."""
    directory = os.path.join(tmp, "run")
    path = os.path.join(directory, "d.sock")
    async with running(Config(listen=(f"unix:{path}",))) as d:
        async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=path)) as kept:
            async with kept.get("http://localhost/v1/health") as resp:
                assert resp.status == 200
            with caplog.at_level(logging.WARNING, logger="tmuxlocd.daemon.serve"):
                shutil.rmtree(directory)
                assert await answers_again(path) == 200
            assert any("listening again" in r.getMessage() for r in caplog.records)
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700
            async with kept.get("http://localhost/v1/health") as resp:
                assert resp.status == 200  # the keep-alive connection made before
        assert await d.stop() == 0
    assert not exists(path)  # the new file is removed at the stop, as the first would be


async def test_a_socket_file_another_daemon_took_is_left_to_it(
    tmp: str, watchers: list[FakeWatcher], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = os.path.join(tmp, "d.sock")
    checks: list[bool] = []
    real_lost = daemon.lost

    def counted(listener: daemon.Listener) -> bool:
        checks.append(real_lost(listener))
        return checks[-1]

    monkeypatch.setattr(daemon, "lost", counted)
    async with running(Config(listen=(f"unix:{path}",))) as d:
        os.unlink(path)
        with socket.socket(socket.AF_UNIX) as other:
            other.bind(path)
            other.listen(1)
            mine = os.stat(path).st_ino
            # The keeper saw the file change, and looked again after that.
            deadline = time.monotonic() + 10
            while not (True in checks and checks[-1] is False):
                assert time.monotonic() < deadline, "the socket keeper did not run"
                await asyncio.sleep(0.05)
            assert os.stat(path).st_ino == mine
            assert await d.stop() == 0
            assert os.stat(path).st_ino == mine  # not removed at the stop either


async def test_a_file_that_is_not_a_socket_is_left_alone(
    tmp: str, watchers: list[FakeWatcher]
) -> None:
    path = os.path.join(tmp, "d.sock")
    write(path, "mine")
    assert await daemon.serve(Config(listen=(f"unix:{path}",))) == 1
    assert read(path) == "mine"


async def test_unsafe_directories_are_refused(
    tmp: str, watchers: list[FakeWatcher], caplog: pytest.LogCaptureFixture
) -> None:
    directory = os.path.join(tmp, "open")
    os.mkdir(directory)
    os.chmod(directory, 0o777)
    with caplog.at_level(logging.ERROR, logger="tmuxlocd.daemon.serve"):
        assert await daemon.serve(Config(listen=(f"unix:{directory}/d.sock",))) == 1
    assert "writable by group or others" in caplog.text
    os.chmod(directory, 0o720)
    assert await daemon.serve(Config(listen=(f"unix:{directory}/d.sock",))) == 1
    if os.getuid() == 0:
        os.chmod(directory, 0o700)
        os.chown(directory, 65534, 65534)
        assert await daemon.serve(Config(listen=(f"unix:{directory}/d.sock",))) == 1
        assert "owned by uid 65534" in caplog.text
    assert not exists(f"{directory}/d.sock")


# ------------------------------------------------------------------------------ backlog


def test_listen_backlog_is_the_systems_maximum(tmp: str, monkeypatch: pytest.MonkeyPatch) -> None:
    somaxconn = os.path.join(tmp, "somaxconn")
    write(somaxconn, "4096\n")
    monkeypatch.setattr(linux, "SOMAXCONN_PATH", somaxconn)
    assert daemon.listen_backlog() == 4096
    monkeypatch.setattr(linux, "SOMAXCONN_PATH", os.path.join(tmp, "missing"))
    assert daemon.listen_backlog() == socket.SOMAXCONN
    write(somaxconn, "garbage")
    monkeypatch.setattr(linux, "SOMAXCONN_PATH", somaxconn)
    assert daemon.listen_backlog() == socket.SOMAXCONN


BURST = 1000


def burst_connect(path: str, count: int) -> tuple[list[socket.socket], int]:
    """``count`` non-blocking connects back to back, without yielding to the event loop (so
    the daemon, in this very loop, accepts none meanwhile): only its backlog holds them.
    A full backlog refuses a Unix connect with EAGAIN."""
    socks: list[socket.socket] = []
    refused = 0
    for _ in range(count):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(path)
        except BlockingIOError:
            sock.close()
            refused += 1
        else:
            socks.append(sock)
    return socks, refused


async def ask_health(sock: socket.socket) -> int:
    reader, writer = await asyncio.open_unix_connection(sock=sock)
    try:
        writer.write(b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        status_line = await reader.readline()
        await reader.read()
        return int(status_line.split()[1])
    finally:
        writer.close()


async def test_a_thousand_connects_in_one_burst_are_all_served(
    tmp: str, watchers: list[FakeWatcher]
) -> None:
    """After a restart every subscriber reconnects at once (SPEC §10)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 3 * BURST
    if soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"needs {want} file descriptors, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    if daemon.listen_backlog() < BURST:
        pytest.skip(f"net.core.somaxconn is {daemon.listen_backlog()}, below {BURST}")
    path = os.path.join(tmp, "d.sock")
    async with running(Config(listen=(f"unix:{path}",))):
        socks, refused = burst_connect(path, BURST)
        try:
            assert refused == 0, f"{refused} of {BURST} connects refused (backlog full)"
            async with asyncio.timeout(60):
                statuses = await asyncio.gather(*(ask_health(sock) for sock in socks))
        finally:
            for sock in socks:
                sock.close()
        assert statuses == [200] * BURST


# ------------------------------------------------------------------------------ TCP


async def test_tcp_listener_and_its_token(tmp: str, watchers: list[FakeWatcher]) -> None:
    path = os.path.join(tmp, "d.sock")
    async with running(Config(listen=(f"unix:{path}", "tcp:127.0.0.1:0"))) as d:
        assert d.names[0] == f"unix:{path}"
        host_port = d.names[1].removeprefix("tcp:")
        assert host_port.startswith("127.0.0.1:")
        token_file = os.path.join(tmp, "token")
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        token = read(token_file)
        assert len(token) >= 32
        async with aiohttp.ClientSession() as session:
            url = f"http://{host_port}/v1/health"
            async with session.get(url) as resp:
                assert resp.status == 401
            async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as resp:
                assert resp.status == 200
    # Kept across restarts: a client holding it (an SSE client resuming) is let in again.
    assert read(token_file) == token
    async with (
        running(Config(listen=(f"unix:{path}", "tcp:127.0.0.1:0"))) as d,
        aiohttp.ClientSession() as session,
    ):
        url = f"http://{d.names[1].removeprefix('tcp:')}/v1/health"
        async with session.get(url, headers={"Authorization": f"Bearer {token}"}) as resp:
            assert resp.status == 200
    assert read(token_file) == token


async def test_a_rotated_token_takes_effect_at_once(tmp: str, watchers: list[FakeWatcher]) -> None:
    path = os.path.join(tmp, "d.sock")
    async with (
        running(Config(listen=(f"unix:{path}", "tcp:127.0.0.1:0"))) as d,
        aiohttp.ClientSession() as session,
    ):
        url = f"http://{d.names[1].removeprefix('tcp:')}/v1/health"
        old = read(os.path.join(tmp, "token"))
        new = token_mod.write_new_token(tmp)  # what `tmuxlocd token --rotate` does
        assert new != old
        async with session.get(url, headers={"Authorization": f"Bearer {old}"}) as resp:
            assert resp.status == 401
        async with session.get(url, headers={"Authorization": f"Bearer {new}"}) as resp:
            assert resp.status == 200
        # A token file removed (or made untrustworthy) leaves the last good token in force.
        os.unlink(os.path.join(tmp, "token"))
        async with session.get(url, headers={"Authorization": f"Bearer {new}"}) as resp:
            assert resp.status == 200


def test_an_untrustworthy_token_file_is_replaced(tmp: str) -> None:
    path = os.path.join(tmp, "token")
    good, made = token_mod.load_or_make(tmp)
    assert made and token_mod.load_or_make(tmp) == (good, False)
    os.chmod(path, 0o644)  # readable by others: it may have leaked
    fresh, made = token_mod.load_or_make(tmp)
    assert made and fresh != good and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    write(path, "short")
    os.chmod(path, 0o600)
    assert token_mod.load_or_make(tmp)[1]
    # A symlink is never followed, neither to read nor to write.
    target = os.path.join(tmp, "elsewhere")
    write(target, "x" * 40)
    os.chmod(target, 0o600)
    os.unlink(path)
    os.symlink(target, path)
    replaced, made = token_mod.load_or_make(tmp)
    assert made and replaced != "x" * 40 and read(target) == "x" * 40
    assert not os.path.islink(path)


async def test_tcp_only_puts_the_token_beside_the_default_socket(
    tmp: str, watchers: list[FakeWatcher], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUXLOCD_SOCKET", os.path.join(tmp, "sub", "d.sock"))
    async with running(Config(listen=("tcp:[::1]:0",))) as d:
        assert d.names[0].startswith("tcp:[::1]:")
        assert exists(os.path.join(tmp, "sub", "token"))


@pytest.mark.parametrize(
    "spec",
    ["tcp:0.0.0.0:0", "tcp:192.0.2.1:8080", "tcp:[::]:0", "tcp:example.com:80"],
)
async def test_tcp_off_loopback_is_refused(
    spec: str, tmp: str, watchers: list[FakeWatcher], caplog: pytest.LogCaptureFixture
) -> None:
    path = os.path.join(tmp, "d.sock")
    with caplog.at_level(logging.ERROR, logger="tmuxlocd.daemon.serve"):
        assert await daemon.serve(Config(listen=(f"unix:{path}", spec))) == 2
    assert "loopback" in caplog.text
    assert not exists(path)  # the Unix listener opened first was closed again
    assert not watchers


@pytest.mark.parametrize("spec", ["nonsense", "tcp:127.0.0.1", "unix:"])
async def test_bad_listen_addresses(spec: str, watchers: list[FakeWatcher]) -> None:
    assert await daemon.serve(Config(listen=(spec,))) == 2


# ------------------------------------------------------------------------------ systemd


def test_listen_fds_for_another_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LISTEN_PID", str(os.getpid() + 1))
    monkeypatch.setenv("LISTEN_FDS", "1")
    assert systemd.listen_fds() == []
    assert "LISTEN_PID" not in os.environ and "LISTEN_FDS" not in os.environ
    monkeypatch.delenv("LISTEN_PID", raising=False)
    assert systemd.listen_fds() == []


def test_notify(tmp: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NOTIFY_SOCKET", raising=False)
    assert systemd.notify("READY=1") is False
    path = os.path.join(tmp, "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as manager:
        manager.bind(path)
        monkeypatch.setenv("NOTIFY_SOCKET", path)
        assert systemd.notify("READY=1") is True
        assert manager.recv(64) == b"READY=1"
    abstract = f"tmuxlocd-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as manager:
        manager.bind("\0" + abstract)
        monkeypatch.setenv("NOTIFY_SOCKET", "@" + abstract)
        assert systemd.notify("STOPPING=1") is True
        assert manager.recv(64) == b"STOPPING=1"
    monkeypatch.setenv("NOTIFY_SOCKET", os.path.join(tmp, "nobody"))
    assert systemd.notify("READY=1") is False


# A daemon in a child process: serve() with a stand-in watcher (no tmux is touched).
WRAPPER = """
import asyncio, logging, sys
from tmuxlocd.daemon import serve as daemon
from tmuxlocd.daemon.config import Config

class Watcher:
    async def wait_synced(self, timeout):
        return None
    async def stop(self):
        return None

async def start(hub, config):
    return Watcher()

daemon.start_watcher = start
logging.basicConfig(level=logging.INFO)
def ready(names):
    print("READY " + " ".join(names), flush=True)
sys.exit(asyncio.run(daemon.serve(Config(listen=tuple(sys.argv[1:])), on_ready=ready)))
"""


async def start_child(*argv: str, **kw: Any) -> tuple[asyncio.subprocess.Process, list[str]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=ROOT,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        **kw,
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 20)
    if not line.startswith(b"READY "):
        proc.kill()
        _, err = await proc.communicate()
        raise AssertionError(f"the daemon did not start: {line!r} {err.decode()}")
    return proc, line.decode().split()[1:]


# Puts the socket named by argv[1] on fd 3 and names this process in LISTEN_PID, as systemd
# does, then runs WRAPPER.
ACTIVATE = (
    "import os, sys\n"
    "fd = int(sys.argv.pop(1))\n"
    "os.dup2(fd, 3)\n"
    "os.close(fd)\n"
    "os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS='1')\n"
)


async def test_socket_activation_refuses_a_datagram_socket(tmp: str) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            ACTIVATE + WRAPPER,
            str(udp.fileno()),
            pass_fds=(udp.fileno(),),
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 2 and not out
    assert b"not a listening stream socket" in err


async def test_socket_activation(tmp: str) -> None:
    path = os.path.join(tmp, "activated.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    fd = listener.fileno()
    try:
        proc, names = await start_child(
            sys.executable, "-c", ACTIVATE + WRAPPER, str(fd), pass_fds=(fd,)
        )
    finally:
        listener.close()  # the child holds its own copy
    try:
        assert names == [f"unix:{path}"]
        status, _ = await get(path, "/v1/health")
        assert status == 200
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 5) == 0
        # systemd owns an activated socket: the daemon leaves its file alone.
        assert exists(path)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_sigterm_with_open_streams_ends_them_and_stops(tmp: str) -> None:
    """SIGTERM with 50 open streams: the daemon ends each one itself (a complete chunked
    body, where a handler cancelled at aiohttp's shutdown timeout would be cut off), every
    stop step finishes inside its budget (SPEC §6: 2 s; past it the daemon logs "stop took
    too long" and exits anyway), and the socket file goes.  How long it took is printed."""
    path = os.path.join(tmp, "d.sock")
    proc, names = await start_child(sys.executable, "-c", WRAPPER, f"unix:{path}")
    try:
        assert names == [f"unix:{path}"]
        connector = aiohttp.UnixConnector(path=path, limit=0)
        async with aiohttp.ClientSession(connector=connector) as session:
            responses = [await session.get("http://localhost/v1/events") for _ in range(50)]
            readers = [StreamReader(resp) for resp in responses]
            for reader in readers:
                assert (await reader.event())["type"] == "snapshot"
            started = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            for reader in readers:
                assert await reader.eof(timeout=30)
            _, err = await asyncio.wait_for(proc.communicate(), 30)
            elapsed = time.monotonic() - started
            for resp in responses:
                resp.release()
        assert proc.returncode == 0
        log = err.decode()
        assert "stop took too long" not in log, log
        stopped = re.search(r"stopped in ([0-9.]+) s", log)
        assert stopped is not None, log
        print(f"\nstop: {stopped[1]} s in the daemon, {elapsed:.3f} s until the process exited")
        assert not exists(path)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
