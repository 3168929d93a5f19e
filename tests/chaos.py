"""A chaos control connection: a relay between the daemon and ``tmux -C`` that breaks replies.

The daemon runs tmux by name; a test puts a directory first on the daemon's PATH whose
``tmux`` is a small shell script (``install_wrapper``).  Plain tmux clients (the daemon's
probes and hook waiter) go straight to the real tmux; a control client (``-C``) goes through
``python -m tests.chaos_relay <real tmux> ARGS``, which starts the real control client and copies
bytes both ways, and, while the control file says so, breaks the replies to the daemon's
commands (``%begin ... 1`` blocks) in the ways a real connection can fail:

- ``error``: the block becomes an ``%error`` block (as a user's alias or hook would);
- ``delay``: the block (and all that follows it) is held back 20-300 ms;
- ``truncate``: part of the block is written, then the connection ends mid-block;
- ``drop``: the connection ends between two blocks;
- ``noise``: a stray line that belongs to no block is written before the block;
- ``hang``: nothing more is written; the daemon's command deadline must fire.

The control file holds ``off`` or ``on RATE KIND[,KIND...] SEED``; it is read before each
block, so a test turns injection on and off while the daemon runs.  Every injected fault is
appended to the log file as one line (``<kind>``), for the figures.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.soak import (
    TMUX,
    Daemon,
    Server,
    Stream,
    Truth,
    Walk,
    api_tree,
    check_against_tmux,
    describe_diff,
    read_truth,
    tmux_ok,
)
from tests.tmuxtest import wait_until

KINDS = ("error", "delay", "truncate", "drop", "noise", "hang")
SOFT_KINDS = ("error", "delay", "truncate", "drop", "noise")  # each costs no deadline
CONVERGE_S = 3.0  # from tmux answering sanely again to the model being right


@dataclass
class Chaos:
    """One test's chaos: the wrapper directory, the control file and the log."""

    directory: Path
    last: str = ""  # the last "on" line written, for resume()

    @property
    def control(self) -> Path:
        return self.directory / "chaos.control"

    @property
    def log(self) -> Path:
        return self.directory / "chaos.log"

    def on(self, rate: float, kinds: tuple[str, ...], seed: int) -> None:
        self.last = f"on {rate} {','.join(kinds)} {seed}\n"
        self._write(self.last)

    def resume(self) -> None:
        """Injection as it was before the last ``off``."""
        if self.last:
            self._write(self.last)

    def off(self) -> None:
        self._write("off\n")

    def _write(self, text: str) -> None:
        tmp = self.control.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, self.control)

    def injected(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        if self.log.exists():
            for line in self.log.read_text().split():
                counts[line] = counts.get(line, 0) + 1
        return counts

    def path_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with the wrapper first on PATH."""
        out = dict(env)
        out["PATH"] = f"{self.directory}{os.pathsep}{env.get('PATH', os.defpath)}"
        return out


def install_wrapper(directory: Path, real_tmux: str) -> Chaos:
    directory.mkdir(parents=True, exist_ok=True)
    repo = Path(__file__).resolve().parent.parent
    chaos = Chaos(directory)
    chaos.off()
    script = directory / "tmux"
    script.write_text(
        "#!/bin/sh\n"
        "# a control client goes through the chaos relay; any other client is the real tmux\n"
        'for a in "$@"; do\n'
        '  if [ "$a" = "-C" ]; then\n'
        f"    PYTHONPATH='{repo}' CHAOS_CONTROL='{chaos.control}' CHAOS_LOG='{chaos.log}' "
        f"exec '{sys.executable}' -m tests.chaos_relay '{real_tmux}' \"$@\"\n"
        "  fi\n"
        "done\n"
        f"exec '{real_tmux}' \"$@\"\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return chaos


# ----------------------------------------------------------------------------------------------
# A walk of tmux operations under chaos, and the checks (the property test and the soak).


@dataclass
class Run:
    server: Server
    daemon: Daemon
    stream: Stream
    walk: Walk
    chaos: Chaos


@asynccontextmanager
async def chaotic(seed: int) -> AsyncIterator[Run]:
    assert TMUX is not None
    server = Server()
    await server.start("A")
    await tmux_ok(server.socket_path, "new-session", "-d", "-s", "B", "-x", "120", "-y", "40")
    chaos = install_wrapper(Path(tempfile.mkdtemp(prefix="tlx-", dir="/tmp")), TMUX)
    daemon = Daemon([server.socket_path], path=chaos.path_env(dict(os.environ))["PATH"])
    stream: Stream | None = None
    try:
        await daemon.start()
        stream = Stream(daemon)
        await stream.open()
        walk = Walk(server, daemon, stream, seed)
        await walk.begin()
        yield Run(server, daemon, stream, walk, chaos)
    finally:
        chaos.off()
        if stream is not None:
            await stream.close()
        await daemon.stop()
        server.kill()
        daemon.cleanup()


async def tree_matches(run: Run) -> tuple[bool, str]:
    truth = await read_truth(run.server.socket_path)
    _, _, sessions = api_tree(await run.daemon.tree(), run.server.socket_path)
    want = truth.tree() if truth is not None else {}
    return sessions == want, describe_diff(want, sessions)


def landed_check(
    run: Run, settled: Callable[[Truth | None], bool]
) -> Callable[[], Awaitable[bool]]:
    async def landed() -> bool:
        return settled(await read_truth(run.server.socket_path))

    return landed


async def walk_under_chaos(run: Run, steps: int) -> dict[str, int]:
    """Operate tmux with injection on; check every barrier's answer."""
    answers = {"honest_200": 0, "sync_failed_503": 0}
    walk = run.walk
    for _ in range(steps):
        op = walk.choose()
        if op is None or op.destructive:
            continue  # a killed server is test_faults' subject; here tmux stays up
        await walk.run_op([op])
        if walk.hung:
            # tmux itself stuck (its session_destroy defect, docs/reliability.md): killed as a
            # user would, and the daemon must report it down and take it back when restarted.
            run.server.sigkill()
            run.chaos.off()
            await walk.server_died("hung")
            run.chaos.resume()
            answers["tmux_hung"] = answers.get("tmux_hung", 0) + 1
            continue
        if op.settled is not None:
            await wait_until(landed_check(run, op.settled), 10, f"{op.name} to land in tmux")
        truth = await read_truth(run.server.socket_path)
        if truth is None:
            # tmux 3.3a's own crash with a control client attached (docs/reliability.md):
            # the daemon must report it down and take it back once it is started again.
            run.chaos.off()
            await walk.server_died("crashed")
            run.chaos.resume()
            answers["tmux_crashed"] = answers.get("tmux_crashed", 0) + 1
            continue
        walk.truth = truth
        run.server.last_pid = truth.pid
        status, body = await run.daemon.request("POST", "/v1/sync")
        if status == 200:
            # The barrier's promise: what it published is what tmux has now.
            same, diff = await tree_matches(run)
            assert same, f"a barrier answered 200 but the model differs:\n{diff}"
            answers["honest_200"] += 1
        else:
            assert status == 503, (status, body)
            assert body["error"]["code"] == "sync_failed", body
            (failed,) = body["error"]["servers"]
            assert failed["socket_path"] == run.server.socket_path and failed["error"]
            answers["sync_failed_503"] += 1
    return answers


async def recover(run: Run) -> float:
    """Stop injecting; return how long the model took to equal tmux again."""
    run.chaos.off()
    began = time.monotonic()

    async def same() -> bool:
        return (await tree_matches(run))[0]

    await wait_until(same, CONVERGE_S + 2, "the model to converge once injection stopped")
    took = time.monotonic() - began

    async def healthy() -> bool:
        health = await run.daemon.health()
        return bool(health["status"] == "ok")

    await wait_until(healthy, CONVERGE_S, "health to be ok again")
    # The barrier works again, and the stream, replayed, equals tmux: nothing missed.
    await check_against_tmux(run.daemon, run.stream, run.server.socket_path, panes_listing=True)
    assert run.daemon.alive()
    errors = run.daemon.log_errors()
    assert not errors, "the daemon logged errors:\n" + "\n".join(errors[:5])
    return took


async def soak(steps: int, seed: int, rate: float, every: int = 50) -> int:
    """``python -m tests.soak --chaos RATE``: ``steps`` operations under injection, with
    injection stopped every ``every`` steps to check recovery (divergence) and the stream
    (silent misses)."""
    figures: dict[str, Any] = {"recoveries": 0, "converge_s": []}
    answers: dict[str, int] = {}
    done = 0
    async with chaotic(seed) as run:
        while done < steps:
            n = min(every, steps - done)
            run.chaos.on(rate, SOFT_KINDS, seed + done)
            for key, value in (await walk_under_chaos(run, n)).items():
                answers[key] = answers.get(key, 0) + value
            done += n
            figures["converge_s"].append(await recover(run))
            figures["recoveries"] += 1
            print(
                f"step {done}: barriers {answers}, injected {run.chaos.injected()}, "
                f"converged in {figures['converge_s'][-1]:.3f} s",
                flush=True,
            )
        times = sorted(figures["converge_s"])
        print(
            f"seed {seed}: {done} steps at rate {rate}, {figures['recoveries']} recoveries, "
            f"0 divergences after recovery, 0 silent misses; barriers {answers}; injected "
            f"{run.chaos.injected()}; convergence p50 {times[len(times) // 2]:.3f} s, "
            f"max {times[-1]:.3f} s",
            flush=True,
        )
    return 0
