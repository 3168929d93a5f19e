"""A pane's death under remain-on-exit: from the process's end to a subscriber's word.

``python -m bench.pane_death [--deaths 50] [--tmux-versions system,3.2a,3.7c] [--out FILE]``

Per tmux version: a private server (``remain-on-exit on``), a daemon, one NDJSON change
stream over the server.  Each death is a new window in the session the daemon's control
client is not attached to, running ``read x; exit 3``; once the stream has the pane, the
bench holds a pidfd on its process (the kernel's word on the end) and types Enter.  The time
is from that pidfd turning readable to the stream's ``pane.changed`` showing the pane dead
with ``exit_status`` 3 (no sync asked).  A death not shown with its status within
``LIMIT_S`` is counted as missing its status.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from bench.stats import percentile

LIMIT_S = 5.0
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tmuxlocd" / "tmux"


def tmux_binary(version: str) -> str:
    if version == "system":
        found = shutil.which("tmux")
        if found is None:
            raise SystemExit("no tmux on PATH")
        return found
    matches = sorted(CACHE.glob(f"{version}*/bin/tmux"))
    if not matches:
        raise SystemExit(f"tmux {version} is not built (.ci/build-tmux {version})")
    return str(matches[0])


class Server:
    def __init__(self, tmux: str, root: Path) -> None:
        self.tmux = tmux
        sockdir = root / f"tmux-{os.getuid()}"
        sockdir.mkdir(mode=0o700)
        self.socket = str(sockdir / "bench")

    def run(self, *args: str) -> str:
        out = subprocess.run(
            [self.tmux, "-S", self.socket, "-f", os.devnull, *args],
            capture_output=True,
            text=True,
            check=True,
            timeout=20,
        )
        return out.stdout.strip()


async def measure(server: Server, daemon_sock: str, deaths: int) -> tuple[list[float], int, str]:
    times: list[float] = []
    first: dict[str, bool] = {}  # pane -> its death's first word had the status
    conn = aiohttp.UnixConnector(path=daemon_sock, limit=0)
    async with aiohttp.ClientSession(
        connector=conn, base_url="http://localhost", timeout=aiohttp.ClientTimeout(None)
    ) as http:
        for _ in range(200):
            try:
                async with http.get("/v1/health") as r:
                    if r.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
        seen: dict[str, tuple[float, dict[str, Any]]] = {}
        known: set[str] = set()
        changed = asyncio.Condition()

        async def read() -> None:
            async with http.get("/v1/events", params={"format": "ndjson"}) as r:
                buf = b""
                async for chunk in r.content.iter_any():
                    now = time.monotonic()
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        if not line.strip():
                            continue
                        event = json.loads(line)
                        for loc in [event.get("location"), *(event.get("panes") or [])]:
                            if isinstance(loc, dict) and "pane" in loc:
                                known.add(loc["pane"]["id"])
                                p = loc["pane"]
                                if p.get("dead") and p["id"] not in seen:
                                    first[p["id"]] = "exit_status" in p
                                # The first word of the death with its status (a
                                # death may be shown before its status, below 3.6).
                                if (
                                    p.get("dead")
                                    and "exit_status" not in seen.get(p["id"], (0, {}))[1]
                                ):
                                    seen[p["id"]] = (now, p)
                    async with changed:
                        changed.notify_all()

        reader = asyncio.create_task(read())

        async def until(predicate: Any, limit: float) -> bool:
            try:
                async with asyncio.timeout(limit):
                    async with changed:
                        await changed.wait_for(predicate)
                return True
            except TimeoutError:
                return False

        for _ in range(deaths):
            pane = server.run(
                "new-window", "-d", "-t", "other:", "-P", "-F", "#{pane_id}", "read x; exit 3"
            )
            if not await until(lambda p=pane: p in known, LIMIT_S):
                raise RuntimeError(f"the stream never had {pane}")
            pid = int(server.run("display", "-p", "-t", pane, "#{pane_pid}"))
            fd = os.pidfd_open(pid)
            loop = asyncio.get_running_loop()
            end: asyncio.Future[float] = loop.create_future()
            # In the same event loop as the stream's reader: whichever the kernel and
            # the daemon made ready first is read first.
            loop.add_reader(fd, ended_at, end)
            server.run("send-keys", "-t", pane, "Enter")
            try:
                ended = await asyncio.wait_for(end, LIMIT_S)
            finally:
                loop.remove_reader(fd)
                os.close(fd)
            told = await until(
                lambda p=pane: p in seen and seen[p][1].get("exit_status") == 3, LIMIT_S
            )
            if told:
                times.append((seen[pane][0] - ended) * 1000)
            server.run("kill-window", "-t", pane)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        at_once = sum(first.values())
        return times, at_once, server.run("display", "-p", "#{version}")


def ended_at(end: asyncio.Future[float]) -> None:
    if not end.done():
        end.set_result(time.monotonic())


def one_version(version: str, deaths: int) -> dict[str, Any]:
    tmux = tmux_binary(version)
    root = Path(tempfile.mkdtemp(prefix="tlc-death-", dir="/tmp"))
    server = Server(tmux, root)
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env["PATH"] = os.pathsep.join([os.path.dirname(tmux), env.get("PATH", "")])
    env["TMUX_TMPDIR"] = str(root)
    env["XDG_CONFIG_HOME"] = str(root)
    server.run("new-session", "-d", "-s", "main", "-x", "80", "-y", "24")
    server.run("new-session", "-d", "-s", "other", "-x", "80", "-y", "24")
    server.run("set-option", "-g", "remain-on-exit", "on")
    server.run("set-option", "-g", "default-shell", "/bin/sh")
    daemon_sock = str(root / "d.sock")
    log = open(root / "daemon.log", "wb")  # noqa: SIM115 -- open for the daemon's life
    daemon = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tmuxlocd",
            "serve",
            "-S",
            server.socket,
            "--listen",
            f"unix:{daemon_sock}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        times, at_once, version_text = asyncio.run(measure(server, daemon_sock, deaths))
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
        log.close()
        subprocess.run([tmux, "-S", server.socket, "kill-server"], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)
    return {
        "version": version_text,
        "deaths": deaths,
        "with_status": len(times),
        "at_once": at_once,
        "p50": percentile(times, 50) if times else None,
        "max": max(times) if times else None,
    }


def render(rows: list[dict[str, Any]]) -> str:
    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    out = [
        "| tmux | deaths | shown with status 3 | status in the first word | p50 ms | max ms |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        p50 = f"{r['p50']:.1f}" if r["p50"] is not None else "-"
        mx = f"{r['max']:.1f}" if r["max"] is not None else "-"
        out.append(
            f"| {r['version']} | {r['deaths']} | {r['with_status']} | {r['at_once']} "
            f"| {p50} | {mx} |"
        )
    head = (
        f"Machine: {os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}, "
        f"Python {platform.python_version()}."
    )
    return head + "\n\n" + "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pane_death", description=__doc__)
    parser.add_argument("--deaths", type=int, default=50)
    parser.add_argument("--tmux-versions", default="system")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rows = [one_version(v, args.deaths) for v in args.tmux_versions.split(",") if v]
    text = render(rows)
    print(text)
    if args.out is not None:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
