"""B3 (one subscriber and 100) and B7 alone, on one or more tmux binaries.

    python -m bench.latency [--quick] [--sizes 10,100,1000] [--tmux-versions 3.4,3.6b]
        [--tmux PATH ...] [--rounds R] [--out FILE]

Change propagation depends on the tmux version: 3.3 and older signal a change in another
session through a ``wait-for`` channel, 3.4+ through a ``%message`` to the daemon's own
control client.  ``python -m bench`` measures everything on the tmux found on ``PATH``; this
measures what differs by version, on each binary named (``--tmux-versions`` looks them up
where ``.ci/build-tmux`` installs them: ``~/.cache/tmuxlocd/tmux/<version>/bin/tmux``).
``python -m bench --tmux-versions ...`` appends these sections to its results.

Each size is measured ``--rounds`` times on a fresh server and daemon, so that a burst of
other work on the machine shows as a round that differs, not as one wrong number.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from bench.fanout_proc import ProbeProc
from bench.report import build_rows, goal_table, hook_gaps, summary
from bench.rig import Daemon, Results, Targets, log, observer_session, pick_targets
from bench.runner import (
    Plan,
    Subscribers,
    add_cost,
    costs_without_daemon,
    hook_floor,
    idle_cpu,
    propagation_rows,
    split_cost,
    split_off,
)
from bench.stats import fmt_ms, median
from bench.tmuxfarm import PANE_CMD, Bus, Farm, attach_control

REPO = Path(__file__).resolve().parent.parent
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


async def measure_size(
    tmux: str, panes: int, plan: Plan, res: Results, *, b7: bool, rnd: int
) -> None:
    """One fresh server of ``panes`` panes and a daemon on it: B3 with one subscriber and
    with ``plan.many_subs`` (held by ``bench.fanout_probe``, as in ``python -m bench``) in the
    observer's session and in another, and (``b7``) the tmux CPU each split costs."""
    farm = Farm(tmux, panes)
    bus = Bus()
    daemon: Daemon | None = None
    subs = Subscribers(bus)
    held = ProbeProc()
    try:
        await asyncio.to_thread(farm.build, list(PANE_CMD), str(REPO))
        first = pick_targets(farm, "$0")
        if b7:
            await costs_without_daemon(farm, bus, first, plan, res)
        await query_floor(farm, bus, first, plan.props(panes), res)
        await hook_floor(farm, bus, first, plan.props(panes), res)
        daemon = Daemon(farm)
        await daemon.start()
        attached = observer_session(farm, daemon)
        targets = pick_targets(farm, attached)
        # One subscriber, then many: how the rows reach the daemon differs by version (3.3:
        # its waiter client; 3.4+: a %message on its control connection), and with it how
        # much of the machine tmux takes while the daemon writes to every stream.
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
        )
        # B7 times its splits with one subscriber: the 100 streams would put the daemon's
        # writes to each of them inside every split's window.  (The finally stops them on
        # an error too; stopping twice is a no-op.)
        await held.stop()
        if b7:
            # The daemon's idle cost (its digest) over the splits' wall time is taken off
            # by the report, from the idle intervals measured with and without it.
            driver = await attach_control(farm, first.other_session, "no-output,ignore-size", bus)
            try:
                for label, pane in (
                    ("attached", targets.attached_pane),
                    ("other", targets.other_pane),
                ):
                    cpu, wall = await split_cost(farm, driver, bus, subs, pane, plan.split_k)
                    res.facts[f"B7 with {label}@{panes}"] = add_cost(
                        res.facts.get(f"B7 with {label}@{panes}"), (cpu, wall)
                    )
                    res.facts[f"B7 rounds@{panes}"] = rnd + 1
            finally:
                await driver.close()
            await bus.quiet(0.3)
            res.facts[f"B5 idle with daemon@{panes}"] = await idle_cpu(farm, daemon, plan.idle_s)
            res.facts["B5 idle seconds"] = plan.idle_s
    except Exception:
        if daemon is not None:
            log("daemon log tail:\n" + daemon.tail())
        raise
    finally:
        await held.stop()
        subs.close()
        if daemon is not None:
            await daemon.stop()
        farm.kill()


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


async def run_version(tmux: str, plan: Plan, rounds: int) -> Results:
    """Every size, ``rounds`` times, on one tmux binary."""
    res = Results()
    res.facts["tmux"] = tmux_version(tmux)
    res.facts["sizes"] = list(plan.sizes)
    heaviest = max(plan.sizes)
    with tmux_first_on_path(tmux):
        for rnd in range(rounds):
            for panes in plan.sizes:
                load0 = os.getloadavg()[0]
                log(f"{res.facts['tmux']}: {panes} panes, round {rnd + 1} of {rounds}")
                b7 = panes == heaviest
                await measure_size(tmux, panes, plan, res, b7=b7, rnd=rnd)
                loads = res.facts.setdefault(f"load average (1 min) before, after@{panes}", [])
                loads.append((load0, os.getloadavg()[0]))
    # B7 facts are sums over the rounds; the report divides by split_k: scale it to match.
    res.facts[f"B7 split_k@{heaviest}"] = plan.split_k * res.facts.get(f"B7 rounds@{heaviest}", 1)
    return res


def plan_many(res: Results, panes: int) -> int:
    """The largest number of subscribers B3 was measured with at ``panes``."""
    counts = {int(k.split()[2]) for k in res.series if k.startswith("B3 attached ")}
    return max((c for c in counts if res.get(f"B3 attached {c} last", panes)), default=1)


def section(res: Results) -> str:
    """A results section for one tmux version: the goal rows, and the load it ran under."""
    rows = build_rows(res)
    loads = "; ".join(
        f"{p} panes "
        + ", ".join(
            f"{a:.1f}/{b:.1f}"
            for a, b in res.facts.get(f"load average (1 min) before, after@{p}", [])
        )
        for p in res.facts.get("sizes", [])
    )
    b3 = []
    for p in res.facts.get("sizes", []):
        for where, alt in (("attached", "cm"), ("other", "hook")):
            for count in sorted({1, plan_many(res, p)}):
                key, metric = str(count), "last" if count > 1 else "first"
                mine = res.get(f"B3 {where} {key} {metric}", p)
                other = res.get(f"B3 {where} {key} {alt}", p)
                if mine and other:
                    b3.append(
                        f"{where} {p} ({key} subscriber(s)): n={len(mine)}, daemon "
                        f"{fmt_ms(median(mine))}, alternative {fmt_ms(median(other))}"
                    )
    parts = [
        f"## B3 and B7 on {res.facts.get('tmux')}",
        "",
        f"Load average (1 min) before/after each round: {loads}.",
        "",
        summary(rows),
        "",
        goal_table(rows),
        "",
    ]
    if res.misses:
        parts += ["Timed-out samples:", "", *[f"- {m}" for m in res.misses], ""]
    parts += ["Samples: " + "; ".join(b3) + ".", ""]
    floors = []
    for p in res.facts.get("sizes", []):
        lc = res.get("B3 floor layout-change", p)
        answered = res.get("B3 floor query answered", p)
        if lc and answered:
            gaps = [b - a for a, b in zip(lc, answered, strict=True)]
            floors.append(f"{p} panes +{fmt_ms(median(gaps))} (n={len(gaps)})")
    hooks = []
    for p in res.facts.get("sizes", []):
        gaps = hook_gaps(res, p)
        if gaps:
            hooks.append(f"{p} panes {median(gaps) * 1000:+.2f} ms (n={len(gaps)})")
    if hooks:
        parts += [
            "tmux alone, before the daemon starts: the daemon's own hooks hand a split's rows "
            "to a bare control client attached to its session (3.4+: their `%message` on it) "
            "after its `%layout-change` by: " + "; ".join(hooks) + ".",
            "",
        ]
    if floors:
        parts += [
            "tmux alone, before the daemon starts: a bare control client's `list-panes -t @W` "
            "(the daemon's window query), sent as it reads the split's `%layout-change`, is "
            "answered after that `%layout-change` by: " + "; ".join(floors) + ". A path that "
            "needs a query (tmux 3.3, the observer's session) cannot beat this.",
            "",
        ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 panes, few samples")
    parser.add_argument("--sizes", help="pane counts, comma-separated (default 10,100,1000)")
    parser.add_argument(
        "--tmux-versions", help="versions built by .ci/build-tmux, comma-separated (3.4,3.6b)"
    )
    parser.add_argument("--tmux", action="append", default=[], help="a tmux binary (repeatable)")
    parser.add_argument("--rounds", type=int, default=1, help="fresh server+daemon per round")
    parser.add_argument("--out", type=Path, help="write the sections here (Markdown)")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None
    plan = Plan.make(args.quick, sizes)
    if args.quick:
        plan.prop_n = {10: 10}
        plan.idle_s = 1.0
    else:
        plan.idle_s = 5.0
    binaries = list(args.tmux)
    if args.tmux_versions:
        binaries += [built_tmux(v) for v in args.tmux_versions.split(",") if v]
    if not binaries:
        found = shutil.which("tmux")
        if found is None:
            raise SystemExit("bench: no tmux on PATH")
        binaries = [found]
    text = [
        (
            f"# B3/B7 by tmux version ({time.strftime('%Y-%m-%d %H:%M %Z')}, "
            f"Python {sys.version.split()[0]}, {os.cpu_count()} cores)"
        ),
        "",
    ]
    for tmux in binaries:
        res = asyncio.run(run_version(tmux, plan, args.rounds))
        part = section(res)
        print(part)
        text.append(part)
    if args.out is not None:
        args.out.write_text("\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
