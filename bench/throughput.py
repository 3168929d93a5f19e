"""B2 alone: ``GET /v1/self`` throughput and server CPU per request, the daemon against the
floor app, in one run (the same rows ``python -m bench`` makes, without the rest).

    python -m bench.throughput [--panes 10] [--rounds 3] [--seconds 3]

The client is ``bench.client_probe`` in one of the farm's panes (so that ``/v1/self`` finds
it), closed-loop keep-alive connections on asyncio streams; rounds alternate which server goes
first, so that a change in the machine's other load falls on both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys

from bench import procstat
from bench.rig import REPO, Daemon, Floor, ProbeLink
from bench.stats import median
from bench.tmuxfarm import Farm


async def measure(panes: int, rounds: int, seconds: float, conns: tuple[int, ...]) -> None:
    tmux = shutil.which("tmux")
    assert tmux is not None
    farm = Farm(tmux, panes)
    probe = ProbeLink(str(farm.dir / "ctl.sock"))
    await probe.listen()
    daemon = Daemon(farm)
    floor: Floor | None = None
    try:
        await asyncio.to_thread(
            farm.build, [sys.executable, "-m", "bench.client_probe", probe.path], str(REPO)
        )
        await probe.connected(60)
        await daemon.start()
        me = await probe.job("fetch", socket=daemon.socket, path="/v1/self")
        if not json.loads(me["body"]).get("inside_tmux"):
            raise RuntimeError(f"/v1/self from the probe's pane says: {me['body']}")
        floor = Floor(farm.dir, me["length"])
        await floor.start()
        servers = {"self": (daemon.socket, daemon.pid), "floor": (floor.socket, floor.pid)}
        for n in conns:
            rate: dict[str, list[float]] = {"self": [], "floor": []}
            cpu: dict[str, list[float]] = {"self": [], "floor": []}
            for rnd in range(rounds):
                for name in ("self", "floor") if rnd % 2 == 0 else ("floor", "self"):
                    sock, pid = servers[name]
                    c0 = procstat.cpu_seconds(pid)
                    got = await probe.job(
                        "throughput", conns=n, duration=seconds, socket=sock, path="/v1/self"
                    )
                    used = procstat.cpu_seconds(pid) - c0
                    rate[name].append(got["count"] / got["elapsed"])
                    cpu[name].append(used / got["count"])
            r_self, r_floor = median(rate["self"]), median(rate["floor"])
            # As the report does: the median of each round's pair.
            ratio = median([s / f for s, f in zip(rate["self"], rate["floor"], strict=True)])
            c_self, c_floor = median(cpu["self"]), median(cpu["floor"])
            print(
                f"{panes} panes, {n} connection(s): daemon {r_self:,.0f}/s, floor "
                f"{r_floor:,.0f}/s ({ratio:.2f}x); CPU per request "
                f"{1e6 * c_self:.0f} us vs {1e6 * c_floor:.0f} us ({c_self / c_floor:.2f}x)",
                flush=True,
            )
    finally:
        if floor is not None:
            await floor.stop()
        await daemon.stop()
        await probe.close()
        farm.kill()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.throughput", description=__doc__)
    parser.add_argument("--panes", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--conns", default="1,8")
    args = parser.parse_args()
    conns = tuple(int(c) for c in args.conns.split(","))
    asyncio.run(measure(args.panes, args.rounds, args.seconds, conns))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
