"""``bench.fanout_probe`` as a child process: the lean holder of many ``/v1/events`` streams
that B3 (many subscribers), B4, B8 and B9 measure with.  Its times are ``time.perf_counter``
(CLOCK_MONOTONIC, one clock for every process of the machine), so they compare with this
process's own."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.tmuxfarm import clean_env

REPO = Path(__file__).resolve().parent.parent


class ProbeProc:
    """``bench.fanout_probe`` as a child process, one JSON line each way per command."""

    def __init__(self) -> None:
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bench.fanout_probe",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=clean_env(),
            cwd=str(REPO),
            limit=1 << 20,
        )

    async def send(self, kind: str, **args: Any) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"kind": kind, **args}).encode() + b"\n")
        await self.proc.stdin.drain()

    async def answer(self, timeout: float = 600.0) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise RuntimeError("the fan-out probe went away")
        result: dict[str, Any] = json.loads(line)
        if result.get("ok") is False:
            raise RuntimeError(f"fan-out probe: {result.get('error')}")
        return result

    async def job(self, kind: str, timeout: float = 600.0, **args: Any) -> dict[str, Any]:
        await self.send(kind, **args)
        return await self.answer(timeout)

    async def stop(self) -> None:
        if self.proc is None or self.proc.returncode is not None:
            return
        try:
            await self.job("close", timeout=30)
            await asyncio.wait_for(self.proc.wait(), 30)
        except (TimeoutError, RuntimeError, BrokenPipeError, ConnectionError):
            self.proc.kill()
            await self.proc.wait()
