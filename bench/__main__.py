"""``python -m bench [--quick] [--section all|latency] [--out FILE] [--sizes 10,100,1000]
[--tmux PATH ...] [--tmux-versions 3.4,3.6b] [--rounds R]``.

``--section all`` (the default) measures every figure on the tmux found on ``PATH`` and
writes bench/RESULTS.md; ``--tmux-versions`` then appends a latency section per version.
``--section latency`` measures only what differs by tmux version (B3 with one subscriber
and many, B7, a query-based path's floor) on each binary named (``--tmux``, or
``--tmux-versions``, looked up where ``.ci/build-tmux`` installs them:
``~/.cache/tmuxlocd/tmux/<version>/bin/tmux``), ``--rounds`` times each.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import time
from pathlib import Path

from bench.report import build_rows, goal_table, render, summary
from bench.runner import SECTIONS, Plan, built_tmux, run_section


def latency_plan(plan: Plan) -> Plan:
    """The latency section's counts: B7's idle correction needs only short idle intervals."""
    if plan.quick:
        return dataclasses.replace(plan, prop_n={10: 10}, idle_s=1.0)
    return dataclasses.replace(plan, idle_s=min(plan.idle_s, 10.0))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="10 panes, few iterations: seconds in total (smoke test)",
    )
    parser.add_argument("--section", choices=SECTIONS, default="all", help="what to measure")
    parser.add_argument("--out", type=Path, help="where to write the results (Markdown)")
    parser.add_argument("--sizes", help="pane counts, comma-separated (default 10,100,1000)")
    parser.add_argument("--tmux", action="append", default=[], help="a tmux binary (repeatable)")
    parser.add_argument(
        "--tmux-versions",
        help="versions built by .ci/build-tmux, comma-separated (e.g. 3.4,3.6b): a latency "
        "section for each",
    )
    parser.add_argument("--rounds", type=int, default=1, help="fresh server+daemon per round")
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None
    plan = Plan.make(args.quick, sizes)
    versions = [built_tmux(v) for v in (args.tmux_versions or "").split(",") if v]
    parts: list[str] = []
    if args.section == "all":
        tmux = shutil.which("tmux")
        if tmux is None:
            raise SystemExit("bench: no tmux on PATH")
        t0 = time.monotonic()
        res = asyncio.run(run_section(tmux, plan, args.rounds, "all"))
        res.facts["quick"] = plan.quick
        res.facts["run seconds"] = round(time.monotonic() - t0, 1)
        rows = build_rows(res)
        print(goal_table(rows))
        print()
        print(summary(rows))
        for miss in res.misses:
            print(f"timed out: {miss}")
        parts.append(render(res))
        binaries = [*args.tmux, *versions]
        out = args.out or Path(__file__).parent / "RESULTS.md"
    else:
        found = shutil.which("tmux")
        binaries = [*args.tmux, *versions] or ([found] if found else [])
        if not binaries:
            raise SystemExit("bench: no tmux on PATH")
        out = args.out
    for tmux in binaries:
        res = asyncio.run(run_section(tmux, latency_plan(plan), args.rounds, "latency"))
        part = render(res)
        print(part)
        parts.append(part)
    if out is not None:
        out.write_text("\n".join(parts))
        print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
