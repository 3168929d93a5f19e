"""Test support for the HTTP API: hand-built tmux states and a daemon app on a real Unix socket.

No tmux here: a ``Hub`` is fed ``ServerState`` objects built by hand, and the application is
served by ``AppRunner`` + ``UnixSite`` in a short temporary directory (``sun_path`` holds only
108 bytes), reached through ``aiohttp.UnixConnector`` exactly as clients reach the daemon.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

from tmuxlocd.core.layout import pane_rects, parse_layout
from tmuxlocd.core.model import Pane, ServerState, Session, Window, Winlink, sort_winlinks
from tmuxlocd.daemon.api import create_app
from tmuxlocd.daemon.api.server import ApiRunner
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.host.sockets import resolve_server

# The SPEC §3/§4 example window.  The SPEC's string carries checksum b25d, which is not the
# checksum of its body (4c30); it is used as-is where only text matters (the text form), and
# the valid string where neighbours are computed.
SPEC_LAYOUT = "b25d,158x40,0,0{79x40,0,0,3,78x40,80,0,4}"
# Two servers by -L name, and layouts of three panes (%3 | %4 over %5) and of one (%7).
A = resolve_server("tla-alpha")
B = resolve_server("tla-beta")
L3 = "1a1d,158x40,0,0{79x40,0,0,3,78x40,80,0[78x20,80,0,4,78x19,80,21,5]}"
L1 = "b264,80x24,0,0,7"
LAYOUT_2 = "4c30,158x40,0,0{79x40,0,0,3,78x40,80,0,4}"


@dataclass
class Win:
    """One window to build: id, layout (its panes come from the layout), and the rest."""

    id: str
    layout: str
    name: str = "editor"
    zoomed: bool = False
    active_pane: str | None = None  # default: the first pane of the layout
    ttys: Mapping[str, str] = field(default_factory=dict)
    pids: Mapping[str, int] = field(default_factory=dict)
    geometry_of: str | None = None  # take pane rectangles from this layout (SPEC_LAYOUT)


def make_state(
    socket_path: str,
    *,
    pid: int = 4242,
    sessions: Mapping[str, str],
    links: list[tuple[str, str, int, bool]],
    windows: list[Win],
) -> ServerState:
    """A running server: ``sessions`` id -> name, ``links`` (session, window, index, active)."""
    panes: dict[str, Pane] = {}
    wins: dict[str, Window] = {}
    for w in windows:
        rects = pane_rects(parse_layout(w.geometry_of or w.layout))
        ids = [f"%{n}" for n in rects]
        active = w.active_pane or ids[0]
        for index, (number, rect) in enumerate(rects.items()):
            pane_id = f"%{number}"
            panes[pane_id] = Pane(
                id=pane_id,
                window_id=w.id,
                index=index,
                active=pane_id == active,
                tty=w.ttys.get(pane_id, f"/dev/pts/{9000 + number}"),
                pid=w.pids.get(pane_id, 1000 + number),
                left=rect.left,
                top=rect.top,
                width=rect.width,
                height=rect.height,
            )
        wins[w.id] = Window(
            id=w.id, name=w.name, layout=w.layout, zoomed=w.zoomed, active_pane=active
        )
    return ServerState(
        socket_path=socket_path,
        pid=pid,
        running=True,
        sessions={sid: Session(id=sid, name=name, attached=0) for sid, name in sessions.items()},
        winlinks=tuple(
            sort_winlinks(
                Winlink(session_id=s, window_id=w, index=i, active=a) for s, w, i, a in links
            )
        ),
        windows=wins,
        panes=panes,
    )


def spec_state(
    socket_path: str, *, tty3: str = "/dev/pts/5", layout: str = LAYOUT_2, pid3: int = 1234
) -> ServerState:
    """The SPEC example: session $1 "work", window @2 index 1 "editor", panes %3 | %4.
    ``pid3`` is %3's process: a caller on ``tty3`` is in %3 only if it is in that process's
    session or below it (spec §2)."""
    return make_state(
        socket_path,
        sessions={"$1": "work"},
        links=[("$1", "@2", 1, True)],
        windows=[
            Win("@2", layout, ttys={"%3": tty3}, pids={"%3": pid3}, geometry_of=LAYOUT_2),
        ],
    )


class FakeSyncer:
    """The hub's syncer (tmuxlocd.daemon.hub.Syncer) made of two callables, for tests without
    tmux."""

    def __init__(
        self,
        sync: Callable[[str | None], Awaitable[dict[str, str]]] | None = None,
        notify: Callable[[str | None], None] | None = None,
    ) -> None:
        self._sync = sync
        self._notify = notify

    async def sync(self, server: str | None = None) -> dict[str, str]:
        return {} if self._sync is None else await self._sync(server)

    def notify(self, server: str | None = None) -> None:
        if self._notify is not None:
            self._notify(server)


def short_dir() -> str:
    return tempfile.mkdtemp(prefix="tla-", dir="/tmp")


class Api:
    """An app served on a Unix socket, and a client session for it."""

    def __init__(self, hub: Hub, directory: str, **options: Any) -> None:
        self.hub = hub
        self.dir = directory
        self.path = os.path.join(directory, "d.sock")
        self.options = options
        self.app: web.Application | None = None
        self.runner: web.AppRunner | None = None
        self.session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        self.app = create_app(self.hub, **self.options)
        # handler_cancellation as the daemon runs it: a stream ends when its client hangs up.
        self.runner = ApiRunner(
            self.app,
            handle_signals=False,
            access_log=None,
            handler_cancellation=True,
            shutdown_timeout=2.0,
        )
        await self.runner.setup()
        await web.UnixSite(self.runner, self.path).start()
        self.session = aiohttp.ClientSession(connector=aiohttp.UnixConnector(path=self.path))

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.close()
        if self.runner is not None:
            await self.runner.cleanup()

    @property
    def client(self) -> aiohttp.ClientSession:
        assert self.session is not None
        return self.session

    async def get(self, path: str, **kw: Any) -> tuple[int, Any, aiohttp.ClientResponse]:
        async with self.client.get("http://localhost" + path, **kw) as resp:
            body = await resp.read()
            ctype = resp.headers.get("Content-Type", "")
            value: Any = json.loads(body) if ctype.startswith("application/json") else body
            return resp.status, value, resp

    async def post(self, path: str, **kw: Any) -> tuple[int, Any, aiohttp.ClientResponse]:
        async with self.client.post("http://localhost" + path, **kw) as resp:
            body = await resp.read()
            ctype = resp.headers.get("Content-Type", "")
            value: Any = json.loads(body) if ctype.startswith("application/json") else body
            return resp.status, value, resp


@asynccontextmanager
async def serve_api(hub: Hub, **options: Any) -> AsyncIterator[Api]:
    directory = short_dir()
    api = Api(hub, directory, **options)
    await api.start()
    try:
        yield api
    finally:
        await api.stop()
        shutil.rmtree(directory, ignore_errors=True)


class StreamReader:
    """Reads a change stream event by event (SSE or NDJSON) with a deadline per read."""

    def __init__(self, resp: aiohttp.ClientResponse) -> None:
        self.resp = resp
        self.ndjson = resp.headers.get("Content-Type", "").startswith("application/x-ndjson")

    async def raw(self, timeout: float = 5.0) -> dict[str, Any]:
        """The next frame: SSE -> {"id","event","data" (lines),"comment"}; NDJSON -> object."""
        async with asyncio.timeout(timeout):
            if self.ndjson:
                line = await self.resp.content.readline()
                if not line:
                    raise EOFError
                return {"json": json.loads(line)}
            frame: dict[str, Any] = {"data": []}
            while True:
                line = await self.resp.content.readline()
                if not line:
                    raise EOFError
                text = line.decode().rstrip("\n")
                if text == "":
                    if len(frame) > 1 or frame["data"]:
                        return frame
                    continue
                key, _, value = text.partition(":")
                value = value.removeprefix(" ")
                if key == "":
                    frame["comment"] = value
                elif key == "data":
                    frame["data"].append(value)
                else:
                    frame[key] = value

    async def event(self, timeout: float = 5.0, *, skip_heartbeats: bool = True) -> dict[str, Any]:
        """The next event as JSON (heartbeats skipped unless asked)."""
        while True:
            frame = await self.raw(timeout)
            if self.ndjson:
                obj: dict[str, Any] = frame["json"]
                if skip_heartbeats and obj.get("type") == "heartbeat":
                    continue
                return obj
            if "comment" in frame and len(frame) == 2 and not frame["data"]:
                if skip_heartbeats:
                    continue
                return {"type": "heartbeat"}
            obj = json.loads("\n".join(frame["data"]))
            assert obj["id"] == frame["id"], frame
            assert obj["type"] == frame["event"], frame
            return obj

    async def eof(self, timeout: float = 5.0) -> bool:
        async with asyncio.timeout(timeout):
            while True:
                line = await self.resp.content.readline()
                if not line:
                    return True


def curl(path: str, url: str, *extra: str) -> list[str]:
    exe = shutil.which("curl")
    assert exe is not None
    return [
        exe,
        "-s",
        "-o",
        "-",
        "-w",
        "\n%{http_code}",
        "--unix-socket",
        path,
        *extra,
        "http://localhost" + url,
    ]


def run_curl(argv: list[str], **kw: Any) -> tuple[int, bytes]:
    proc = subprocess.run(argv, capture_output=True, timeout=20, check=False, **kw)
    body, _, status = proc.stdout.rpartition(b"\n")
    return int(status or b"0"), body
