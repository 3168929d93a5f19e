"""Pane activity (spec "Pane activity"): what watching costs, and how soon an end is told.

CPU per second of the tmux server and of the daemon with 0, 10 and every pane watched (10:
ten pending waits; all: one ``types=pane.activity`` stream over the whole server), and the
latency from a command's end -- told by the bench's own pidfd on the process -- to the
``pane.activity`` idle event and to the answer of a pending ``until=idle`` wait, in a shell
pane of the farm's first session.  Also send-keys -> the busy wait's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from bench import procstat
from bench.tmuxfarm import Farm

CPU_WATCHED = (0, 10, -1)  # -1: every pane


class Api:
    def __init__(self, socket_path: str) -> None:
        self.http = aiohttp.ClientSession(
            connector=aiohttp.UnixConnector(path=socket_path, limit=0),
            base_url="http://localhost",
            timeout=aiohttp.ClientTimeout(total=None),
        )

    async def close(self) -> None:
        await self.http.close()

    async def wait(self, pane: str, until: str, timeout_s: float = 60) -> dict[str, Any]:
        params = {"until": until, "timeout_s": str(timeout_s)}
        async with self.http.get(f"/v1/panes/{pane.lstrip('%')}/wait", params=params) as r:
            answer: dict[str, Any] = await r.json()
            return answer

    async def health(self) -> dict[str, Any]:
        async with self.http.get("/v1/health") as r:
            answer: dict[str, Any] = await r.json()
            return answer

    async def until_watched(self, n: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while (await self.health())["watched_panes"] < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{n} watched panes")
            await asyncio.sleep(0.05)

    @contextlib.asynccontextmanager
    async def activity_stream(
        self, out: list[tuple[float, dict[str, Any]]], **selection: str
    ) -> AsyncIterator[None]:
        params = {"types": "pane.activity", "format": "ndjson", **selection}

        async def read() -> None:
            async with self.http.get("/v1/events", params=params) as r:
                # Not ``async for line in r.content``: its lines stop at 64 KiB, and the
                # snapshot of 1,000 panes is one line of more.
                buf = b""
                async for chunk in r.content.iter_any():
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    now = time.monotonic()
                    for line in lines:
                        if b'"pane.activity"' in line[:64]:
                            out.append((now, json.loads(line)))

        task = asyncio.create_task(read())
        try:
            yield
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)


async def cpu_per_s(farm: Farm, daemon_pid: int, seconds: float) -> dict[str, float]:
    s0, d0 = procstat.cpu_seconds(farm.pid), procstat.tree_cpu_seconds(daemon_pid)
    await asyncio.sleep(seconds)  # the measured interval itself
    s1, d1 = procstat.cpu_seconds(farm.pid), procstat.tree_cpu_seconds(daemon_pid)
    return {
        "server": (s1 - s0) / seconds,
        "daemon": (d1[0] - d0[0]) / seconds,
        "clients": (d1[1] - d0[1]) / seconds,
    }


async def measure(
    farm: Farm, socket_path: str, daemon_pid: int, seconds: float, runs: int
) -> tuple[dict[str, dict[str, float]], dict[str, list[float]]]:
    """(CPU per second by watched count, latency series in seconds)."""
    api = Api(socket_path)
    cpu: dict[str, dict[str, float]] = {}
    series: dict[str, list[float]] = {"busy": [], "event": [], "wait": []}
    try:
        panes = [p["pane_id"] for p in farm.panes()]
        for n in CPU_WATCHED:
            label = "all" if n < 0 else str(n)
            if n == 0:
                cpu[label] = await cpu_per_s(farm, daemon_pid, seconds)
            elif n > 0:
                waits = [asyncio.create_task(api.wait(p, "change", 3600)) for p in panes[:n]]
                await api.until_watched(n)
                await asyncio.sleep(1.0)  # past the first reads: the steady state
                cpu[label] = await cpu_per_s(farm, daemon_pid, seconds)
                for w in waits:
                    w.cancel()
                await asyncio.gather(*waits, return_exceptions=True)
            else:
                events: list[tuple[float, dict[str, Any]]] = []
                async with api.activity_stream(events):
                    await api.until_watched(len(panes))
                    await asyncio.sleep(1.0)
                    cpu[label] = await cpu_per_s(farm, daemon_pid, seconds)
                    cpu["panes"] = {"watched all": float((await api.health())["watched_panes"])}

        # Latency, in a shell pane (exec'd directly: the shell is the pane's process).
        out = await farm.arun(
            "new-window", "-d", "-P", "-F", "#{pane_id} #{pane_pid}", "/bin/sh", "-i"
        )
        pane, pid_text = out.split()
        shell = int(pid_text)
        try:
            await api.http.post("/v1/sync")
            await time_ends(farm, api, pane, shell, runs, series)
        finally:
            # The farm as it was (a daemon's readiness is checked by its pane count).
            await farm.arun("kill-pane", "-t", pane)
            await api.http.post("/v1/sync")
    finally:
        await api.close()
    return cpu, series


async def time_ends(
    farm: Farm, api: Api, pane: str, shell: int, runs: int, series: dict[str, list[float]]
) -> None:
    """``runs`` times ``sleep 1`` in the shell pane: its start and its end, timed."""
    events: list[tuple[float, dict[str, Any]]] = []
    async with api.activity_stream(events, pane=pane.lstrip("%")):
        for _ in range(runs):
            assert (await api.wait(pane, "idle"))["outcome"] == "idle"
            busy = asyncio.create_task(api.wait(pane, "busy"))
            sent = time.monotonic()
            await farm.arun("send-keys", "-t", pane, "sleep 1", "Enter")
            answer = await busy
            series["busy"].append(time.monotonic() - sent)
            assert answer["outcome"] == "busy", answer
            job = procstat.tpgid(shell)
            end_task = asyncio.create_task(procstat.exited(job))
            idle = await api.wait(pane, "idle")
            answered = time.monotonic()
            assert idle["outcome"] == "idle", idle
            end = await end_task
            series["wait"].append(answered - end)
            deadline = time.monotonic() + 5
            while not (
                seen := [t for t, e in events if t >= end and e["after"].get("busy") is False]
            ):
                if time.monotonic() > deadline:
                    raise TimeoutError("the idle event")
                await asyncio.sleep(0.005)
            series["event"].append(min(seen) - end)
