"""The rig every measurement stands on: the daemon under test started from this checkout,
the floor app beside it, the probe in a pane, the results, and the split targets.

Below the measurements (``bench.runner``, ``bench.fanout``, ``bench.throughput``,
``bench.profile_daemon``) and the report: none of them imports another through it.
"""

from __future__ import annotations

import asyncio
import compileall
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import procstat
from bench.tmuxfarm import (
    Bus,
    Farm,
    clean_env,
)

REPO = Path(__file__).resolve().parent.parent
EVENTS = "/v1/events?format=ndjson"  # every subscriber's stream: the whole server
# B3's alternative in other sessions: a `run-shell -b` hook at a private index of this one.
B3_HOOK = "window-layout-changed[9]"
# How the B8 floor writes to its streams: through the transport, or with send().
FLOOR_WRITES = ("transport", "send")

# The fields of a Location (SPEC §3), as one display-message / one libtmux read gets them.
SELF_FORMAT = "\t".join(
    f"#{{{f}}}"
    for f in (
        "session_id",
        "session_name",
        "window_id",
        "window_index",
        "window_name",
        "window_active",
        "window_zoomed_flag",
        "window_layout",
        "pane_id",
        "pane_index",
        "pane_active",
        "pane_tty",
        "pane_pid",
        "pane_left",
        "pane_top",
        "pane_width",
        "pane_height",
    )
)


@dataclass
class Results:
    """Everything measured: named series per pane count, and single facts."""

    series: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)

    def add(self, name: str, panes: int, values: list[float]) -> None:
        self.series.setdefault(name, {}).setdefault(panes, []).extend(values)

    def get(self, name: str, panes: int) -> list[float]:
        return self.series.get(name, {}).get(panes, [])


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- building blocks


class Gate:
    """Counts outstanding hits; set when every armed tap has seen its line."""

    def __init__(self) -> None:
        self.left = 0
        self.event = asyncio.Event()

    def add(self) -> None:
        self.left += 1
        self.event.clear()

    def done_one(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.event.set()

    async def wait(self, timeout: float) -> bool:
        if self.left <= 0:
            return True
        try:
            await asyncio.wait_for(self.event.wait(), timeout)
        except TimeoutError:
            return False
        return True


class Tap:
    """Watches one line source for the first line matching a predicate, and when it came.

    The check runs in the source's data callback, so waiting for 100 subscribers costs one
    predicate call per line, not a scan of everything on every wake-up."""

    def __init__(self) -> None:
        self.pred: Callable[[bytes], bool] | None = None
        self.hit: float | None = None
        self.gate: Gate | None = None

    def arm(self, pred: Callable[[bytes], bool], gate: Gate) -> None:
        self.pred, self.hit, self.gate = pred, None, gate
        gate.add()

    def disarm(self) -> None:
        self.pred = None

    def see(self, t: float, line: bytes) -> None:
        if self.pred is not None and self.pred(line):
            self.pred = None
            self.hit = t
            assert self.gate is not None
            self.gate.done_one()


class FifoReader:
    """The read end of a FIFO that a ``run-shell -b`` hook writes to."""

    def __init__(self, path: Path, bus: Bus, on_line: Callable[[float, bytes], None]) -> None:
        os.mkfifo(path)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        # Our own write end keeps the FIFO from reporting EOF between hook jobs.
        self.keep = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        self.bus, self.on_line = bus, on_line
        self.count = 0
        asyncio.get_running_loop().add_reader(self.fd, self._read)

    def _read(self) -> None:
        now = time.perf_counter()
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return
        for line in data.splitlines():
            self.count += 1
            self.on_line(now, line)
        self.bus.notify()

    def close(self) -> None:
        asyncio.get_running_loop().remove_reader(self.fd)
        os.close(self.fd)
        os.close(self.keep)


class ProbeLink:
    """The control connection to ``bench.client_probe`` running in a pane."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.hello: dict[str, Any] = {}
        self._conn: asyncio.Future[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = (
            asyncio.get_running_loop().create_future()
        )
        self._server: asyncio.Server | None = None

    async def listen(self) -> None:
        async def on_conn(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            if not self._conn.done():
                self._conn.set_result((r, w))

        self._server = await asyncio.start_unix_server(on_conn, self.path, limit=64 << 20)

    async def connected(self, timeout: float) -> None:
        reader, _ = await asyncio.wait_for(asyncio.shield(self._conn), timeout)
        self.hello = json.loads(await asyncio.wait_for(reader.readline(), timeout))

    async def job(self, kind: str, timeout: float = 600.0, **args: Any) -> dict[str, Any]:
        reader, writer = await self._conn
        writer.write(json.dumps({"kind": kind, **args}).encode() + b"\n")
        line = await asyncio.wait_for(reader.readline(), timeout)
        if not line:
            raise RuntimeError("the probe went away")
        result: dict[str, Any] = json.loads(line)
        if not result.get("ok"):
            raise RuntimeError(f"probe job {kind} failed:\n{result.get('error')}")
        return result

    async def close(self) -> None:
        if self._conn.done():
            _, writer = self._conn.result()
            writer.close()
        if self._server is not None:
            self._server.close()


def compile_package() -> None:
    """The bytecode of the daemon's own modules, written next to them (checked by mtime, so
    cheap after the first call).  An installed daemon starts from its bytecode, and a checkout
    does from its second start on, unless ``PYTHONDONTWRITEBYTECODE`` is set: then every start
    compiles each module from source again, which no restart of an installed daemon pays
    (a start at 1,000 panes, until ready: 0.54 to 0.63 s without the bytecode, 0.45 s with)."""
    compileall.compile_dir(str(REPO / "tmuxlocd"), quiet=1)


class Daemon:
    """``python -m tmuxlocd serve`` on one private server, as its own process."""

    def __init__(
        self,
        farm: Farm,
        extra_args: tuple[str, ...] = (),
        *,
        name: str = "d",
        env: dict[str, str] | None = None,
    ) -> None:
        self.farm = farm
        self.extra_args = extra_args
        self.socket = str(farm.dir / name / "d.sock")
        self.log_path = farm.dir / ("daemon.log" if name == "d" else f"daemon-{name}.log")
        self.env = env or {}
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, timeout: float = 120.0) -> None:
        compile_package()
        errlog = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tmuxlocd",
                "serve",
                "-S",
                self.farm.socket,
                "--listen",
                f"unix:{self.socket}",
                *self.extra_args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errlog,
                env={**clean_env(), **self.env},
                cwd=str(REPO),
            )
        finally:
            os.close(errlog)
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.returncode is not None:
                raise RuntimeError(f"the daemon exited ({self.proc.returncode}):\n{self.tail()}")
            with contextlib.suppress(OSError, ValueError, asyncio.IncompleteReadError):
                health = await http_json(self.socket, "/v1/health")
                servers = health.get("servers", [])
                if (
                    servers
                    and servers[0].get("observer") == "attached"
                    and servers[0].get("panes") == self.farm.total
                ):
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"the daemon did not get ready:\n{self.tail()}")
            await asyncio.sleep(0.05)

    def tail(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-3000:]
        except OSError:
            return ""

    def cpu(self) -> tuple[float, float]:
        return procstat.tree_cpu_seconds(self.pid)

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.proc.wait(), 10)
        except TimeoutError:
            self.proc.kill()
            await self.proc.wait()


class Floor:
    """``bench.floor_app``: the minimal aiohttp app with a body of the daemon's size."""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def __init__(self, directory: Path, size: int) -> None:
        self.socket = str(directory / "floor.sock")
        self.size = size
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.floor_app",
            "--path",
            self.socket,
            "--size",
            str(self.size),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            env=clean_env(),
            cwd=str(REPO),
        )
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), 30)
        if line.strip() != b"ready":
            raise RuntimeError("the floor app did not start")

    async def stop(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 10)
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()


async def http_json(socket_path: str, target: str, method: str = "GET") -> Any:
    """One request on a fresh connection, for control of the run (not measured)."""
    reader, writer = await asyncio.open_unix_connection(socket_path)
    try:
        writer.write(
            f"{method} {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
            "Content-Length: 0\r\n\r\n".encode()
        )
        raw = await asyncio.wait_for(reader.read(), 30)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise ValueError(head.split(b"\r\n")[0].decode())
    return json.loads(body)


def observer_session(farm: Farm, daemon: Daemon) -> str:
    """The session the daemon's control client is attached to."""
    mine = set(procstat.descendants(daemon.pid))
    out = farm.run("list-clients", "-F", "#{client_control_mode} #{client_pid} #{session_id}")
    for line in out.splitlines():
        mode, pid, sid = line.split(" ", 2)
        if mode == "1" and int(pid) in mine:
            return sid
    raise RuntimeError(f"no control client of the daemon in list-clients:\n{out}")


@dataclass
class Targets:
    """Where splits happen: a pane in the observer's session, and one in another session."""

    attached_pane: str
    attached_window: str
    attached_session: str
    other_pane: str
    other_window: str
    other_session: str


def pick_targets(farm: Farm, attached_session: str) -> Targets:
    panes = [p for p in farm.panes() if p["window_name"] != "probe"]
    att = next(p for p in panes if p["session_id"] == attached_session)
    oth = next(p for p in panes if p["session_id"] != attached_session)
    return Targets(
        att["pane_id"],
        att["window_id"],
        att["session_id"],
        oth["pane_id"],
        oth["window_id"],
        oth["session_id"],
    )


def sched_per_change(
    res: Results, name: str, panes: int, pid: int, before: tuple[float, float], n: int
) -> None:
    """``pid``'s time on a CPU and runnable but waiting for one since ``before``, per change
    of ``n`` splits and their kills (``{name} on-cpu``, ``{name} runnable``).  With the
    latency beside it this says what a change's delay was made of on this machine: the
    process's own work, or its turn on a CPU while tmux and the readers had theirs."""
    run, wait = procstat.sched_seconds(pid)
    changes = 2 * n
    res.add(f"{name} on-cpu", panes, [(run - before[0]) / changes])
    res.add(f"{name} runnable", panes, [(wait - before[1]) / changes])


def machine_facts(tmux: str) -> dict[str, Any]:
    """What a result was measured on: tmux, Python, cores, when, and which daemon (the
    commit, and whether its package had local changes).  Every results file states these."""
    facts: dict[str, Any] = {
        "tmux": subprocess.run(
            [tmux, "-V"], capture_output=True, text=True, check=True
        ).stdout.strip(),
        "python": sys.version.split()[0],
        "cores": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
    }
    git = shutil.which("git")
    if git is not None:

        def out(*args: str) -> str:
            run = subprocess.run(
                [git, *args], cwd=REPO, capture_output=True, text=True, check=False
            )
            return run.stdout.strip()

        head = out("rev-parse", "--short", "HEAD")
        if head:
            dirty = out("status", "--porcelain", "--", "tmuxlocd")
            facts["commit"] = head + (" (tmuxlocd/ with local changes)" if dirty else "")
    return facts
