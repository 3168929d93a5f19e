"""The per-request cost of the portable host against the linux host, on Linux.

    python -m bench.hosts [--panes 10] [--n 2000] [--rounds 3] [--seconds 3]

Two daemons on one farm, one with ``TMUXLOCD_HOST=linux`` (a kept stat file read with
``pread`` per keep-alive request), one with ``TMUXLOCD_HOST=portable`` (a whole record per
request, through macOS's ``kinfo_proc`` shape, and ``getsid``).  The client is
``bench.client_probe`` in one of the farm's panes, so that ``/v1/self`` places it.  Rows:
``GET /v1/self`` on a keep-alive connection and as the first request of a new connection
(round robin over the two daemons, so that the machine's drift falls on both), and the
server CPU per request with one closed-loop keep-alive client (rounds alternate which daemon
goes first).  What macOS's sysctl costs is not measured here (no Mac): docs/macos.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys

from bench import procstat
from bench.rig import REPO, Daemon, ProbeLink
from bench.stats import fmt_ms, median, p99
from bench.tmuxfarm import Farm

HOSTS = ("linux", "portable")


async def measure(panes: int, n: int, rounds: int, seconds: float) -> list[str]:
    tmux = shutil.which("tmux")
    assert tmux is not None
    farm = Farm(tmux, panes)
    probe = ProbeLink(str(farm.dir / "ctl.sock"))
    await probe.listen()
    daemons = {h: Daemon(farm, name=h, env={"TMUXLOCD_HOST": h}) for h in HOSTS}
    lines: list[str] = []
    try:
        await asyncio.to_thread(
            farm.build, [sys.executable, "-m", "bench.client_probe", probe.path], str(REPO)
        )
        await probe.connected(60)
        for d in daemons.values():
            await d.start()
        bodies = set()
        for h, d in daemons.items():
            me = await probe.job("fetch", socket=d.socket, path="/v1/self")
            if not json.loads(me["body"]).get("inside_tmux"):
                raise RuntimeError(f"/v1/self from the probe's pane ({h}) says: {me['body']}")
            bodies.add(me["body"])
        if len(bodies) != 1:
            raise RuntimeError(f"the two hosts answer differently: {bodies}")
        targets = [{"name": h, "socket": d.socket, "path": "/v1/self"} for h, d in daemons.items()]
        warm = max(n // 10, 10)
        kept = await probe.job("latency", targets=targets, n=n, warmup=warm)
        first = await probe.job("first", targets=targets, n=max(n // 4, 50), warmup=warm)
        for label, got in (("keep-alive", kept), ("first request", first)):
            s = got["samples"]
            lin, por = s["linux"], s["portable"]
            lines.append(
                f"| GET /v1/self, {label} | {panes} | {fmt_ms(median(lin))} | "
                f"{fmt_ms(median(por))} | {fmt_ms(p99(lin))} | {fmt_ms(p99(por))} | "
                f"{1e6 * (median(por) - median(lin)):+.1f} µs |"
            )
        cpu: dict[str, list[float]] = {h: [] for h in HOSTS}
        for rnd in range(rounds):
            for h in HOSTS if rnd % 2 == 0 else tuple(reversed(HOSTS)):
                d = daemons[h]
                c0 = procstat.cpu_seconds(d.pid)
                got = await probe.job(
                    "throughput", conns=1, duration=seconds, socket=d.socket, path="/v1/self"
                )
                cpu[h].append((procstat.cpu_seconds(d.pid) - c0) / got["count"])
        lin_c, por_c = median(cpu["linux"]), median(cpu["portable"])
        lines.append(
            f"| server CPU per /v1/self, 1 keep-alive client | {panes} | "
            f"{1e6 * lin_c:.0f} µs | {1e6 * por_c:.0f} µs | | | {1e6 * (por_c - lin_c):+.0f} µs |"
        )
    finally:
        for d in daemons.values():
            await d.stop()
        await probe.close()
        farm.kill()
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hosts", description=__doc__)
    parser.add_argument("--panes", type=int, default=10)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    ns = parser.parse_args()
    rows = asyncio.run(measure(ns.panes, ns.n, ns.rounds, ns.seconds))
    print("| row | panes | linux p50 | portable p50 | linux p99 | portable p99 | difference |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
