"""Model-based random operation of tmux against a running tmuxlocd, and the tools for it.

A seeded random walk applies tmux operations (splits, kills, resizes, layouts, swaps, breaks
and joins across sessions, window moves, links and swaps, hostile renames, respawns, zoom,
new and killed sessions and windows, processes dying by themselves) to 2-3 sessions of a
private tmux server watched by a daemon started as ``python -m tmuxlocd serve``.  After each
step it calls the ``POST /v1/sync`` barrier and checks, against tmux's own ``list-sessions``,
``list-windows -a`` and ``list-panes -a``:

* ``GET /v1/tree`` (sessions, windows, panes, every field);
* a subscriber's NDJSON stream, replayed event by event onto its first snapshot (each event
  checked as it arrives: ids increase, no event for an unchanged pane, ``changed`` names
  exactly the fields that changed, removals carry the last Location);
* now and then ``GET /v1/panes`` (the API's own listing equals the replayed stream) and the
  neighbours, recomputed from tmux's pane geometry.

Some steps skip the barrier and wait (on the condition, with a deadline) for the daemon to
catch up by itself: notifications, hooks and the digest must bring every change.

By hand: ``python -m tests.soak --steps 10000 --seed N`` (``--minutes M`` bounds the time);
``--chaos RATE`` runs it with the control connection broken at random (tests/chaos.py).
The tests in ``tests/integration`` import the pieces: ``Daemon``, ``Stream``, ``read_truth``,
``Walk``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
import traceback
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

from tests import tmuxbin
from tests.tmuxtest import kill_leftovers, start_time, wait_until
from tmuxlocd.core.errors import LayoutError
from tmuxlocd.core.events import Event, event_decoder, event_type, pane_key
from tmuxlocd.core.layout import pane_rects, parse_layout
from tmuxlocd.core.location import Location, changed_fields
from tmuxlocd.core.names import unvis
from tmuxlocd.daemon.control import reap

REPO = Path(__file__).resolve().parent.parent
TMUX = tmuxbin.choose()  # $TMUXLOCD_TEST_TMUX, else PATH (by hand as under pytest)
BASE = "http://tmuxlocd"


# ----------------------------------------------------------------------------------------------
# tmux, from the outside (never the default server: every call names a private socket).


def tmux_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}


async def tmux(socket_path: str, *args: str, timeout: float = 20.0) -> tuple[int, str, str]:
    """One tmux client run (``-u``: names as UTF-8 whatever the locale)."""
    assert TMUX is not None
    proc = await asyncio.create_subprocess_exec(
        TMUX,
        "-u",
        "-S",
        socket_path,
        "-f",
        os.devnull,
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=tmux_env(),
    )
    try:
        async with asyncio.timeout(timeout):
            out, err = await proc.communicate()
    except TimeoutError:
        # A stuck server holds the client's pipes (tmux hands them over): reap() closes them
        # from our side, where a bare wait() would wait for ever.
        await reap(proc)
        raise
    assert proc.returncode is not None
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


async def tmux_ok(socket_path: str, *args: str) -> str:
    rc, out, err = await tmux(socket_path, *args)
    if rc != 0:
        raise RuntimeError(f"tmux {' '.join(args)} failed: {err.strip()}")
    return out


class Server:
    """A private tmux server (``-S`` under a short temp dir); killed by ``kill()``."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="tls-", dir="/tmp"))
        self.socket_path = str(self.dir / f"t{uuid.uuid4().hex[:8]}")
        self.last_pid: int | None = None  # the server's pid when last seen
        self.pids: dict[int, int] = {}  # every server started here: pid -> start time
        self.killed: list[int] = []  # pids that had to be SIGKILLed at teardown

    async def start(self, session: str = "A", width: int = 160, height: int = 48) -> None:
        await tmux_ok(
            self.socket_path,
            *tmuxbin.before_new_session(),
            "new-session",
            "-d",
            "-s",
            session,
            "-x",
            str(width),
            "-y",
            str(height),
            ";",
            "set-option",
            "-g",
            "automatic-rename",
            "off",
            ";",
            "set-option",
            "-gw",
            "automatic-rename",
            "off",
            ";",
            "set-option",
            "-g",
            "default-shell",
            "/bin/sh",
            ";",
            "set-option",
            "-g",
            "exit-empty",
            "on",
        )
        # Its pid, right away: a server that later spins with its socket gone can only be
        # found (and killed at teardown) this way.
        pid = await self.pid()
        started = start_time(pid) if pid is not None else None
        if pid is not None and started is not None:
            self.pids[pid] = started
            self.last_pid = pid

    async def pid(self) -> int | None:
        rc, out, _ = await tmux(self.socket_path, "display-message", "-p", "#{pid}")
        return int(out.strip()) if rc == 0 and out.strip().isdigit() else None

    def kill(self) -> None:
        """``kill-server``, then SIGKILL whatever server of ours survived it (by the pids
        recorded at start and the private socket on its command line)."""
        import subprocess

        try:
            if TMUX is not None and os.path.exists(self.socket_path):
                try:
                    subprocess.run(
                        [TMUX, "-S", self.socket_path, "kill-server"],
                        capture_output=True,
                        env=tmux_env(),
                        timeout=5,
                        check=False,
                        stdin=subprocess.DEVNULL,
                    )
                except subprocess.TimeoutExpired:
                    pass  # a server stuck in a loop answers nothing: killed below
            self.killed += kill_leftovers(self.socket_path, self.pids)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)

    def sigkill(self) -> None:
        """SIGKILL the running server (as a user would one that hangs): the pids recorded at
        start, and the one last seen (a server the walk's own `new-session` started)."""
        if self.last_pid is not None and self.last_pid not in self.pids:
            started_last = start_time(self.last_pid)
            if started_last is not None:
                self.pids[self.last_pid] = started_last
        for pid, started in list(self.pids.items()):
            if start_time(pid) == started:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


# ----------------------------------------------------------------------------------------------
# What tmux says (the truth), and the same shapes from what the daemon says.

# Rows start with a tag no name can guess: a window name given with `new-window -n` is stored
# raw, and may hold a LF that splits its row (the next line then does not start with a tag).
_TAG = uuid.uuid4().hex[:12]
_F_S = "S\t#{session_id}\t#{session_name}"
_F_W = (
    "W\t#{session_id}\t#{window_id}\t#{window_index}\t#{window_active}\t#{window_zoomed_flag}"
    "\t#{remain-on-exit}\t#{window_layout}\t#{window_name}"
)
_F_P = (
    "P\t#{window_id}\t#{pane_id}\t#{pane_index}\t#{pane_active}\t#{pane_tty}\t#{pane_pid}"
    "\t#{pane_left}\t#{pane_top}\t#{pane_width}\t#{pane_height}\t#{pane_dead}"
)

PaneFacts = tuple[str, int, bool, str, int, int, int, int, int, bool]
LocTuple = tuple[Any, ...]


def _id_number(ident: str) -> int:
    return int(ident[1:])


@dataclass
class Truth:
    pid: int | None
    sessions: dict[str, str]  # id -> decoded name
    links: list[tuple[str, int, str, bool]]  # (session id, index, window id, active)
    windows: dict[str, tuple[str, str, bool, bool]]  # id -> (name, layout, zoomed, remain)
    panes: dict[str, PaneFacts]  # id -> (window, index, active, tty, pid, l, t, w, h, dead)

    def links_of(self, wid: str) -> list[tuple[str, int, bool]]:
        return sorted(
            ((s, i, a) for s, i, w, a in self.links if w == wid),
            key=lambda x: (_id_number(x[0]), x[1]),
        )

    def panes_of(self, wid: str) -> list[str]:
        return sorted(
            (p for p, f in self.panes.items() if f[0] == wid), key=lambda p: self.panes[p][1]
        )

    def session_links(self, sid: str) -> list[tuple[int, str]]:
        return sorted((i, w) for s, i, w, _ in self.links if s == sid)

    def locations(self) -> dict[str, LocTuple]:
        """pane id -> the Location fields we check (the home session has the lowest id)."""
        out: dict[str, LocTuple] = {}
        for pid, (wid, index, active, tty, ppid, left, top, width, height, _) in self.panes.items():
            links = self.links_of(wid)
            if not links:
                continue
            (sid, windex, wactive), others = links[0], links[1:]
            name, layout, zoomed, _ = self.windows[wid]
            out[pid] = (
                sid,
                self.sessions[sid],
                wid,
                windex,
                wactive,
                name,
                zoomed,
                layout,
                index,
                active,
                tty,
                ppid,
                left,
                top,
                width,
                height,
                tuple((s, self.sessions[s], i) for s, i, _ in others),
            )
        return out

    def tree(self) -> dict[str, Any]:
        """As /v1/tree shows it, flat: "$S" -> name, "$S:I" -> the window there and its panes."""
        out: dict[str, Any] = dict(self.sessions)
        for sid, index, wid, active in self.links:
            wname, layout, zoomed, _ = self.windows[wid]
            panes = tuple((p, *self.panes[p][1:9]) for p in self.panes_of(wid))
            out[f"{sid}:{index}"] = (wid, wname, active, zoomed, layout, panes)
        return out


def window_name(stored: str) -> str:
    """tmux vis-encodes names it is given by rename-window, never leaving a raw control
    character; a name with one was stored raw (new-window -n) and is the name itself."""
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in stored):
        return stored
    return unvis(stored)


_OUTPUT_DOLLAR_3_4 = re.compile(r"\\(?=\$[A-Za-z_{])")


async def read_truth(socket_path: str) -> Truth | None:
    """tmux's own view, in one client run; None if the server is not there."""
    rc, out, _ = await tmux(
        socket_path,
        "display-message",
        "-p",
        _TAG + "X\t#{pid}\t#{version}",
        ";",
        "list-sessions",
        "-F",
        _TAG + _F_S,
        ";",
        "list-windows",
        "-a",
        "-F",
        _TAG + _F_W,
        ";",
        "list-panes",
        "-a",
        "-F",
        _TAG + _F_P,
    )
    if rc != 0:
        return None
    rows: list[str] = []
    for line in out.split("\n")[:-1]:
        if line.startswith(_TAG):
            rows.append(line[len(_TAG) :])
        elif rows:
            rows[-1] += "\n" + line
        else:
            raise AssertionError(f"unexpected line from tmux: {line!r}")
    # tmux 3.4 (only) adds a backslash before each `$` that precedes a letter, `_` or `{`,
    # in all command output: the names are read as tmux stored them once that is taken off.
    if rows and rows[0].startswith("X\t") and rows[0].split("\t")[-1] == "3.4":
        rows = [_OUTPUT_DOLLAR_3_4.sub("", row) for row in rows]
    pid: int | None = None
    sessions: dict[str, str] = {}
    links: list[tuple[str, int, str, bool]] = []
    windows: dict[str, tuple[str, str, bool, bool]] = {}
    panes: dict[str, PaneFacts] = {}
    for line in rows:
        parts = line.split("\t", 8)
        tag = parts[0]
        if tag == "X":
            pid = int(parts[1])  # then the version
        elif tag == "S":
            sessions[parts[1]] = unvis(line.split("\t", 2)[2])
        elif tag == "W":
            _, sid, wid, index, active, zoomed, remain, layout, name = parts
            links.append((sid, int(index), wid, active == "1"))
            windows[wid] = (window_name(name), layout, zoomed == "1", remain == "on")
        elif tag == "P":
            _, wid, pid_, index, active, tty, ppid, left, top, width, height, dead = line.split(
                "\t"
            )
            panes[pid_] = (
                wid,
                int(index),
                active == "1",
                tty,
                int(ppid or 0),
                int(left),
                int(top),
                int(width),
                int(height),
                dead == "1",
            )
        else:
            raise AssertionError(f"unexpected line from tmux: {line!r}")
    return Truth(pid, sessions, links, windows, panes)


def loc_tuple(loc: Location) -> LocTuple:
    s, w, p = loc.session, loc.window, loc.pane
    return (
        s.id,
        s.name,
        w.id,
        w.index,
        w.active,
        w.name,
        w.zoomed,
        w.layout,
        p.index,
        p.active,
        p.tty,
        p.pid,
        p.left,
        p.top,
        p.width,
        p.height,
        tuple((link.session_id, link.session_name, link.window_index) for link in loc.links),
    )


def api_tree(tree: Mapping[str, Any], socket_path: str) -> tuple[bool, int | None, dict[str, Any]]:
    """(running, pid, sessions) of one server in a /v1/tree answer, shaped as Truth.tree()."""
    for server in tree["servers"]:
        if server["socket_path"] != socket_path:
            continue
        out: dict[str, Any] = {}
        for s in server["sessions"]:
            out[s["id"]] = s["name"]
            for w in s["windows"]:
                panes = tuple(
                    (
                        p["id"],
                        p["index"],
                        p["active"],
                        p["tty"],
                        p["pid"],
                        p["left"],
                        p["top"],
                        p["width"],
                        p["height"],
                    )
                    for p in sorted(w["panes"], key=lambda p: p["index"])
                )
                key = f"{s['id']}:{w['index']}"
                if key in out:
                    raise AssertionError(f"/v1/tree lists {key} twice")
                out[key] = (w["id"], w["name"], w["active"], w["zoomed"], w["layout"], panes)
        return server["running"], server["pid"], out
    raise AssertionError(f"server {socket_path} missing from /v1/tree")


def describe_diff(want: Mapping[str, Any], got: Mapping[str, Any], limit: int = 6) -> str:
    """A short account of how two maps differ (for failure messages)."""
    lines = []
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    if missing:
        lines.append(f"missing: {missing[:limit]}")
    if extra:
        lines.append(f"unexpected: {extra[:limit]}")
    for key in sorted(set(want) & set(got)):
        if want[key] != got[key]:
            lines.append(f"{key}: tmux {want[key]!r}\n{' ' * len(key)}  daemon {got[key]!r}")
            if len(lines) >= limit:
                break
    return "\n".join(lines) or "(equal)"


def geometry_neighbors(truth: Truth, wid: str) -> dict[str, dict[str, dict[str, int]]]:
    """Each pane's neighbours from tmux's pane geometry (unzoomed windows only)."""
    ids = truth.panes_of(wid)
    rect = {p: truth.panes[p][5:9] for p in ids}
    out: dict[str, dict[str, dict[str, int]]] = {}
    for a in ids:
        al, at, aw, ah = rect[a]
        dirs: dict[str, dict[str, int]] = {"above": {}, "below": {}, "left": {}, "right": {}}
        for b in ids:
            if a == b:
                continue
            bl, bt, bw, bh = rect[b]
            horizontal = min(al + aw, bl + bw) - max(al, bl)
            vertical = min(at + ah, bt + bh) - max(at, bt)
            if bt + bh + 1 == at and horizontal > 0:
                dirs["above"][b] = horizontal
            if at + ah + 1 == bt and horizontal > 0:
                dirs["below"][b] = horizontal
            if bl + bw + 1 == al and vertical > 0:
                dirs["left"][b] = vertical
            if al + aw + 1 == bl and vertical > 0:
                dirs["right"][b] = vertical
        out[a] = dirs
    return out


LAYOUT_DISAGREEMENTS: list[str] = []  # tmux's layout string vs its own pane geometry


def layout_agrees(truth: Truth, wid: str) -> bool:
    """Does tmux's window_layout place each pane where its pane_left/top/width/height say?
    SPEC §3 computes neighbours from the layout, so where tmux itself disagrees the
    geometry cannot judge them."""
    try:
        rects = pane_rects(parse_layout(truth.windows[wid][1]))
    except LayoutError:
        return False
    for pane in truth.panes_of(wid):
        r = rects.get(int(pane[1:]))
        if r is None or (r.left, r.top, r.width, r.height) != truth.panes[pane][5:9]:
            LAYOUT_DISAGREEMENTS.append(
                f"{wid} {truth.windows[wid][1]}: {pane} at {truth.panes[pane][5:9]}, layout {r}"
            )
            return False
    return True


def check_neighbors(truth: Truth, replica: Mapping[str, Location]) -> list[str]:
    problems: list[str] = []
    by_id = {loc.pane.id: loc for loc in replica.values()}
    for wid, (_, _, zoomed, _) in truth.windows.items():
        if zoomed:
            continue  # pane geometry is the zoomed one there; the layout is not
        if not layout_agrees(truth, wid):
            continue
        for pane, dirs in geometry_neighbors(truth, wid).items():
            loc = by_id.get(pane)
            if loc is None:
                continue
            for d, shared in dirs.items():
                got = list(getattr(loc.neighbors, d))
                if set(got) != set(shared):
                    problems.append(f"{pane} {d}: geometry {sorted(shared)}, daemon {got}")
                elif [shared[g] for g in got] != sorted(shared.values(), reverse=True):
                    problems.append(f"{pane} {d}: not largest shared first: {got} {shared}")
    return problems


# ----------------------------------------------------------------------------------------------
# The daemon, as a subprocess, and HTTP to it.


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Daemon:
    """``python -m tmuxlocd serve -S ... --listen unix:...``, its log in a file."""

    def __init__(
        self,
        servers: Iterable[str],
        directory: str | None = None,
        extra: Iterable[str] = (),
        nofile: int | None = None,
        path: str | None = None,
    ) -> None:
        self.dir = directory or tempfile.mkdtemp(prefix="tld-", dir="/tmp")
        self.sock = os.path.join(self.dir, "d.sock")
        self.log_path = os.path.join(self.dir, "daemon.log")
        self.servers = list(servers)
        self.extra = list(extra)
        self.nofile = nofile  # the daemon's soft RLIMIT_NOFILE (None: inherited)
        self.path = path  # the daemon's PATH (None: inherited), e.g. a wrapped tmux first
        self.proc: asyncio.subprocess.Process | None = None
        self.session: aiohttp.ClientSession | None = None
        self.starts = 0

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def start(self, timeout: float = 20.0) -> None:
        argv = [sys.executable, "-m", "tmuxlocd", "serve", "--listen", f"unix:{self.sock}"]
        for s in self.servers:
            argv += ["-S", s]
        argv += self.extra
        env = tmux_env()
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
        env.pop("TMUXLOCD_SOCKET", None)
        if self.path is not None:
            env["PATH"] = self.path
        log = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        nofile = self.nofile

        def limit() -> None:
            if nofile is not None:
                import resource

                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, hard))

        try:
            self.proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                env=env,
                cwd=str(REPO),
                start_new_session=True,
                preexec_fn=limit if nofile is not None else None,
            )
        finally:
            os.close(log)
        self.starts += 1
        if self.session is not None:
            await self.session.close()
        self.session = aiohttp.ClientSession(
            connector=aiohttp.UnixConnector(path=self.sock, limit=0),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=5),
        )
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.returncode is not None:
                raise AssertionError(f"daemon exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                status, _ = await self.get("/v1/health", timeout=2.0)
                if status == 200:
                    return
            except (aiohttp.ClientError, OSError, TimeoutError):
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"daemon did not answer in {timeout} s:\n{self.log_tail()}")
            await asyncio.sleep(0.02)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    def rss_kib(self) -> int:
        return rss_kib(self.pid)

    def log_tail(self, lines: int = 40) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return "(no log)"

    def log_errors(self) -> list[str]:
        """Each ERROR (or traceback) in the log, with the lines that explain it."""
        blocks: list[str] = []
        lines = self.log_text().splitlines()
        i = 0
        while i < len(lines):
            if " ERROR " in lines[i] or lines[i].startswith("Traceback"):
                j = i + 1
                while j < len(lines) and j - i < 40 and not lines[j][:4].isdigit():
                    j += 1
                blocks.append("\n".join(lines[i:j]))
                i = j
            else:
                i += 1
        return blocks

    def log_text(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    async def kill(self) -> None:
        """SIGKILL, as a crash would."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()

    async def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM and wait; the exit status."""
        if self.session is not None:
            await self.session.close()
            self.session = None
        if self.proc is None:
            return None
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(timeout):
                    await self.proc.wait()
            except TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        return self.proc.returncode

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def http(self) -> aiohttp.ClientSession:
        assert self.session is not None
        return self.session

    async def request(
        self, method: str, path: str, *, timeout: float = 20.0, **kw: Any
    ) -> tuple[int, Any]:
        async with self.http.request(
            method, BASE + path, timeout=aiohttp.ClientTimeout(total=timeout), **kw
        ) as resp:
            body = await resp.read()
            if resp.headers.get("Content-Type", "").startswith("application/json") and body:
                return resp.status, json.loads(body)
            return resp.status, body

    async def get(self, path: str, **kw: Any) -> tuple[int, Any]:
        return await self.request("GET", path, **kw)

    async def sync(self) -> str:
        status, body = await self.request("POST", "/v1/sync")
        assert status == 200, (status, body)
        seq: str = body["seq"]
        return seq

    async def tree(self) -> Any:
        status, body = await self.get("/v1/tree")
        assert status == 200, (status, body)
        return body

    async def health(self) -> Any:
        status, body = await self.get("/v1/health")
        assert status == 200, (status, body)
        return body


def seq_of(ident: str) -> tuple[str, int]:
    instance, _, number = ident.rpartition(":")
    return instance, int(number)


class Stream:
    """An NDJSON subscriber that replays every event onto its snapshot and checks each one.

    ``replica`` is the subscriber's view (pane key -> Location); ``problems`` lists every
    event that broke a rule of SPEC §5.  After the connection ends, ``reconnect()`` resumes
    with ``Last-Event-ID``.
    """

    def __init__(self, daemon: Daemon, params: Mapping[str, str] | None = None) -> None:
        self.daemon = daemon
        self.params = {"format": "ndjson", **(params or {})}
        # A session-scoped stream tells a pane leaving the session once, with its new
        # Location, and then nothing more of it: a client drops it then, and so do we.
        session = self.params.get("session")
        self.keep: Callable[[Location], bool] | None = None
        if session is not None:
            self.keep = lambda loc: (
                loc.session.id == session or any(link.session_id == session for link in loc.links)
            )
        self.replica: dict[str, Location] = {}
        self.problems: list[str] = []
        self.types: collections.Counter[str] = collections.Counter()
        self.instance = ""
        self.last_seq = -1
        self.last_id: str | None = None
        self.need_snapshot = True
        self.down: set[str] = set()
        self.entered = 0
        self.first_types: list[str] = []  # types since the last (re)connect
        self.ended = asyncio.Event()
        self.progress = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._resp: aiohttp.ClientResponse | None = None

    async def open(self, last_event_id: str | None = None) -> None:
        headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
        resp = await self.daemon.http.get(
            BASE + "/v1/events",
            params=self.params,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=None, sock_read=None),
        )
        if resp.status != 200:
            body = await resp.read()
            resp.release()
            raise AssertionError(f"/v1/events answered {resp.status}: {body[:300]!r}")
        self._resp = resp
        self.ended.clear()
        self.first_types = []
        # A resume within the instance goes on from where it was; anything else must start
        # with a snapshot (a resume across instances gets `reset` first, which asks for one).
        self.need_snapshot = last_event_id is None
        self._task = asyncio.create_task(self._read(resp))

    async def reconnect(self) -> None:
        await self.close()
        await self.open(self.last_id)

    async def _read(self, resp: aiohttp.ClientResponse) -> None:
        buf = b""
        try:
            async for chunk in resp.content.iter_any():
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    if line:
                        self.handle(line)
                self.progress.set()
        except (aiohttp.ClientError, ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.ended.set()
            self.progress.set()

    def handle(self, line: bytes) -> None:
        raw = msgspec.json.decode(line)
        if raw.get("type") == "heartbeat":
            self.types["heartbeat"] += 1
            return
        event: Event = event_decoder.decode(line)
        kind = event_type(event)
        self.types[kind] += 1
        if len(self.first_types) < 8:
            self.first_types.append(kind)
        instance, seq = seq_of(event.id)
        marker = kind in ("snapshot", "reset", "lagged")
        if instance != self.instance:
            if kind not in ("snapshot", "reset"):
                self.problems.append(f"{event.id}: new instance starts with {kind}")
            self.instance, self.last_seq = instance, -1
        elif marker and seq < self.last_seq:
            self.problems.append(f"{event.id}: {kind} id went back from {self.last_seq}")
        elif not marker and seq <= self.last_seq:
            self.problems.append(f"{event.id}: {kind} id not above {self.last_seq}")
        self.last_seq = max(self.last_seq, seq)
        self.last_id = event.id
        if kind in ("reset", "lagged"):
            self.need_snapshot = True
            return
        if kind == "snapshot":
            self.need_snapshot = False
            self.replica = {
                pane_key(loc.server.socket_path, loc.pane.id): loc
                for loc in event.panes  # type: ignore[union-attr]
            }
            return
        if self.need_snapshot:
            self.problems.append(f"{event.id}: {kind} before any snapshot")
        self.apply(event, kind)

    def apply(self, event: Any, kind: str) -> None:
        if kind == "pane.added":
            loc = event.location
            key = pane_key(loc.server.socket_path, loc.pane.id)
            if key in self.replica:
                self.problems.append(f"{event.id}: pane.added for known {key}")
            self.replica[key] = loc
        elif kind == "pane.changed":
            loc = event.location
            key = pane_key(loc.server.socket_path, loc.pane.id)
            old = self.replica.get(key)
            if old is None and self.keep is not None:
                self.entered += 1  # a pane entering a scoped selection comes as a change
            elif old is None:
                self.problems.append(f"{event.id}: pane.changed for unknown {key}")
            elif old == loc:
                self.problems.append(f"{event.id}: pane.changed with nothing changed ({key})")
            elif tuple(changed_fields(old, loc)) != tuple(event.changed):
                self.problems.append(
                    f"{event.id}: changed {event.changed} but {changed_fields(old, loc)} differ"
                )
            self.replica[key] = loc
            if self.keep is not None and not self.keep(loc):
                del self.replica[key]
        elif kind == "pane.removed":
            key = pane_key(event.server, event.pane)
            old = self.replica.pop(key, None)
            if old is None:
                self.problems.append(f"{event.id}: pane.removed for unknown {key}")
            elif old != event.last and "min_interval_ms" not in self.params:
                # (With min_interval_ms, `last` is where the pane really was last, which may
                # be a change the interval merged away.)
                self.problems.append(f"{event.id}: pane.removed's last differs from ours")
        elif kind == "server.down":
            path = event.server.socket_path
            self.down.add(path)
            left = [k for k in self.replica if k.startswith(path + " ")]
            if left:
                self.problems.append(f"{event.id}: server.down with panes left: {left[:3]}")
        elif kind == "server.up":
            self.down.discard(event.server.socket_path)

    def reached(self, ident: str) -> bool:
        instance, seq = seq_of(ident)
        return self.instance == instance and self.last_seq >= seq and not self.need_snapshot

    async def wait_for(self, ident: str, timeout: float = 10.0) -> None:
        """Until the stream has every event up to ``ident`` (a /v1/sync answer)."""
        deadline = time.monotonic() + timeout
        while not self.reached(ident):
            if self.ended.is_set():
                raise AssertionError(f"stream ended before {ident} (at {self.last_id})")
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(
                    f"stream did not reach {ident} in {timeout} s (at {self.last_id})"
                )
            self.progress.clear()
            try:
                async with asyncio.timeout(min(left, 0.5)):
                    await self.progress.wait()
            except TimeoutError:
                pass

    def locations(self, socket_path: str) -> dict[str, Location]:
        prefix = socket_path + " "
        return {k[len(prefix) :]: v for k, v in self.replica.items() if k.startswith(prefix)}

    async def close(self) -> None:
        if self._resp is not None:
            self._resp.close()
            self._resp = None
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None


async def check_against_tmux(
    daemon: Daemon,
    stream: Stream | None,
    socket_path: str,
    *,
    barrier: bool = True,
    panes_listing: bool = False,
    neighbors: bool = False,
    scoped: tuple[Stream, str] | None = None,
    coalesced: Stream | None = None,
) -> Truth | None:
    """One full comparison (raises AssertionError with the difference).

    ``scoped`` is a stream opened with ``?session=<id>`` and that id: its replay, less the
    panes that left the session (told once, with their new Location), must be exactly the
    panes tmux has in that session (its own windows and those linked into it).
    """
    seq = await daemon.sync() if barrier else None
    truth = await read_truth(socket_path)
    tree = await daemon.tree()
    running, pid, sessions = api_tree(tree, socket_path)
    if truth is None:
        assert not running and sessions == {}, f"server gone but /v1/tree shows {sessions}"
    else:
        assert running, "server running but /v1/tree says not"
        assert pid == truth.pid, f"server pid {pid}, tmux says {truth.pid}"
        want = truth.tree()
        assert sessions == want, "/v1/tree differs from tmux:\n" + describe_diff(want, sessions)
    if stream is not None and seq is not None:
        await stream.wait_for(seq)
        assert not stream.problems, "stream broke the rules:\n" + "\n".join(stream.problems[:10])
        mine = {k: loc_tuple(v) for k, v in stream.locations(socket_path).items()}
        want_locs = truth.locations() if truth is not None else {}
        assert mine == want_locs, (
            "events replayed onto the snapshot differ from tmux:\n" + describe_diff(want_locs, mine)
        )
        if panes_listing:
            status, body = await daemon.get("/v1/panes", params={"limit": "1000"})
            assert status == 200, body
            listed = {
                p["pane"]["id"]: p
                for p in body["panes"]
                if p["server"]["socket_path"] == socket_path
            }
            replica = {
                k: json.loads(msgspec.json.encode(v))
                for k, v in stream.locations(socket_path).items()
            }
            assert listed == replica, "/v1/panes differs from the stream:\n" + describe_diff(
                replica, listed
            )
        if neighbors and truth is not None:
            problems = check_neighbors(truth, stream.locations(socket_path))
            assert not problems, "neighbours differ from tmux geometry:\n" + "\n".join(
                problems[:10]
            )
    if scoped is not None and seq is not None:
        sub, sid = scoped
        want_in = {
            k: v
            for k, v in (truth.locations() if truth else {}).items()
            if v[0] == sid or any(link[0] == sid for link in v[16])
        }

        def replayed() -> dict[str, LocTuple]:
            return {k: loc_tuple(v) for k, v in sub.locations(socket_path).items()}

        # A filtered stream's ids skip what it was not sent, so the barrier's id cannot tell
        # when it has everything: wait (with a deadline) for it to agree.
        try:
            await wait_until(lambda: replayed() == want_in, 5, "the session stream")
        except AssertionError:
            raise AssertionError(
                f"the stream of session {sid}, replayed, differs from tmux:\n"
                + describe_diff(want_in, replayed())
            ) from None
        assert not sub.problems, "scoped stream broke the rules:\n" + "\n".join(sub.problems)
    if coalesced is not None and seq is not None:
        want_all = truth.locations() if truth else {}

        def merged() -> dict[str, LocTuple]:
            return {k: loc_tuple(v) for k, v in coalesced.locations(socket_path).items()}

        # Its events come at most one per pane per interval, the latest state at the end of
        # each: once the interval has passed it must agree.
        try:
            await wait_until(lambda: merged() == want_all, 5, "the min_interval_ms stream")
        except AssertionError:
            raise AssertionError(
                "the min_interval_ms stream, replayed, differs from tmux:\n"
                + describe_diff(want_all, merged())
            ) from None
        assert not coalesced.problems, "min_interval_ms stream broke the rules:\n" + "\n".join(
            coalesced.problems
        )
    return truth


# ----------------------------------------------------------------------------------------------
# The random walk.

# Names that have broken programs before: shell and JSON metacharacters, control characters
# and escape sequences, non-ASCII, bytes that are not UTF-8 (as surrogates, which become the
# raw bytes in argv), look-alikes of tmux ids, and length.  No '#' (tmux would format-expand
# it, and '#()' runs a shell) and no trailing ';' (tmux would take it as a separator).
NAME_PARTS = [
    "tab\there",
    "nl\nhere",
    "cr\rhere",
    '"dq"',
    "'sq'",
    "$HOME",
    "${x}",
    "$1",
    "日本語",
    "ü",
    "😀",
    "\x1b[31mred\x1b[0m",
    "\x1b]0;title\x07",
    "\x1b[2J\x1b[H",
    "back\\slash",
    "\\033",
    "\\n",
    "\udcff\udcfe",
    "\udcc3(",
    "\x7f",
    "\x85",
    "\u2028",
    "\u202e",
    "a;b",
    "%1",
    "@2",
    "$3",
    "x" * 1024,
    "日" * 400,
    " ",
    "  lead",
    "{}",
    "[]",
    "\\",
    "\x01\x02",
    "null\\0",
    "plain",
    "w",
]


def hostile_name(rng: random.Random) -> str:
    parts = rng.sample(NAME_PARTS, rng.choice((1, 1, 2, 3)))
    name = "".join(parts)
    if name.endswith(";"):
        name += "x"
    return name


@dataclass
class Op:
    name: str
    argv: list[str]
    destructive: bool = False
    # For operations whose effect lands after the command returns (a process exiting): the
    # condition on tmux's view that says it has landed.
    settled: Callable[[Truth | None], bool] | None = None
    kill_pid: int | None = None  # a pane process to SIGKILL instead of running tmux


@dataclass
class Stats:
    steps: int = 0
    commands: int = 0
    ops: collections.Counter[str] = field(default_factory=collections.Counter)
    failed: collections.Counter[str] = field(default_factory=collections.Counter)
    barrier_checks: int = 0
    quiet_checks: int = 0
    panes_listings: int = 0
    neighbor_checks: int = 0
    server_restarts: int = 0
    scoped_streams: int = 1  # session-scoped streams checked, one after another
    crashes: list[str] = field(default_factory=list)  # what ran just before tmux died
    max_panes: int = 0
    names_tried: int = 0

    def summary(self) -> str:
        lines = [
            (
                f"steps {self.steps}, tmux commands {self.commands}, barrier checks "
                f"{self.barrier_checks}, quiet checks {self.quiet_checks}, /v1/panes checks "
                f"{self.panes_listings}, neighbour checks {self.neighbor_checks}, hostile "
                f"names {self.names_tried}, tmux crashes/hangs survived {self.server_restarts}, "
                f"most panes {self.max_panes}, session streams {self.scoped_streams}"
            ),
            "operations (ok/refused by tmux): "
            + ", ".join(
                f"{k} {self.ops[k] - self.failed[k]}/{self.failed[k]}" for k in sorted(self.ops)
            ),
        ]
        return "\n".join(lines)


class Walk:
    """The random walk over one private server, checked against one daemon and stream."""

    MAX_PANES = 28
    HANG_S = 8.0  # a tmux command this slow means the server is stuck (a tmux bug)
    QUIET_SHARE = 0.1  # steps that wait for the daemon without the barrier

    def __init__(
        self,
        server: Server,
        daemon: Daemon,
        stream: Stream,
        seed: int,
        scoped: tuple[Stream, str] | None = None,
        coalesced: Stream | None = None,
    ) -> None:
        self.server = server
        self.daemon = daemon
        self.stream = stream
        self.scoped = scoped  # a stream of one session, and that session's id
        self.coalesced = coalesced  # a stream with ?min_interval_ms
        self.seed = seed
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.recent: collections.deque[str] = collections.deque(maxlen=25)
        self.truth: Truth | None = None
        self.session_counter = 0
        self.report: Callable[[str], None] | None = None
        self.hung = False

    @property
    def sock(self) -> str:
        return self.server.socket_path

    # -------------------------------------------------------------- choosing

    def _pane(self) -> str:
        assert self.truth is not None
        return self.rng.choice(sorted(self.truth.panes))

    def _window(self) -> str:
        assert self.truth is not None
        return self.rng.choice(sorted(self.truth.windows))

    def _session(self) -> str:
        assert self.truth is not None
        return self.rng.choice(sorted(self.truth.sessions))

    def _winlink(self) -> tuple[str, int, str]:
        assert self.truth is not None
        sid, index, wid, _ = self.rng.choice(self.truth.links)
        return sid, index, wid

    def _survivors(
        self,
        windows: frozenset[str] | set[str] = frozenset(),
        links: frozenset[tuple[str, int]] | set[tuple[str, int]] = frozenset(),
        sessions: frozenset[str] | set[str] = frozenset(),
    ) -> int:
        """How many sessions are left after removing these windows, winlinks and sessions."""
        assert self.truth is not None
        left = 0
        for sid in self.truth.sessions:
            if sid in sessions:
                continue
            if any(
                w not in windows and (sid, i) not in links for i, w in self.truth.session_links(sid)
            ):
                left += 1
        return left

    def _pane_gone_kills_window(self, pane: str) -> set[str]:
        assert self.truth is not None
        wid = self.truth.panes[pane][0]
        return {wid} if len(self.truth.panes_of(wid)) == 1 else set()

    def choose(self) -> Op | None:
        assert self.truth is not None
        t = self.truth
        rng = self.rng
        n_panes = len(t.panes)
        n_sessions = len(t.sessions)
        split_weight = 0 if n_panes >= self.MAX_PANES else 14
        kill_weight = 4 + (8 if n_panes > 20 else 0)
        table: list[tuple[int, Callable[[], Op | None]]] = [
            (split_weight, self.op_split),
            (kill_weight, self.op_kill_pane),
            (5, self.op_resize),
            (3, self.op_zoom),
            (4, self.op_select_pane),
            (4, self.op_layout),
            (5, self.op_swap_pane),
            (4, self.op_break_pane),
            (5, self.op_join_pane),
            (4, self.op_move_window),
            (3, self.op_link_window),
            (2, self.op_unlink_window),
            (4, self.op_swap_window),
            (4, self.op_rename_window),
            (3, self.op_rename_session),
            (3, self.op_respawn),
            (2, self.op_exit),
            (1, self.op_remain_on_exit),
            (8 if n_sessions < 2 else 2 if n_sessions < 3 else 0, self.op_new_session),
            (2 if n_sessions > 2 else 0, self.op_kill_session),
            (0 if n_panes >= self.MAX_PANES else 5, self.op_new_window),
            (3, self.op_kill_window),
            (2, self.op_select_window),
            (2, self.op_resize_window),
            (2, self.op_rotate),
            (1, self.op_renumber),
        ]
        weights = [w for w, _ in table]
        for _ in range(20):
            make = rng.choices([f for _, f in table], weights)[0]
            op = make()
            if op is not None:
                return op
        return None

    # -------------------------------------------------------------- operations

    def op_split(self) -> Op:
        rng = self.rng
        argv = ["split-window"]
        argv += rng.sample(["-d", "-h", "-b", "-f"], rng.randint(0, 2))
        if rng.random() < 0.3:
            argv += ["-l", str(rng.randint(1, 20))]
        return Op("split-window", [*argv, "-t", self._pane()])

    def op_kill_pane(self) -> Op | None:
        pane = self._pane()
        if self.rng.random() < 0.15:
            return Op("kill-pane -a", ["kill-pane", "-a", "-t", pane], destructive=True)
        if not self._survivors(windows=self._pane_gone_kills_window(pane)):
            return None
        return Op("kill-pane", ["kill-pane", "-t", pane], destructive=True)

    def op_resize(self) -> Op:
        rng = self.rng
        how = rng.choice(
            [
                ["-x", str(rng.randint(1, 120))],
                ["-y", str(rng.randint(1, 40))],
                [rng.choice(["-L", "-R", "-U", "-D"]), str(rng.randint(1, 15))],
            ]
        )
        return Op("resize-pane", ["resize-pane", "-t", self._pane(), *how])

    def op_zoom(self) -> Op:
        return Op("zoom", ["resize-pane", "-Z", "-t", self._pane()])

    def op_select_pane(self) -> Op:
        if self.rng.random() < 0.3:
            d = self.rng.choice(["-L", "-R", "-U", "-D"])
            return Op("select-pane dir", ["select-pane", d, "-t", self._pane()])
        return Op("select-pane", ["select-pane", "-t", self._pane()])

    def op_layout(self) -> Op:
        layout = self.rng.choice(
            ["even-horizontal", "even-vertical", "main-horizontal", "main-vertical", "tiled"]
        )
        return Op("select-layout", ["select-layout", "-t", self._window(), layout])

    def op_swap_pane(self) -> Op:
        if self.rng.random() < 0.25:
            d = self.rng.choice(["-U", "-D"])
            return Op("swap-pane -U/-D", ["swap-pane", d, "-t", self._pane()])
        flags = ["-d"] if self.rng.random() < 0.5 else []
        return Op("swap-pane", ["swap-pane", *flags, "-s", self._pane(), "-t", self._pane()])

    def op_break_pane(self) -> Op:
        argv = ["break-pane"]
        if self.rng.random() < 0.5:
            argv.append("-d")
        argv += ["-s", self._pane()]
        if self.rng.random() < 0.6:
            argv += ["-t", self._session() + ":"]
        return Op("break-pane", argv)

    def op_join_pane(self) -> Op:
        argv = ["join-pane"]
        argv += self.rng.sample(["-d", "-h", "-b"], self.rng.randint(0, 2))
        return Op("join-pane", [*argv, "-s", self._pane(), "-t", self._pane()])

    def op_move_window(self) -> Op:
        sid, index, _ = self._winlink()
        dest = self._session()
        target = f"{dest}:" if self.rng.random() < 0.5 else f"{dest}:{self.rng.randint(0, 9)}"
        flags = ["-d"] if self.rng.random() < 0.5 else []
        return Op("move-window", ["move-window", *flags, "-s", f"{sid}:{index}", "-t", target])

    def op_link_window(self) -> Op:
        sid, index, _ = self._winlink()
        dest = self._session()
        target = f"{dest}:" if self.rng.random() < 0.5 else f"{dest}:{self.rng.randint(0, 9)}"
        flags = ["-d"] if self.rng.random() < 0.5 else []
        return Op("link-window", ["link-window", *flags, "-s", f"{sid}:{index}", "-t", target])

    def op_unlink_window(self) -> Op | None:
        sid, index, _ = self._winlink()
        if not self._survivors(links={(sid, index)}):
            return None
        return Op("unlink-window", ["unlink-window", "-t", f"{sid}:{index}"], destructive=True)

    def op_swap_window(self) -> Op:
        a, b = self._winlink(), self._winlink()
        flags = ["-d"] if self.rng.random() < 0.5 else []
        return Op(
            "swap-window" + (" -d" if flags else ""),
            ["swap-window", *flags, "-s", f"{a[0]}:{a[1]}", "-t", f"{b[0]}:{b[1]}"],
        )

    def op_rename_window(self) -> Op:
        self.stats.names_tried += 1
        return Op(
            "rename-window", ["rename-window", "-t", self._window(), "--", hostile_name(self.rng)]
        )

    def op_rename_session(self) -> Op:
        self.stats.names_tried += 1
        return Op(
            "rename-session",
            ["rename-session", "-t", self._session(), "--", hostile_name(self.rng)],
        )

    def op_respawn(self) -> Op:
        return Op("respawn-pane -k", ["respawn-pane", "-k", "-t", self._pane()])

    def op_exit(self) -> Op | None:
        """A pane's process ends by itself (exits, or is killed): nobody is told but hooks."""
        assert self.truth is not None
        pane = self._pane()
        wid = self.truth.panes[pane][0]
        remain = self.truth.windows[wid][3]
        if not remain and not self._survivors(windows=self._pane_gone_kills_window(pane)):
            return None
        old_pid = self.truth.panes[pane][4]

        def settled(t: Truth | None) -> bool:
            if t is None:
                return True
            facts = t.panes.get(pane)
            return facts is None or facts[9] or facts[4] != old_pid

        if self.rng.random() < 0.5 and old_pid > 0 and not self.truth.panes[pane][9]:
            return Op(
                "pane process killed", [], destructive=True, settled=settled, kill_pid=old_pid
            )

        def exited(t: Truth | None) -> bool:
            if t is None:
                return True
            facts = t.panes.get(pane)
            return facts is None or facts[9]

        return Op(
            "pane process exits",
            ["respawn-pane", "-k", "-t", pane, "exit 3"],
            destructive=True,
            settled=exited,
        )

    def op_remain_on_exit(self) -> Op:
        value = self.rng.choice(["on", "off"])
        return Op(
            "remain-on-exit", ["set-option", "-w", "-t", self._window(), "remain-on-exit", value]
        )

    def op_new_session(self) -> Op:
        self.session_counter += 1
        name = f"s{self.session_counter}"
        if self.rng.random() < 0.4:
            self.stats.names_tried += 1
            name = hostile_name(self.rng) + name
        w, h = self.rng.randint(40, 200), self.rng.randint(12, 60)
        argv = ["new-session", "-d", "-s", name, "-x", str(w), "-y", str(h)]
        if self.rng.random() < 0.3:
            self.stats.names_tried += 1
            argv += ["-n", hostile_name(self.rng)]
        return Op("new-session", argv)

    def op_kill_session(self) -> Op | None:
        sid = self._session()
        if not self._survivors(sessions={sid}):
            return None
        return Op("kill-session", ["kill-session", "-t", sid], destructive=True)

    def op_new_window(self) -> Op:
        sid = self._session()
        argv = ["new-window"]
        if self.rng.random() < 0.5:
            argv.append("-d")
        if self.rng.random() < 0.3:
            self.stats.names_tried += 1
            argv += ["-n", hostile_name(self.rng)]
        target = f"{sid}:" if self.rng.random() < 0.6 else f"{sid}:{self.rng.randint(0, 9)}"
        return Op("new-window", [*argv, "-t", target])

    def op_kill_window(self) -> Op | None:
        wid = self._window()
        if not self._survivors(windows={wid}):
            return None
        return Op("kill-window", ["kill-window", "-t", wid], destructive=True)

    def op_select_window(self) -> Op:
        sid, index, _ = self._winlink()
        return Op("select-window", ["select-window", "-t", f"{sid}:{index}"])

    def op_resize_window(self) -> Op:
        rng = self.rng
        if rng.random() < 0.2:
            return Op("resize-window -A", ["resize-window", "-A", "-t", self._window()])
        return Op(
            "resize-window",
            [
                "resize-window",
                "-t",
                self._window(),
                "-x",
                str(rng.randint(20, 220)),
                "-y",
                str(rng.randint(8, 70)),
            ],
        )

    def op_rotate(self) -> Op:
        if self.rng.random() < 0.5:
            return Op("next-layout", ["next-layout", "-t", self._window()])
        flags = ["-D"] if self.rng.random() < 0.5 else []
        return Op("rotate-window", ["rotate-window", *flags, "-t", self._window()])

    def op_renumber(self) -> Op:
        sid = self._session()
        if self.rng.random() < 0.5:
            return Op("move-window -r", ["move-window", "-r", "-t", sid])
        value = self.rng.choice(["on", "off"])
        return Op("renumber-windows", ["set-option", "-t", sid, "renumber-windows", value])

    # -------------------------------------------------------------- stepping

    async def begin(self) -> None:
        self.truth = await check_against_tmux(
            self.daemon, self.stream, self.sock, panes_listing=True, neighbors=True
        )
        self.server.last_pid = self.truth.pid if self.truth else None

    async def run_op(self, ops: list[Op]) -> None:
        self.stats.ops.update(op.name for op in ops)
        self.recent.append(
            " ; ".join(
                op.name + (f" (kill {op.kill_pid})" if op.kill_pid else f" {op.argv!r}")
                for op in ops
            )
        )
        if ops[0].kill_pid is not None:
            try:
                os.kill(ops[0].kill_pid, signal.SIGKILL)
            except ProcessLookupError:
                self.stats.failed[ops[0].name] += 1
            return
        argv: list[str] = []
        for op in ops:
            if argv:
                argv.append(";")
            argv += op.argv
        self.stats.commands += len(ops)
        try:
            rc, _, err = await tmux(self.sock, *argv, timeout=self.HANG_S)
        except TimeoutError:
            self.hung = True
            return
        if rc != 0:
            # A chain stops at its first refusal; it is counted against the last op, as
            # which one tmux refused is not told apart here.
            self.stats.failed[ops[-1].name] += 1
            self.recent.append(f"  refused: {err.strip()[:120]}")

    async def step(self) -> None:
        assert self.truth is not None
        first = self.choose()
        if first is None:
            return
        ops = [first]
        # Bursts: several commands in one tmux client run (one command queue, no gaps),
        # destructive ones always alone so the guard above stays exact.
        if not first.destructive and first.kill_pid is None and self.rng.random() < 0.25:
            for _ in range(self.rng.randint(1, 3)):
                more = self.choose()
                if more is None or more.destructive or more.kill_pid is not None:
                    break
                ops.append(more)
        await self.run_op(ops)
        self.stats.steps += 1
        try:
            if not self.hung:
                settled = ops[0].settled
                if settled is not None:

                    async def landed() -> bool:
                        return settled(await read_truth(self.sock))

                    await wait_until(landed, 10, f"{ops[0].name} to land in tmux")
                now = await read_truth(self.sock)
                if now is None:
                    await self.server_died("crashed")
                    return
                self.server.last_pid = now.pid
        except TimeoutError:
            self.hung = True
        if self.hung:
            # tmux 3.3a can spin forever on some sequences, with or without a control client.
            # The daemon must not hang with it: kill the server, as a user would.
            self.server.sigkill()
            await self.server_died("hung")
            return
        quiet = self.rng.random() < self.QUIET_SHARE
        if quiet:
            self.stats.quiet_checks += 1
            await self.wait_converged()
        listing = self.stats.steps % 10 == 0
        neighbors = self.stats.steps % 5 == 0
        self.truth = await check_against_tmux(
            self.daemon,
            self.stream,
            self.sock,
            panes_listing=listing,
            neighbors=neighbors,
            scoped=self.scoped,
            coalesced=self.coalesced if listing else None,
        )
        self.stats.barrier_checks += 1
        await self.follow_a_session()
        self.stats.panes_listings += listing
        self.stats.neighbor_checks += neighbors
        if self.truth is not None:
            self.stats.max_panes = max(self.stats.max_panes, len(self.truth.panes))
            self.server.last_pid = self.truth.pid

    async def follow_a_session(self) -> None:
        """Once the followed session is gone, follow another (a new scoped stream)."""
        if self.scoped is None or self.truth is None or self.scoped[1] in self.truth.sessions:
            return
        await self.scoped[0].close()
        sid = self.rng.choice(sorted(self.truth.sessions))
        stream = Stream(self.daemon, {"session": sid})
        await stream.open()
        self.scoped = (stream, sid)
        self.stats.scoped_streams += 1

    async def wait_converged(self, timeout: float = 6.0) -> None:
        """Without the barrier: notifications, hooks and the digest must bring it all."""

        async def same() -> bool:
            truth = await read_truth(self.sock)
            if truth is None:
                return False
            _, _, sessions = api_tree(await self.daemon.tree(), self.sock)
            return sessions == truth.tree()

        try:
            await wait_until(same, timeout, "the daemon to catch up without /v1/sync")
        except AssertionError:
            truth = await read_truth(self.sock)
            _, _, sessions = api_tree(await self.daemon.tree(), self.sock)
            want = truth.tree() if truth else {}
            raise AssertionError(
                f"not caught up within {timeout} s without the barrier:\n"
                + describe_diff(want, sessions)
            ) from None

    async def server_died(self, how: str) -> None:
        """The server crashed or hung (tmux bugs; see docs/reliability.md): check the daemon
        reported it down, start it again, and check the daemon has it right again."""
        self.hung = False
        self.stats.server_restarts += 1
        self.stats.crashes.append(f"{how} after:\n  " + "\n  ".join(list(self.recent)[-3:]))
        if self.report is not None:
            self.report(f"tmux server {self.stats.crashes[-1]}")
        await wait_until(self._down_seen, 15, "server.down on the stream")
        _, _, sessions = api_tree(await self.daemon.tree(), self.sock)
        assert sessions == {}, f"server down but /v1/tree still has {sorted(sessions)[:5]}"
        assert self.daemon.alive()
        await self.server.start("A")
        self.truth = await check_against_tmux(self.daemon, self.stream, self.sock)
        self.server.last_pid = self.truth.pid if self.truth else None

    def _down_seen(self) -> bool:
        return self.sock in self.stream.down

    def failure(self, step: int, exc: BaseException) -> str:
        return (
            f"random walk failed at step {step} (seed {self.seed}; rerun with "
            f"TMUXLOCD_SEED={self.seed})\nlast operations, oldest first:\n  "
            + "\n  ".join(self.recent)
            + f"\n{exc}"
        )

    async def run(
        self, steps: int, deadline: float | None = None, report: Callable[[str], None] | None = None
    ) -> None:
        self.report = report
        await self.begin()
        for i in range(steps):
            if deadline is not None and time.monotonic() > deadline:
                break
            try:
                await self.step()
            except AssertionError as exc:
                raise AssertionError(self.failure(i, exc)) from None
            if report is not None and (i + 1) % 500 == 0:
                report(
                    f"step {i + 1}: {self.stats.steps} steps, daemon RSS "
                    f"{self.daemon.rss_kib()} KiB, events {sum(self.stream.types.values())}"
                )


async def start_walk(seed: int) -> tuple[Server, Daemon, Stream, Walk]:
    server = Server()
    await server.start("A")
    await tmux_ok(server.socket_path, "new-session", "-d", "-s", "B", "-x", "120", "-y", "40")
    daemon = Daemon([server.socket_path])
    await daemon.start()
    stream = Stream(daemon)
    await stream.open()
    scoped = Stream(daemon, {"session": "$1"})
    await scoped.open()
    coalesced = Stream(daemon, {"min_interval_ms": "250"})
    await coalesced.open()
    return server, daemon, stream, Walk(server, daemon, stream, seed, (scoped, "$1"), coalesced)


async def stop_walk(
    server: Server, daemon: Daemon, stream: Stream, walk: Walk | None = None
) -> None:
    if walk is not None and walk.scoped is not None:
        await walk.scoped[0].close()
    if walk is not None and walk.coalesced is not None:
        await walk.coalesced.close()
    await stream.close()
    await daemon.stop()
    server.kill()
    daemon.cleanup()


def seed_from_env(default: int | None = None) -> int:
    value = os.environ.get("TMUXLOCD_SEED")
    if value:
        return int(value)
    return default if default is not None else random.randrange(1 << 32)


# ----------------------------------------------------------------------------------------------
# By hand.


async def soak(steps: int, seed: int, minutes: float | None) -> int:
    started = time.monotonic()
    deadline = started + minutes * 60 if minutes else None
    server, daemon, stream, walk = await start_walk(seed)
    rss0 = daemon.rss_kib()
    status = 0
    try:
        await walk.run(steps, deadline, report=lambda s: print(s, flush=True))
    except AssertionError as exc:
        print(f"FAILED: {exc}", flush=True)
        print("daemon log tail:\n" + daemon.log_tail(), flush=True)
        status = 1
    except Exception:  # noqa: BLE001 -- report any failure with the seed that reproduces it
        traceback.print_exc()
        print(walk.failure(walk.stats.steps, RuntimeError("error above")), flush=True)
        status = 1
    elapsed = time.monotonic() - started
    alive = daemon.alive()
    rss1 = daemon.rss_kib() if alive else 0
    errors = daemon.log_errors()
    print(f"seed {seed}: {walk.stats.summary()}")
    if LAYOUT_DISAGREEMENTS:
        print(
            f"tmux's layout disagreed with its pane geometry {len(LAYOUT_DISAGREEMENTS)} "
            f"times (neighbours not judged there), e.g. {LAYOUT_DISAGREEMENTS[0]}"
        )
    print(
        f"elapsed {elapsed:.0f} s ({walk.stats.steps / max(elapsed, 1e-9):.1f} steps/s); "
        f"daemon alive {alive}, RSS {rss0} -> {rss1} KiB; stream events "
        f"{dict(stream.types)}; stream problems {len(stream.problems)}; "
        f"daemon log errors {len(errors)}"
    )
    for line in errors[:10]:
        print("  " + line)
    await stop_walk(server, daemon, stream, walk)
    return 1 if status or errors or not alive else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.soak",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--minutes", type=float, default=None, help="stop after this long even if steps remain"
    )
    parser.add_argument(
        "--chaos",
        type=float,
        default=None,
        metavar="RATE",
        help="break this share of the control connection's replies "
        "(tests/chaos.py), checking recovery every 50 steps",
    )
    ns = parser.parse_args(argv)
    if TMUX is None:
        print("needs tmux", file=sys.stderr)
        return 2
    seed = ns.seed if ns.seed is not None else seed_from_env()
    print(f"seed {seed}", flush=True)
    if ns.chaos is not None:
        from tests import chaos

        return asyncio.run(chaos.soak(ns.steps, seed, ns.chaos))
    return asyncio.run(soak(ns.steps, seed, ns.minutes))


if __name__ == "__main__":
    raise SystemExit(main())
