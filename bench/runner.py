"""The benchmark run: one private tmux server per size, the daemon on it, and every
alternative measured next to it in the same run (SPEC §9, B1-B7).

The measuring client of the identity rows runs inside a pane (``bench.client_probe``),
because ``/v1/self`` knows its caller by the caller's controlling tty.  Change propagation,
memory and CPU are measured from here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench import activity, procstat
from bench.fanout_proc import ProbeProc
from bench.httpclient import StreamRecorder, open_stream
from bench.rig import (
    B3_HOOK,
    EVENTS,
    REPO,
    SELF_FORMAT,
    Daemon,
    FifoReader,
    Floor,
    Gate,
    ProbeLink,
    Results,
    Tap,
    Targets,
    log,
    machine_facts,
    observer_session,
    pick_targets,
    sched_per_change,
)
from bench.tmux_costs import command_costs
from bench.tmuxfarm import (
    LOCATION_FIELDS,
    PANE_CMD,
    Bus,
    ControlPeer,
    Farm,
    attach_control,
)


@dataclass
class Plan:
    """Iteration counts; ``quick`` shrinks everything to a few seconds in total."""

    quick: bool
    sizes: tuple[int, ...]
    latency_n: int
    latency_gap_s: float
    warm_n: int
    b2b_n: int
    curl_n: int
    alt_n: dict[int, int]
    tput_s: float
    tput_rounds: int
    prop_n: dict[int, int]
    many_subs: int
    idle_s: float
    split_k: int
    list_k: int
    activity_s: float = 10.0  # each CPU interval of the activity measurement
    activity_runs: int = 20  # command ends timed

    @classmethod
    def make(cls, quick: bool, sizes: tuple[int, ...] | None = None) -> Plan:
        if quick:
            return cls(
                quick=True,
                sizes=sizes or (10,),
                latency_n=60,
                latency_gap_s=0.001,
                warm_n=20,
                b2b_n=100,
                curl_n=5,
                alt_n={},
                tput_s=0.25,
                tput_rounds=1,
                prop_n={},
                many_subs=10,
                idle_s=2.0,
                split_k=5,
                list_k=5,
                activity_s=1.0,
                activity_runs=3,
            )
        return cls(
            quick=False,
            sizes=sizes or (10, 100, 1000),
            latency_n=1000,
            latency_gap_s=0.001,
            warm_n=300,
            b2b_n=2000,
            curl_n=100,
            alt_n={10: 60, 100: 60, 1000: 25},
            tput_s=0.75,
            tput_rounds=6,
            prop_n={10: 60, 100: 120, 1000: 60},
            many_subs=100,
            idle_s=60.0,
            split_k=100,
            list_k=20,
        )

    def alts(self, panes: int) -> int:
        return self.alt_n.get(panes, 3)

    def props(self, panes: int) -> int:
        return self.prop_n.get(panes, 5)


class Subscribers:
    """N NDJSON ``/v1/events`` streams, each with its own tap."""

    def __init__(self, bus: Bus) -> None:
        self.bus = bus
        self.streams: list[StreamRecorder] = []
        self.taps: list[Tap] = []

    async def connect(self, socket_path: str, n: int) -> None:
        """Open ``n`` more streams; return when each has its first snapshot."""
        gate = Gate()
        bus = self.bus
        for _ in range(n):
            tap = Tap()
            tap.arm(lambda line: b'"snapshot"' in line, gate)

            def on_line(t: float, line: bytes, tap: Tap = tap) -> None:
                tap.see(t, line)
                bus.notify()

            self.streams.append(await open_stream(socket_path, EVENTS, on_line))
            self.taps.append(tap)
        if not await gate.wait(120):
            raise RuntimeError("subscribers did not get their snapshots")

    def arm(self, pred: Callable[[bytes], bool], gate: Gate) -> None:
        for tap in self.taps:
            tap.arm(pred, gate)

    def close(self) -> None:
        for stream in self.streams:
            stream.close()
        self.streams.clear()
        self.taps.clear()


def added(line: bytes) -> bool:
    return b'"pane.added"' in line


def removed(line: bytes) -> bool:
    return b'"pane.removed"' in line


@contextlib.contextmanager
def hook_fifo(farm: Farm, bus: Bus, tap: Tap) -> Iterator[FifoReader]:
    """A ``run-shell -b`` hook on every layout change, writing to a FIFO we read."""
    path = farm.dir / "hook.fifo"
    reader = FifoReader(path, bus, tap.see)
    farm.run("set-hook", "-g", B3_HOOK, f"run-shell -b 'echo x >{path} 2>/dev/null'")
    try:
        yield reader
    finally:
        farm.run("set-hook", "-gu", B3_HOOK, check=False)
        reader.close()
        path.unlink(missing_ok=True)


# ------------------------------------------------------------------------------ measurements


async def propagation(
    farm: Farm,
    bus: Bus,
    subs: Subscribers,
    cm: ControlPeer | None,
    cm_tap: Tap,
    hook_tap: Tap,
    pane: str,
    window: str,
    n: int,
    res: Results,
    label: str,
    held: ProbeProc | None = None,
) -> None:
    """B3: spawn of ``split-window -d`` -> the event at the subscribers, the
    ``%layout-change`` at a bare control client, and a ``run-shell -b`` hook's write.

    The subscribers are ``subs`` (in this process), or the streams ``held`` holds (many: one
    asyncio protocol per stream here would read 100 x 26 KiB per change at 1,000 panes, ten
    milliseconds of this process's own work between the first stream's time and the last).
    With ``held`` the control client compared is the one ``held`` has attached (the same
    process and waits as its streams), not ``cm``; ``cm`` says whether there is one."""
    wid = window.encode()
    layout_change = b"%layout-change " + wid + b" "
    series: dict[str, list[float]] = {k: [] for k in ("first", "last", "cm", "hook", "cli")}
    misses = 0
    for _ in range(n):
        await bus.quiet(0.06)
        gate = Gate()
        if held is not None:
            control = layout_change.decode() if cm is not None else None
            await held.job("hits", timeout=10, pattern='"pane.added"', wait=5.0, control=control)
        subs.arm(added, gate)
        if cm is not None and held is None:
            cm_tap.arm(lambda line: line.startswith(layout_change), gate)
        hook_tap.arm(lambda line: True, gate)
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(
            *farm.argv("split-window", "-d", "-t", pane, "-P", "-F", "#{pane_id}", *PANE_CMD),
            stdout=subprocess.PIPE,
            env=farm.env,
        )
        out, _ = await proc.communicate()
        t_cli = time.perf_counter()
        new = out.decode().strip()
        if not new.startswith("%"):
            raise RuntimeError(f"split-window -t {pane} failed")
        ok = await gate.wait(5.0)
        for tap in (*subs.taps, cm_tap, hook_tap):
            tap.disarm()
        hits: list[float | None] = [t.hit for t in subs.taps]
        cm_hit = cm_tap.hit
        if held is not None:
            answer = await held.answer(30)
            hits, cm_hit = answer["hits"], answer.get("control")
        if not ok or not hits or any(h is None for h in hits):
            misses += 1
        else:
            got = [h - t0 for h in hits if h is not None]
            series["first"].append(got[0])
            series["last"].append(max(got))
            series["cli"].append(t_cli - t0)
            if cm is not None and cm_hit is not None:
                series["cm"].append(cm_hit - t0)
            if hook_tap.hit is not None:
                series["hook"].append(hook_tap.hit - t0)
        gate = Gate()
        if held is not None:
            await held.job("hits", timeout=10, pattern='"pane.removed"', wait=5.0)
        subs.arm(removed, gate)
        await farm.arun("kill-pane", "-t", new)
        if not await gate.wait(5.0):
            misses += 1
        if held is not None and not (await held.answer(30))["complete"]:
            misses += 1
        for tap in subs.taps:
            tap.disarm()
    for key, values in series.items():
        if values:
            res.add(f"B3 {label} {key}", farm.total, values)
    if misses:
        res.misses.append(f"B3 {label} at {farm.total} panes: {misses} of {n} samples timed out")


async def split_off(farm: Farm, pane: str) -> str:
    """``split-window -d`` of ``pane`` (as a client of its own): the new pane's id."""
    return (
        await farm.arun("split-window", "-d", "-t", pane, "-P", "-F", "#{pane_id}", *PANE_CMD)
    ).strip()


async def hook_floor(farm: Farm, bus: Bus, targets: Targets, n: int, res: Results) -> None:
    """tmux alone, no daemon: the daemon's own hooks (``mirror.install_hooks``) and, on tmux
    3.3, its own waiter client (``tmuxlocd.core.attach.waiter_argv``), for a bare control client
    attached to the split's session.  Per split: when that client reads the
    ``%layout-change``, and when the hook's rows arrive (3.3: the waiter's round; 3.4+: the
    ``%message`` on the same client).  What the daemon does with the rows comes after this.
    """
    from tmuxlocd.core import spelling
    from tmuxlocd.core.attach import WAITER_CHAIN, WAITER_MARK, channel, waiter_argv
    from tmuxlocd.core.mirror import (
        MESSAGE_PREFIX,
        ServerMirror,
        install_hooks,
        remove_hooks,
        uses_message_hooks,
    )

    peer = await attach_control(farm, targets.attached_session, "no-output,ignore-size", bus)
    # tmux 3.3 may answer a new control client's commands before its attach completes, with
    # an empty #{client_name} (the observer waits the same way): the waiter's liveness check
    # would then fail and end it.  %session-changed says the attach is done.
    if not await bus.wait_for(
        lambda: any(line.startswith(b"%session-changed ") for _, line in peer.lines), 5.0
    ):
        raise RuntimeError("the control client's attach did not complete")
    mirror = ServerMirror(farm.socket)
    mirror.client_name = (await peer.command("display-message -p '#{client_name}'"))[0].decode()
    if not mirror.client_name:
        raise RuntimeError("tmux named no client_name for the attached control client")
    mirror.version = (await peer.command("display-message -p '#{version}'"))[0].decode()
    pushed = uses_message_hooks(mirror.version)
    start = b"%layout-change " + targets.attached_window.encode() + b" "
    message = b"%message " + MESSAGE_PREFIX.encode()
    seen: list[float] = []  # this sample's %layout-change
    rows: list[float] = []  # and the first rows that came after it

    def on_line(t: float, line: bytes) -> None:
        if line.startswith(start) and not seen:
            seen.append(t)
        elif pushed and line.startswith(message) and not rows:
            rows.append(t)

    peer.on_line = on_line
    # On 3.3 the waiter clients: each serves WAITER_CHAIN rounds (one per split or kill), so
    # the next is started while the current has two left, as the observer does.
    waiters: list[tuple[asyncio.subprocess.Process, asyncio.Task[None], list[int]]] = []

    async def spawn_waiter() -> None:
        proc = await asyncio.create_subprocess_exec(
            *waiter_argv(
                farm.tmux, farm.socket, spelling.PLAIN, channel(os.getuid()), mirror.client_name
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", os.defpath)},
            start_new_session=True,
            limit=1 << 22,
        )
        served = [0]

        async def read(out: asyncio.StreamReader) -> None:
            while line := await out.readline():
                if line.startswith(WAITER_MARK.encode()):
                    served[0] += 1
                    if not rows:
                        rows.append(time.perf_counter())
                bus.notify()

        assert proc.stdout is not None
        waiters.append((proc, asyncio.ensure_future(read(proc.stdout)), served))

    lc: list[float] = []
    came: list[float] = []
    for argv in install_hooks(mirror, channel(os.getuid())):
        farm.run(*argv)
    try:
        for _ in range(n):
            if not pushed:
                if any(
                    proc.returncode is not None and (proc.returncode or served[0] < WAITER_CHAIN)
                    for proc, _, served in waiters
                ):
                    raise RuntimeError("a waiter client ended before serving all its rounds")
                live = [served for proc, _, served in waiters if proc.returncode is None]
                if not live or WAITER_CHAIN - live[-1][0] <= 2:
                    # The current one (if any) still serves this sample's split and kill.
                    await spawn_waiter()
            await bus.quiet(0.06)
            seen.clear()
            rows.clear()
            t0 = time.perf_counter()
            new = await split_off(farm, targets.attached_pane)
            if await bus.wait_for(lambda: bool(seen and rows), 5.0):
                lc.append(seen[0] - t0)
                came.append(rows[0] - t0)
            await farm.arun("kill-pane", "-t", new)
    finally:
        peer.on_line = None
        for argv in remove_hooks(mirror):
            farm.run(*argv, check=False)
        await peer.close()
        for proc, reader, _ in waiters:
            if proc.returncode is None:
                # Its next round finds the control client gone, which ends its command list.
                farm.run("wait-for", "-S", channel(os.getuid()), check=False)
                try:
                    await asyncio.wait_for(proc.wait(), 5)
                except TimeoutError:
                    proc.kill()
                    await proc.wait()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
    res.add("B3 floor hook layout-change", farm.total, lc)
    res.add("B3 floor hook rows", farm.total, came)
    if len(came) < n:
        res.misses.append(f"B3 hook floor at {farm.total} panes: {n - len(came)} of {n} timed out")


async def propagation_rows(
    farm: Farm,
    bus: Bus,
    subs: Subscribers,
    daemon_socket: str,
    targets: Targets,
    sub_counts: tuple[int, ...],
    n: int,
    res: Results,
    held: ProbeProc | None = None,
    daemon_pid: int | None = None,
) -> None:
    """B3 with each number of subscribers in ``sub_counts``, in the observer's session and in
    another.  One subscriber is read by this process; more are held by ``held`` (its own
    process, as subscribers are), which keeps them open when this returns (B4 measures with
    them).

    The alternatives measured next to the daemon: a bare control client attached to the
    observer's session (it sees only its own session's ``%layout-change``; for many
    subscribers, a second one that ``held`` reads with them) and a ``run-shell -b`` hook (it
    fires for any session).  The rows are named
    ``B3 {attached|other} {count} {first|last|cm|hook|cli}``, which the report reads; with
    ``daemon_pid``, also the daemon's time on a CPU and waiting for one per change
    (``sched_per_change``)."""
    cm_tap, hook_tap = Tap(), Tap()
    flags = "no-output,ignore-size,read-only"
    cm = await attach_control(farm, targets.attached_session, flags, bus)
    cm.on_line = cm_tap.see
    # The same control client again, held by ``held`` for the rows of many subscribers.
    control_argv = ("-C", "attach-session", "-t", targets.attached_session, "-f", flags)
    attached = False
    try:
        with hook_fifo(farm, bus, hook_tap):
            for nsubs in sub_counts:
                log(f"{farm.total} panes: B3 propagation, {nsubs} subscriber(s)")
                many = nsubs > 1
                if many:
                    if held is None:
                        raise ValueError("more than one subscriber needs the streams' holder")
                    subs.close()
                    await held.job("connect", socket=daemon_socket, target=EVENTS, n=nsubs)
                    if not attached:
                        await held.job("attach", argv=farm.argv(*control_argv))
                        attached = True
                else:
                    await subs.connect(daemon_socket, nsubs - len(subs.streams))
                for where, pane, window, peer in (
                    ("attached", targets.attached_pane, targets.attached_window, cm),
                    ("other", targets.other_pane, targets.other_window, None),
                ):
                    label = f"{where} {nsubs}"
                    before = procstat.sched_seconds(daemon_pid) if daemon_pid else None
                    await propagation(
                        farm, bus, subs, peer, cm_tap, hook_tap, pane, window, n, res,
                        label, held if many else None,
                    )  # fmt: skip
                    if daemon_pid and before is not None:
                        sched_per_change(res, f"B3 {label}", farm.total, daemon_pid, before, n)
    finally:
        if attached and held is not None:
            await held.job("detach", timeout=30)
        await cm.close()


async def split_cost(
    farm: Farm,
    driver: ControlPeer,
    bus: Bus,
    subs: Subscribers | None,
    pane: str,
    k: int,
) -> tuple[float, float]:
    """B7: tmux-server CPU seconds over ``k`` split+kill pairs made over a control
    connection (no client start-up), and the wall time they took.  With ``subs``, each step
    waits for the daemon's event, so the daemon's re-read of each change is inside the
    window; the pacing is the same without it."""
    await bus.quiet(0.2)
    c0 = procstat.cpu_ticks(farm.pid)
    w0 = time.perf_counter()
    for _ in range(k):
        for step in ("split", "kill"):
            gate = Gate()
            if subs is not None:
                subs.arm(added if step == "split" else removed, gate)
            if step == "split":
                out = await driver.command(
                    f"split-window -d -t {pane} -P -F '#{{pane_id}}' {' '.join(PANE_CMD)}"
                )
                new = out[0].decode().strip()
            else:
                await driver.command(f"kill-pane -t {new}")
            if subs is not None and not await gate.wait(5.0):
                raise RuntimeError("the daemon did not report a split in time")
            # Real splits are seconds apart: let each change be handled on its own
            # (hook confirmations, debounce) rather than coalesced with the next.
            await asyncio.sleep(0.04)
    await asyncio.sleep(0.3)
    return (procstat.cpu_ticks(farm.pid) - c0) / procstat.CLK_TCK, time.perf_counter() - w0


async def list_cost(farm: Farm, driver: ControlPeer, fmt: str, k: int) -> float:
    """Server CPU seconds of one ``list-panes -a -F fmt`` over a control connection."""
    c0 = procstat.cpu_ticks(farm.pid)
    for _ in range(k):
        await driver.command(f"list-panes -a -F '{fmt}'")
    return (procstat.cpu_ticks(farm.pid) - c0) / procstat.CLK_TCK / k


async def idle_cpu(farm: Farm, daemon: Daemon | None, seconds: float) -> dict[str, float]:
    s0 = procstat.cpu_seconds(farm.pid)
    d0 = daemon.cpu() if daemon else (0.0, 0.0)
    await asyncio.sleep(seconds)  # the measured idle interval itself
    s1 = procstat.cpu_seconds(farm.pid)
    d1 = daemon.cpu() if daemon else (0.0, 0.0)
    return {"server": s1 - s0, "daemon": d1[0] - d0[0], "clients": d1[1] - d0[1]}


# ------------------------------------------------------------------------------ one size


def add_cost(before: tuple[float, float] | None, more: tuple[float, float]) -> tuple[float, float]:
    """(CPU, wall) of one more round added to those before (None: the first round)."""
    return more if before is None else (before[0] + more[0], before[1] + more[1])


async def costs_without_daemon(
    farm: Farm, bus: Bus, targets: Targets, plan: Plan, res: Results
) -> None:
    """What tmux spends alone, before any daemon runs: its idle CPU (B5's base), a split in
    the attached and in another session (B7's base) and one full listing of the location
    fields and of the daemon's own (B7's yardstick).  Figures of rounds of one size add up."""
    from tmuxlocd.core.model import PANE_FORMAT

    panes = farm.total
    base = await idle_cpu(farm, None, plan.idle_s)
    res.facts[f"B5 server idle without daemon@{panes}"] = base["server"]
    pair_fmt = "\t".join(f"#{{{f}}}" for f in LOCATION_FIELDS)
    driver = await attach_control(farm, targets.other_session, "no-output,ignore-size", bus)
    try:
        for label, pane in (("attached", targets.attached_pane), ("other", targets.other_pane)):
            cost = await split_cost(farm, driver, bus, None, pane, plan.split_k)
            key = f"B7 without {label}@{panes}"
            res.facts[key] = add_cost(res.facts.get(key), cost)
        res.facts[f"B7 list-panes location fields@{panes}"] = await list_cost(
            farm, driver, pair_fmt, plan.list_k
        )
        res.facts[f"B7 list-panes daemon fields@{panes}"] = await list_cost(
            farm, driver, PANE_FORMAT, plan.list_k
        )
        costs = await command_costs(farm, bus, targets.attached_session, plan.list_k * 20)
        res.facts[f"tmux command costs@{panes}"] = costs
    finally:
        await driver.close()


async def identity_rows(
    farm: Farm,
    probe: ProbeLink,
    daemon: Daemon,
    panes: int,
    plan: Plan,
    res: Results,
    tmux: str,
    probe_pane: str,
) -> Floor:
    """B6, B1 and B2, asked by the probe in its pane, the floor app beside the daemon (the
    floor is returned running: B4 asks it again)."""
    # What the probe's pane looks like to the daemon, and the bytes a model reads (B6).
    me = await probe.job("fetch", socket=daemon.socket, path="/v1/self")
    body = json.loads(me["body"])
    if not body.get("inside_tmux"):
        raise RuntimeError(f"/v1/self from the probe's pane says: {me['body']}")
    self_size = me["length"]
    res.facts[f"B1 self body bytes@{panes}"] = self_size
    text = await probe.job("fetch", socket=daemon.socket, path="/v1/self?format=text")
    res.facts[f"B6 self text@{panes}"] = text["length"]
    res.facts[f"B6 self text body@{panes}"] = text["body"]
    summary = await probe.job(
        "fetch", socket=daemon.socket, path="/v1/panes?window=self&detail=summary"
    )
    res.facts[f"B6 summary@{panes}"] = summary["length"]
    res.facts[f"B6 summary panes@{panes}"] = len(json.loads(summary["body"])["panes"])
    rows = await asyncio.to_thread(farm.dump_json_rows, LOCATION_FIELDS)
    res.facts[f"B6 dump location fields@{panes}"] = len(json.dumps(rows).encode())
    from libtmux.neo import get_output_format

    lib_fields, _ = get_output_format("list-panes", farm.run("-V").split()[-1])
    rows = await asyncio.to_thread(farm.dump_json_rows, lib_fields)
    rows = [{k: v for k, v in row.items() if v} for row in rows]
    res.facts[f"B6 dump libtmux fields@{panes}"] = len(json.dumps(rows).encode())
    res.facts["B6 libtmux field count"] = len(lib_fields)

    floor = Floor(farm.dir, self_size)
    await floor.start()

    # B1: keep-alive latency, the daemon and the floor app round robin, two at a time: with
    # a third target on the daemon in the same rotation (its /v1/panes/N), the daemon
    # answered two requests of every three and met each /v1/self still busy from the one
    # before, while the floor app had slept through two gaps; that measured the daemon at
    # 0.87-0.93x its floor where a pair measures 1.07-1.13x.
    pane_num = probe_pane.lstrip("%")
    log(f"{panes} panes: B1 latency")
    self_and_floor = [
        {"name": "self", "socket": daemon.socket, "path": "/v1/self"},
        {"name": "floor", "socket": floor.socket, "path": "/v1/self"},
    ]
    # A round first, not counted: the first requests of new connections to a process that
    # was just started (the floor app) measured slower than later ones.
    await probe.job(
        "latency", n=plan.warm_n, warmup=0, gap_s=plan.latency_gap_s, targets=self_and_floor
    )
    lat = await probe.job(
        "latency",
        n=plan.latency_n,
        warmup=50,
        gap_s=plan.latency_gap_s,
        targets=self_and_floor,
    )
    for name, values in lat["samples"].items():
        res.add(f"B1 keepalive {name}", panes, values)
    lat = await probe.job(
        "latency",
        n=plan.latency_n,
        warmup=50,
        gap_s=plan.latency_gap_s,
        targets=[
            {"name": "pane", "socket": daemon.socket, "path": f"/v1/panes/{pane_num}"},
            {"name": "floor", "socket": floor.socket, "path": "/v1/self"},
        ],
    )
    res.add("B1 keepalive pane", panes, lat["samples"]["pane"])
    res.add("B1 keepalive pane floor", panes, lat["samples"]["floor"])
    b2b = await probe.job(
        "latency",
        n=plan.b2b_n,
        warmup=50,
        gap_s=0.0,
        targets=[
            {"name": "self", "socket": daemon.socket, "path": "/v1/self"},
            {"name": "floor", "socket": floor.socket, "path": "/v1/self"},
        ],
    )
    for name, values in b2b["samples"].items():
        res.add(f"B1 back-to-back {name}", panes, values)
    curl = await probe.job(
        "curl",
        n=plan.curl_n,
        warmup=2,
        targets=[
            {"name": "self", "socket": daemon.socket, "path": "/v1/self"},
            {"name": "floor", "socket": floor.socket, "path": "/v1/self"},
        ],
    )
    for name, values in curl["samples"].items():
        res.add(f"B1 curl {name}", panes, values)
    alts = await probe.job(
        "alternatives",
        n=plan.alts(panes),
        warmup=1,
        tmux=tmux,
        server=farm.socket,
        pane=probe_pane,
        fmt=SELF_FORMAT,
    )
    for name, values in alts["samples"].items():
        res.add(f"B1 {name}", panes, values)

    # B2: throughput, 1 and 8 connections, and the server's CPU per request (less
    # sensitive than the rate to whatever else the machine is doing).
    log(f"{panes} panes: B2 throughput")
    servers = {"self": (daemon.socket, daemon.pid), "floor": (floor.socket, floor.pid)}
    for conns in (1, 8):
        for rnd in range(plan.tput_rounds):
            order = ["self", "floor"] if rnd % 2 == 0 else ["floor", "self"]
            for name in order:
                sock, pid = servers[name]
                c0 = procstat.cpu_seconds(pid)
                tput = await probe.job(
                    "throughput",
                    conns=conns,
                    duration=plan.tput_s,
                    socket=sock,
                    path="/v1/self",
                )
                cpu = procstat.cpu_seconds(pid) - c0
                res.add(f"B2 {conns} {name}", panes, [tput["count"] / tput["elapsed"]])
                res.add(f"B2 cpu {conns} {name}", panes, [cpu / tput["count"]])
    return floor


BUILT = Path.home() / ".cache" / "tmuxlocd" / "tmux"


def built_tmux(version: str) -> str:
    """The binary ``.ci/build-tmux`` made for ``version``."""
    path = BUILT / version / "bin" / "tmux"
    if not os.access(path, os.X_OK):
        raise SystemExit(f"bench: no tmux {version} at {path} (build it with .ci/build-tmux)")
    return str(path)


def tmux_version(tmux: str) -> str:
    out = subprocess.run([tmux, "-V"], capture_output=True, text=True, check=True).stdout
    return out.strip()


@contextlib.contextmanager
def tmux_first_on_path(tmux: str) -> Iterator[None]:
    """The daemon runs the tmux it finds on PATH: put this one first while it is measured."""
    before = os.environ.get("PATH", os.defpath)
    os.environ["PATH"] = str(Path(tmux).resolve().parent) + os.pathsep + before
    try:
        yield
    finally:
        os.environ["PATH"] = before


async def query_floor(farm: Farm, bus: Bus, targets: Targets, n: int, res: Results) -> None:
    """tmux alone, no daemon: a bare control client attached to the split's session sends
    the daemon's window query (``list-panes -t @W`` with its row format) the moment it reads
    the ``%layout-change``, as the daemon does on tmux 3.3.  tmux answers it only once it has
    finished the splitting command, so this is the least a query-based path can add over
    the ``%layout-change`` alternative."""
    from tmuxlocd.core.model import PANE_WINDOW_FORMAT
    from tmuxlocd.core.protocol import command

    peer = await attach_control(
        farm, targets.attached_session, "no-output,ignore-size,read-only", bus
    )
    argv = ("list-panes", "-t", targets.attached_window, "-F", PANE_WINDOW_FORMAT)
    query = command(*argv).decode().rstrip("\n")
    start = b"%layout-change " + targets.attached_window.encode() + b" "
    lc: list[float] = []
    answered: list[float] = []
    seen: list[float] = []  # this sample's %layout-change
    replies: list[asyncio.Task[list[bytes]]] = []  # and the query sent on it

    def on_line(t: float, line: bytes) -> None:
        if not seen and line.startswith(start):
            seen.append(t)
            replies.append(asyncio.ensure_future(peer.command(query)))

    peer.on_line = on_line
    try:
        for _ in range(n):
            await bus.quiet(0.06)
            seen.clear()
            replies.clear()
            t0 = time.perf_counter()
            new = await split_off(farm, targets.attached_pane)
            if await bus.wait_for(lambda: bool(replies), 5.0):
                await replies[0]
                lc.append(seen[0] - t0)
                answered.append(time.perf_counter() - t0)
            await farm.arun("kill-pane", "-t", new)
    finally:
        peer.on_line = None
        await peer.close()
    res.add("B3 floor layout-change", farm.total, lc)
    res.add("B3 floor query answered", farm.total, answered)


# The sections a run measures: every figure (the default), or only what differs by tmux
# version (B3 with one subscriber and many, B7, B5's idle intervals B7's correction needs,
# and the floor of a query-based path), for a given tmux binary.
SECTIONS = ("all", "latency")


async def run_size(
    panes: int,
    plan: Plan,
    res: Results,
    heavy: bool,
    tmux: str,
    section: str = "all",
) -> None:
    """One fresh server of ``panes`` panes and a daemon on it: the figures of ``section``.
    ``heavy`` (the largest size) adds those measured once: B4, B5, B7, activity."""
    everything = section == "all"
    log(f"{panes} panes: building the tmux server")
    farm = Farm(tmux, panes)
    bus = Bus()
    probe = ProbeLink(str(farm.dir / "ctl.sock"))
    daemon: Daemon | None = None
    floor: Floor | None = None
    subs = Subscribers(bus)
    held = ProbeProc()  # B3's many subscribers, and B4's
    try:
        probe_pane = ""
        if everything:
            # The identity rows' client runs in a pane: /v1/self knows it by its tty.
            await probe.listen()
            await asyncio.to_thread(
                farm.build, [sys.executable, "-m", "bench.client_probe", probe.path], str(REPO)
            )
            await probe.connected(60)
            probe_pane = str(probe.hello["pane"])
            log(f"{panes} panes: probe in {probe_pane} on {probe.hello['tty']}")
        else:
            await asyncio.to_thread(farm.build, list(PANE_CMD), str(REPO))

        # Planned split targets (the observer attaches to the lowest session id when no
        # client is attached; checked below once the daemon runs).
        first_targets = pick_targets(farm, "$0")
        if heavy:
            log(f"{panes} panes: idle tmux server and split cost without the daemon")
            await costs_without_daemon(farm, bus, first_targets, plan, res)
        if not everything:
            log(f"{panes} panes: a query-based path's floor (tmux alone)")
            await query_floor(farm, bus, first_targets, plan.props(panes), res)

        log(f"{panes} panes: the daemon's hooks alone (B3's floor of the hook path)")
        await hook_floor(farm, bus, first_targets, plan.props(panes), res)

        log(f"{panes} panes: starting the daemon")
        daemon = Daemon(farm)
        t_start = time.perf_counter()
        await daemon.start()
        res.facts[f"daemon ready s@{panes}"] = time.perf_counter() - t_start
        attached = observer_session(farm, daemon)
        targets = pick_targets(farm, attached)
        res.facts[f"RSS no subscribers@{panes}"] = procstat.rss_bytes(daemon.pid)
        if everything:
            floor = await identity_rows(farm, probe, daemon, panes, plan, res, tmux, probe_pane)

        # B3: change propagation, 1 subscriber then many.
        await held.start()
        await propagation_rows(
            farm,
            bus,
            subs,
            daemon.socket,
            targets,
            (1, plan.many_subs),
            plan.props(panes),
            res,
            held,
            daemon.pid,
        )

        if heavy and floor is not None:
            # B4: memory and latency with many subscribers connected (held's).
            log(f"{panes} panes: B4 with {plan.many_subs} subscribers")
            res.facts[f"B4 subscribers@{panes}"] = plan.many_subs
            res.facts[f"B4 RSS@{panes}"] = procstat.rss_bytes(daemon.pid)
            lat = await probe.job(
                "latency",
                n=plan.latency_n,
                warmup=50,
                gap_s=plan.latency_gap_s,
                targets=[
                    {"name": "self", "socket": daemon.socket, "path": "/v1/self"},
                    {"name": "floor", "socket": floor.socket, "path": "/v1/self"},
                ],
            )
            for name, values in lat["samples"].items():
                res.add(f"B4 keepalive {name}", panes, values)
        await held.stop()
        if heavy:
            if floor is not None:
                await floor.stop()
                floor = None

            # B7 with the daemon: its re-reads of each change are inside the window.
            log(f"{panes} panes: B7 split cost with the daemon")
            one = Subscribers(bus)
            await one.connect(daemon.socket, 1)
            driver = await attach_control(
                farm, first_targets.other_session, "no-output,ignore-size", bus
            )
            try:
                for label, pane in (
                    ("attached", targets.attached_pane),
                    ("other", targets.other_pane),
                ):
                    cost = await split_cost(farm, driver, bus, one, pane, plan.split_k)
                    key = f"B7 with {label}@{panes}"
                    res.facts[key] = add_cost(res.facts.get(key), cost)
                res.facts[f"B7 rounds@{panes}"] = res.facts.get(f"B7 rounds@{panes}", 0) + 1
            finally:
                await driver.close()
                one.close()

            # B5: idle, no subscribers, nothing happening.
            log(f"{panes} panes: B5 idle with the daemon ({plan.idle_s:.0f} s)")
            await bus.quiet(0.5)
            idle = await idle_cpu(farm, daemon, plan.idle_s)
            res.facts[f"B5 idle with daemon@{panes}"] = idle
            res.facts["B5 idle seconds"] = plan.idle_s
            # B7's figures are sums over the rounds (``--rounds``): so is its count of splits.
            res.facts[f"B7 split_k@{panes}"] = plan.split_k * res.facts[f"B7 rounds@{panes}"]

        if heavy and everything:
            log(f"{panes} panes: pane activity (CPU with 0, 10, all watched; end latency)")
            activity_cpu, latency = await activity.measure(
                farm, daemon.socket, daemon.pid, plan.activity_s, plan.activity_runs
            )
            res.facts[f"A cpu@{panes}"] = activity_cpu
            errors = [ln for ln in daemon.tail().splitlines() if " ERROR " in ln]
            res.facts[f"daemon errors after the activity measurement@{panes}"] = errors[-3:]
            res.facts["A cpu seconds"] = plan.activity_s
            for name, values in latency.items():
                res.add(f"activity {name}", panes, values)

        if not everything:
            return
        res.facts[f"RSS end@{panes}"] = procstat.rss_bytes(daemon.pid)
        own, kids = daemon.cpu()
        res.facts[f"daemon CPU total@{panes}"] = (own, kids)
        # Fan-out, memory with 1,000 streams and the restart storm: last, as it restarts
        # the daemon.
        from bench import fanout

        subs.close()
        await fanout.measure(farm, daemon, plan.quick, res)
    except Exception:
        if daemon is not None:
            log("daemon log tail:\n" + daemon.tail())
        raise
    finally:
        subs.close()
        await held.stop()
        if floor is not None:
            await floor.stop()
        if daemon is not None:
            await daemon.stop()
        await probe.close()
        farm.kill()


async def run_section(tmux: str, plan: Plan, rounds: int, section: str) -> Results:
    """Every size, ``rounds`` times, on one tmux binary (put first on PATH: the daemon runs
    the tmux it finds there), each on a fresh server and daemon, so that a burst of other
    work on the machine shows as a round that differs, not as one wrong number."""
    res = Results()
    res.facts.update(machine_facts(tmux))
    res.facts["section"] = section
    res.facts["sizes"] = list(plan.sizes)
    heaviest = max(plan.sizes)
    with tmux_first_on_path(tmux):
        for rnd in range(rounds):
            for panes in plan.sizes:
                load0 = os.getloadavg()[0]
                log(f"{res.facts['tmux']}: {panes} panes, round {rnd + 1} of {rounds}")
                await run_size(panes, plan, res, panes == heaviest, tmux, section)
                loads = res.facts.setdefault(f"load average (1 min) before, after@{panes}", [])
                loads.append((load0, os.getloadavg()[0]))
    return res
