"""``python -m bench [--quick] [--out bench/RESULTS.md] [--sizes 10,100,1000]``."""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.report import build_rows, goal_table, render, summary
from bench.rig import Results
from bench.runner import Plan, run


def machine_facts(res: Results) -> None:
    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("bench: no tmux on PATH")
    res.facts["tmux"] = subprocess.run(
        [tmux, "-V"], capture_output=True, text=True, check=True
    ).stdout.strip()
    res.facts["python"] = sys.version.split()[0]
    res.facts["cores"] = os.cpu_count()
    res.facts["date"] = time.strftime("%Y-%m-%d %H:%M %Z")
    # Which daemon was measured: the commit, and whether its package had local changes.
    git = shutil.which("git")
    if git is not None:
        repo = Path(__file__).resolve().parent.parent
        head = subprocess.run(
            [git, "rev-parse", "--short", "HEAD"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        dirty = subprocess.run(
            [git, "status", "--porcelain", "--", "tmuxlocd"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if head:
            res.facts["commit"] = head + (" (tmuxlocd/ with local changes)" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="10 panes, few iterations: seconds in total (smoke test)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).parent / "RESULTS.md",
        help="where to write the results (Markdown)",
    )
    parser.add_argument("--sizes", help="pane counts, comma-separated (default 10,100,1000)")
    parser.add_argument(
        "--tmux-versions",
        help="also measure B3 and B7 on these tmux versions, as built by .ci/build-tmux "
        "(comma-separated, e.g. 3.4,3.6b): a section per version (bench.latency)",
    )
    args = parser.parse_args(argv)
    sizes = tuple(int(s) for s in args.sizes.split(",")) if args.sizes else None
    plan = Plan.make(args.quick, sizes)
    res = Results()
    machine_facts(res)
    res.facts["sizes"] = list(plan.sizes)
    res.facts["quick"] = plan.quick
    t0 = time.monotonic()
    asyncio.run(run(plan, res))
    res.facts["run seconds"] = round(time.monotonic() - t0, 1)
    rows = build_rows(res)
    print(goal_table(rows))
    print()
    print(summary(rows))
    for miss in res.misses:
        print(f"timed out: {miss}")
    text = render(res)
    if args.tmux_versions:
        import dataclasses

        from bench import latency

        # The idle intervals only serve B7's correction here: ten seconds do.
        short = dataclasses.replace(plan, idle_s=min(plan.idle_s, 10.0))
        for version in args.tmux_versions.split(","):
            if version:
                part = latency.section(
                    asyncio.run(latency.run_version(latency.built_tmux(version), short, 1))
                )
                print(part)
                text += "\n" + part
    args.out.write_text(text)
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
