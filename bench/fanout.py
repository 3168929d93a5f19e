"""B8 fan-out, B4 at 1,000 subscribers and B9 the reconnect storm, on one size's daemon.

The subscribers live in ``bench.fanout_probe``, a process of their own with raw sockets under
one epoll, so that what is measured is the daemon's fan-out and not the measuring client's.
This runs last for a size: the storm restarts the daemon.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass

from bench import procstat
from bench.fanout_proc import ProbeProc
from bench.rig import (
    B3_HOOK,
    FLOOR_WRITES,
    REPO,
    Daemon,
    Results,
    Targets,
    http_json,
    log,
    observer_session,
    pick_targets,
    sched_per_change,
)
from bench.stats import median
from bench.tmuxfarm import PANE_CMD, Farm, clean_env

MB = 1_000_000
TARGET = "/v1/events?format=ndjson"
# B3's alternative in other sessions, as its rows have it set (bench.runner.hook_fifo): one
# fork and shell of tmux's per layout change, here with nowhere to write.
HOOK = "run-shell -b 'echo x >/dev/null 2>&1'"


@dataclass(frozen=True)
class FanPlan:
    counts: tuple[int, ...]  # subscriber counts, ascending; the first is the CPU baseline
    changes: int  # split+kill pairs per count
    gap_s: float
    storm: int  # streams held through the restart

    @classmethod
    def make(cls, quick: bool) -> FanPlan:
        if quick:
            return cls(counts=(1, 10), changes=3, gap_s=0.06, storm=10)
        return cls(counts=(1, 100, 1000), changes=30, gap_s=0.06, storm=1000)


async def no_streams(daemon: Daemon, timeout: float = 30.0) -> None:
    """Until the daemon holds no stream (those of earlier measurements end as it sees their
    connections close): this one needs all 1,000 of its streams."""
    deadline = time.monotonic() + timeout
    while (await http_json(daemon.socket, "/v1/health")).get("subscribers"):
        if time.monotonic() > deadline:
            raise RuntimeError("the daemon still holds streams of earlier measurements")
        await asyncio.sleep(0.05)


async def measure(farm: Farm, daemon: Daemon, quick: bool, res: Results) -> None:
    plan = FanPlan.make(quick)
    panes = farm.total
    await no_streams(daemon)
    targets = pick_targets(farm, observer_session(farm, daemon))
    split = farm.argv(
        "split-window", "-d", "-t", targets.attached_pane, "-P", "-F", "#{pane_id}", *PANE_CMD
    )
    kill = farm.argv("kill-pane", "-t", "{pane}")
    probe = ProbeProc()
    await probe.start()
    res.facts[f"B4 RSS before the streams@{panes}"] = procstat.rss_bytes(daemon.pid)
    try:
        held = 0
        for count in plan.counts:
            log(f"{panes} panes: B8 fan-out to {count} subscriber(s)")
            got = await probe.job("connect", socket=daemon.socket, target=TARGET, n=count - held)
            res.facts[f"B8 connect s@{panes}/{count}"] = got["seconds"]
            # What one stream's start (its snapshot) reads: B9's floor writes as much.
            res.facts[f"B8 connect bytes@{panes}"] = got["bytes"] / max(count - held, 1)
            held = count
            cpu0 = procstat.cpu_seconds(daemon.pid)
            out = await probe.job(
                "changes", split=split, kill=kill, k=plan.changes, gap_s=plan.gap_s
            )
            cpu = procstat.cpu_seconds(daemon.pid) - cpu0
            res.add(f"B8 {count} first", panes, out["first"])
            res.add(f"B8 {count} last", panes, out["last"])
            spread = [b - a for a, b in zip(out["first"], out["last"], strict=True)]
            res.add(f"B8 {count} spread", panes, spread)
            res.facts[f"B8 cpu per event@{panes}/{count}"] = cpu / max(out["lines"], 1)
            res.facts[f"B8 events@{panes}/{count}"] = out["lines"]
            # What one change (a split, or a kill) wrote to each stream.
            res.facts[f"B8 bytes per change@{panes}"] = out["bytes"] / max(2 * plan.changes, 1)
            # What a split wrote to each stream, the measured publication: the floor's size.
            res.facts[f"B8 bytes per split@{panes}"] = median(out["split_bytes"] or [0])
            if out["misses"]:
                res.misses.append(f"B8 {count} at {panes} panes: {out['misses']} timed out")
        # The floor, writing what the daemon wrote per change at this size.
        await floor_spreads(farm, plan, res, int(res.facts[f"B8 bytes per split@{panes}"]))
        # B4: memory with every stream connected, nothing happening.
        res.facts[f"B4 RSS 1000@{panes}"] = (held, procstat.rss_bytes(daemon.pid))

        # B9: restart the daemon under `storm` streams, each resuming with Last-Event-ID.
        if plan.storm > held:
            await probe.job("connect", socket=daemon.socket, target=TARGET, n=plan.storm - held)
        log(f"{panes} panes: B9 restart under {plan.storm} subscribers")
        await probe.send("storm", timeout=60)
        await probe.answer(30)  # armed
        t_stop = time.perf_counter()
        await daemon.stop()
        t_spawn = time.perf_counter()
        await daemon.start()
        t_ready = time.perf_counter()
        storm = await probe.answer(120)
        res.facts[f"B9@{panes}"] = {
            **{k: v for k, v in storm.items() if k != "ok"},
            # The new daemon's CPU from its start: the storm is most of it.
            "daemon_cpu": procstat.cpu_seconds(daemon.pid),
            "t_stop": t_stop,
            "t_spawn": t_spawn,
            "t_ready": t_ready,
        }
    finally:
        await probe.stop()
    if plan.storm:
        await storm_floor(farm, plan, res)
    # Last: it stops the daemon.
    await split_floor(
        farm, daemon, plan, res, targets, int(res.facts[f"B8 bytes per split@{panes}"])
    )


async def start_floor(sock: str, fifo: str, *args: str) -> asyncio.subprocess.Process:
    """``bench.fanout_floor`` on ``sock``, once it says it listens."""
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bench.fanout_floor",
        "--path",
        sock,
        "--fifo",
        fifo,
        *args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=clean_env(),
        cwd=str(REPO),
    )
    assert server.stdout is not None
    if (await asyncio.wait_for(server.stdout.readline(), 30)).strip() != b"ready":
        server.kill()
        await server.wait()
        raise RuntimeError("the fan-out floor did not start")
    return server


async def floor_spreads(farm: Farm, plan: FanPlan, res: Results, size: int) -> None:
    """B8's floor: ``bench.fanout_floor`` under the same probe, for each way of writing,
    ``size`` bytes a change to every stream."""
    panes = farm.total
    for how in FLOOR_WRITES:
        sock, fifo = str(farm.dir / f"floor-{how}.sock"), str(farm.dir / f"floor-{how}.fifo")
        # (The line less the chunk's own framing.)
        server = await start_floor(
            sock, fifo, "--write", how, "--line-bytes", str(max(size - 8, 100))
        )
        probe = ProbeProc()
        try:
            await probe.start()
            held = 0
            for count in plan.counts[1:]:
                log(f"B8 floor ({how}) to {count} subscriber(s)")
                await probe.job("connect", socket=sock, target=TARGET, n=count - held)
                held = count
                out = await probe.job(
                    "changes",
                    split=["sh", "-c", f"echo added > {fifo}; echo %0"],
                    kill=["sh", "-c", f"echo removed > {fifo}"],
                    k=plan.changes,
                    gap_s=plan.gap_s,
                )
                spread = [b - a for a, b in zip(out["first"], out["last"], strict=True)]
                res.add(f"B8 floor {how} {count} spread", panes, spread)
        finally:
            await probe.stop()
            if server.returncode is None:
                server.terminate()
            said, _ = await server.communicate()
        for line in said.splitlines():
            if line.startswith(b"{"):
                for count, seconds in json.loads(line)["loops"]:
                    res.add(f"B8 floor {how} {count} loop", panes, [seconds])


async def storm_floor(farm: Farm, plan: FanPlan, res: Results) -> None:
    """B9's floor: ``bench.fanout_floor`` delivering a snapshot of the daemon's size to as
    many streams as the storm had, opened as fast as the probe can, read by the same probe."""
    panes = farm.total
    held = res.facts.get(f"B8 connect bytes@{panes}")
    if not held:
        return
    size = int(held)
    sock, fifo = str(farm.dir / "floor-storm.sock"), str(farm.dir / "floor-storm.fifo")
    log(f"{panes} panes: B9 floor, {plan.storm} snapshots of {size:,} bytes")
    t_spawn = time.perf_counter()
    # (The snapshot less the HTTP head and the chunk's framing.)
    server = await start_floor(sock, fifo, "--snapshot-bytes", str(max(size - 200, 200)))
    probe = ProbeProc()
    try:
        t_ready = time.perf_counter()
        await probe.start()
        got = await probe.job("connect", socket=sock, target=TARGET, n=plan.storm)
        res.facts[f"B9 floor@{panes}"] = {
            "streams": plan.storm,
            "seconds": got["seconds"],
            "bytes": got["bytes"],
            "cpu": got["cpu"],
            "start": t_ready - t_spawn,  # an interpreter's start-up with asyncio only
        }
    finally:
        await probe.stop()
        if server.returncode is None:
            server.terminate()
        await server.communicate()


async def split_floor(
    farm: Farm, daemon: Daemon, plan: FanPlan, res: Results, targets: Targets, size: int
) -> None:
    """The floor of B8 and B3 on a real split, with the daemon stopped: ``bench.fanout_floor``
    writes ``size`` bytes to every stream as soon as its own control client reads the split's
    ``%layout-change``.  The FIFO-triggered floor (``floor_spreads``) writes on a quiet
    machine; this one writes, as the daemon must, while tmux is still busy with the split (its
    fork of the new pane, the split's client, its other clients), on the same 2 cores.

    The streams' probe attaches B3's alternative too (a bare control client, stamped in the
    same sample).  First 100 streams with B3's ``run-shell -b`` hook set (B3's rows have it),
    then each count of B8 without it (B8's rows have none)."""
    panes = farm.total
    await daemon.stop()
    flags = "no-output,ignore-size,read-only"
    control = farm.argv("-C", "attach-session", "-t", targets.attached_session, "-f", flags)
    split = farm.argv(
        "split-window", "-d", "-t", targets.attached_pane, "-P", "-F", "#{pane_id}", *PANE_CMD
    )
    kill = farm.argv("kill-pane", "-t", "{pane}")
    pattern = f"%layout-change {targets.attached_window} "
    sock, fifo = str(farm.dir / "floor-split.sock"), str(farm.dir / "floor-split.fifo")
    server = await start_floor(
        sock, fifo, "--line-bytes", str(max(size - 8, 100)), "--control-argv", json.dumps(control)
    )
    probe = ProbeProc()
    runs = [(plan.counts[1], True)] + [(count, False) for count in plan.counts[1:]]
    try:
        await probe.start()
        await probe.job("attach", argv=control)
        held = 0
        for count, hook in runs:
            log(f"{panes} panes: the floor on the split, {count} subscriber(s), hook {hook}")
            await probe.job("connect", socket=sock, target=TARGET, n=count - held)
            held = count
            if hook:
                farm.run("set-hook", "-g", B3_HOOK, HOOK)
            before = procstat.sched_seconds(server.pid)
            try:
                out = await probe.job(
                    "changes",
                    split=split,
                    kill=kill,
                    k=plan.changes,
                    gap_s=plan.gap_s,
                    control=pattern,
                )
            finally:
                if hook:
                    farm.run("set-hook", "-gu", B3_HOOK, check=False)
            name = f"B3 floor attached {count}" if hook else f"B8 split floor {count}"
            sched_per_change(res, name, panes, server.pid, before, plan.changes)
            res.add(f"{name} first", panes, out["first"])
            res.add(f"{name} last", panes, out["last"])
            res.add(f"{name} cm", panes, out["control"])
            spread = [b - a for a, b in zip(out["first"], out["last"], strict=True)]
            res.add(f"{name} spread", panes, spread)
            if out["misses"]:
                res.misses.append(f"{name} at {panes} panes: {out['misses']} timed out")
    finally:
        await probe.stop()
        if server.returncode is None:
            server.terminate()
        await server.communicate()
    await waiter_floor(farm, plan, res, targets, size, control, split, kill, pattern)


async def waiter_floor(
    farm: Farm,
    plan: FanPlan,
    res: Results,
    targets: Targets,
    size: int,
    control: list[str],
    split: list[str],
    kill: list[str],
    pattern: str,
) -> None:
    """On tmux 3.3 only, B3's floor on the daemon's own path there: ``bench.fanout_floor``
    with its own control client attached to the observer's session (as the daemon's is),
    the daemon's hooks installed and its hook waiter client, publishing on the waiter's rows
    (the new pane's tty and pid come no other way on 3.3 without waiting for the split's
    command to end).  What the daemon spends above this is its own; what this spends above
    the floor on the ``%layout-change`` is the cost of 3.3's path on this machine."""
    from tmuxlocd.core import spelling
    from tmuxlocd.core.attach import WAITER_CHAIN, channel, waiter_argv
    from tmuxlocd.core.mirror import ServerMirror, install_hooks, remove_hooks, uses_message_hooks

    version = farm.run("display-message", "-p", "#{version}").strip()
    if uses_message_hooks(version):
        return
    panes, count = farm.total, plan.counts[1]
    mirror = ServerMirror(farm.socket)
    mirror.version, mirror.client_name = version, "{client}"
    hooks_channel = channel(os.getuid())
    sock, fifo = str(farm.dir / "floor-rows.sock"), str(farm.dir / "floor-rows.fifo")
    for argv in install_hooks(mirror, hooks_channel):
        farm.run(*argv)
    probe = ProbeProc()
    server: asyncio.subprocess.Process | None = None
    try:
        server = await start_floor(
            sock,
            fifo,
            "--line-bytes",
            str(max(size - 8, 100)),
            "--control-argv",
            json.dumps(control),
            "--rows-argv",
            json.dumps(
                waiter_argv(farm.tmux, farm.socket, spelling.PLAIN, hooks_channel, "{client}")
            ),
            "--rows-chain",
            str(WAITER_CHAIN),
        )
        log(f"{panes} panes: the floor on 3.3's rows, {count} subscriber(s)")
        await probe.start()
        await probe.job("attach", argv=control)
        await probe.job("connect", socket=sock, target=TARGET, n=count)
        farm.run("set-hook", "-g", B3_HOOK, HOOK)
        before = procstat.sched_seconds(server.pid)
        try:
            out = await probe.job(
                "changes", split=split, kill=kill, k=plan.changes, gap_s=plan.gap_s,
                control=pattern,
            )  # fmt: skip
        finally:
            farm.run("set-hook", "-gu", B3_HOOK, check=False)
        name = f"B3 floor rows attached {count}"
        sched_per_change(res, name, panes, server.pid, before, plan.changes)
        res.add(f"{name} first", panes, out["first"])
        res.add(f"{name} last", panes, out["last"])
        res.add(f"{name} cm", panes, out["control"])
        if out["misses"]:
            res.misses.append(f"{name} at {panes} panes: {out['misses']} timed out")
    finally:
        await probe.stop()
        if server is not None:
            if server.returncode is None:
                server.terminate()
            await server.communicate()
        for argv in remove_hooks(mirror):
            farm.run(*argv, check=False)


async def _alone(sizes: tuple[int, ...], quick: bool) -> Results:
    import os
    import shutil

    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("no tmux on PATH")
    res = Results()
    res.facts["sizes"] = list(sizes)
    for panes in sizes:
        load0 = os.getloadavg()[0]
        farm = Farm(tmux, panes)
        daemon = Daemon(farm)
        try:
            await asyncio.to_thread(farm.build, list(PANE_CMD), str(REPO))
            await daemon.start()
            await measure(farm, daemon, quick, res)
        finally:
            await daemon.stop()
            farm.kill()
        res.facts[f"load average (1 min) before, after@{panes}"] = (load0, os.getloadavg()[0])
    return res


def main() -> int:
    """``python -m bench.fanout [--quick] [--sizes 10,1000]``: these rows alone (no file)."""
    import argparse

    from bench.report import fanout_rows, goal_table, series_table

    parser = argparse.ArgumentParser(prog="python -m bench.fanout", description=main.__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sizes", default="10,100,1000")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    res = asyncio.run(_alone(sizes, args.quick))
    print(goal_table(fanout_rows(res)))
    print()
    print(series_table(res))
    for key, value in sorted(res.facts.items()):
        print(f"- {key}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
