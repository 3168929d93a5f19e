"""Profile the daemon under one benchmark workload with py-spy (``pip install py-spy``).

    python -m bench.profile_daemon {self,split,subscribe} [--panes N] [--seconds S]
        [--subscribers K] [--out DIR]

- ``self``: ``--conns`` keep-alive clients (1 by default) in a pane asking ``GET /v1/self``
  back to back (B1/B2);
- ``split``: ``split-window -d`` + ``kill-pane`` in the observer's session and in another
  one, with K subscribers connected (B3/B7);
- ``subscribe``: K subscribers connecting to ``/v1/events`` (B4: snapshot cost, memory).

py-spy samples the daemon's Python stacks while the workload runs; the summary lists the
functions with the most samples, inclusive (anywhere on the stack) and on top (own time).
The raw collapsed stacks are kept in DIR for flame graphs.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench import procstat
from bench.rig import REPO, Daemon, Gate, ProbeLink, observer_session, pick_targets
from bench.runner import Subscribers, added, removed
from bench.tmuxfarm import PANE_CMD, Bus, Farm


def summarize(raw: Path, top: int = 25) -> str:
    """Inclusive and own sample counts per function from py-spy's collapsed stacks."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count_s = line.rpartition(" ")
        if not stack or not count_s.isdigit():
            continue
        count = int(count_s)
        total += count
        frames = [f.strip() for f in stack.split(";")[1:]]  # the first is the thread
        for frame in set(frames):
            inclusive[frame] += count
        if frames:
            own[frames[-1]] += count
    if not total:
        return "no samples"
    out = [f"{total} samples", "", "inclusive (on the stack):"]
    out += [f"  {100 * c / total:5.1f}%  {f}" for f, c in inclusive.most_common(top)]
    out += ["", "own (top of the stack):"]
    out += [f"  {100 * c / total:5.1f}%  {f}" for f, c in own.most_common(top)]
    return "\n".join(out)


async def workload(
    kind: str, panes: int, seconds: float, nsubs: int, out: Path, conns: int = 1
) -> None:
    tmux = shutil.which("tmux")
    pyspy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    assert tmux is not None
    farm = Farm(tmux, panes)
    bus = Bus()
    probe = ProbeLink(str(farm.dir / "ctl.sock"))
    await probe.listen()
    daemon = Daemon(farm)
    subs = Subscribers(bus)
    try:
        await asyncio.to_thread(
            farm.build, [sys.executable, "-m", "bench.client_probe", probe.path], str(REPO)
        )
        await probe.connected(60)
        await daemon.start()
        attached = observer_session(farm, daemon)
        targets = pick_targets(farm, attached)
        if kind != "subscribe":
            await subs.connect(daemon.socket, nsubs)
        raw = out / f"{kind}-{panes}.txt"
        spy = await asyncio.create_subprocess_exec(
            pyspy,
            "record",
            "-p",
            str(daemon.pid),
            "-d",
            str(int(seconds) + 2),
            "-r",
            "1000",
            "-f",
            "raw",
            "-o",
            str(raw),
            "--nonblocking",
            "--gil",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cpu0 = procstat.cpu_seconds(daemon.pid)
        sched0 = procstat.sched_seconds(daemon.pid)
        rss0 = procstat.rss_bytes(daemon.pid)
        t0 = time.perf_counter()
        count = 0
        if kind == "self":
            res = await probe.job(
                "throughput", conns=conns, duration=seconds, socket=daemon.socket, path="/v1/self"
            )
            count = int(res["count"])
        elif kind == "split":
            deadline = time.perf_counter() + seconds
            while time.perf_counter() < deadline:
                for pane in (targets.attached_pane, targets.other_pane):
                    gate = Gate()
                    subs.arm(added, gate)
                    new = (
                        await farm.arun(
                            "split-window", "-d", "-t", pane, "-P", "-F", "#{pane_id}", *PANE_CMD
                        )
                    ).strip()
                    await gate.wait(5)
                    gate = Gate()
                    subs.arm(removed, gate)
                    await farm.arun("kill-pane", "-t", new)
                    await gate.wait(5)
                    count += 2
        else:
            await subs.connect(daemon.socket, nsubs)
            count = nsubs
        wall = time.perf_counter() - t0
        cpu = procstat.cpu_seconds(daemon.pid) - cpu0
        run, wait = (b - a for a, b in zip(sched0, procstat.sched_seconds(daemon.pid), strict=True))
        rss = procstat.rss_bytes(daemon.pid)
        await spy.wait()
        print(
            f"{kind} at {panes} panes: {count} operations in {wall:.1f} s; daemon CPU "
            f"{cpu:.2f} s ({1000 * cpu / max(count, 1):.2f} ms per operation); "
            f"RSS {rss0 / 1e6:.1f} -> {rss / 1e6:.1f} MB; per operation on a CPU "
            f"{1000 * run / max(count, 1):.2f} ms, runnable but waiting for one "
            f"{1000 * wait / max(count, 1):.2f} ms (py-spy's own sampling included)"
        )
        if raw.exists():
            print(summarize(raw))
        else:
            print(f"py-spy wrote no profile (exit status {spy.returncode})")
    finally:
        subs.close()
        await daemon.stop()
        await probe.close()
        farm.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("self", "split", "subscribe"))
    parser.add_argument("--panes", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--subscribers", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp"))
    parser.add_argument("--conns", type=int, default=1, help="``self``: keep-alive clients (B2: 8)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(
        workload(args.kind, args.panes, args.seconds, args.subscribers, args.out, args.conns)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
