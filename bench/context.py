"""``python -m bench.context [--quick] [--sizes 10,100] [--out bench/RESULTS-context.md]``

The cost of a harness hook per prompt (SPEC §10, B10: at most 1.5x ``python -c pass``, 0 bytes
to the model when the location is unchanged): ``tmuxlocd context`` unchanged and changed,
after a tool call, without a daemon, next to the seed's own per-turn read (``ps`` and two
``display-message``) and ``python -c pass``, all started the same way (a child of a process
in a pane, as a harness starts its hooks), round robin.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.rig import SELF_FORMAT, machine_facts
from bench.stats import fmt_ms, median, p99
from bench.tmuxfarm import Farm

REPO = Path(__file__).resolve().parent.parent
SCRIPT = str(Path(sys.executable).parent / "tmuxlocd")
# What `tmuxlocd install` writes into a harness's hooks for this checkout: this interpreter,
# -S, the hook module's file (tmuxlocd.clients.install.this_hook); a black box, not imported.
HOOK = [sys.executable, "-S", str(REPO / "tmuxlocd" / "clients" / "context.py")]


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise SystemExit(f"bench.context: timed out waiting for {what}")
        time.sleep(0.05)


def one_size(tmux: str, panes: int, n: int, warmup: int) -> dict[str, object]:
    work = Path(tempfile.mkdtemp(prefix="tlbc-", dir="/tmp"))
    daemon_sock = str(work / "d.sock")
    job_path, out_path = work / "job.json", work / "out.json"
    probe = [sys.executable, "-m", "bench.context_probe", str(job_path), str(out_path)]
    farm = Farm(tmux, panes)
    daemon: subprocess.Popen[bytes] | None = None
    try:
        # The probe waits for its job file: the daemon must be up first.
        waiter = [
            "sh",
            "-c",
            f'while [ ! -e {job_path} ]; do sleep 0.05; done; exec "$@"',
            "sh",
            *probe,
        ]
        farm.env["PYTHONPATH"] = str(REPO)
        farm.build(waiter, str(REPO))
        probe_pane = next(p for p in farm.panes() if p["window_name"] == "probe")
        daemon = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tmuxlocd",
                "serve",
                "-S",
                farm.socket,
                "--listen",
                f"unix:{daemon_sock}",
            ],
            env={**farm.env, "TMUXLOCD_SOCKET": daemon_sock},
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: os.path.exists(daemon_sock), 30, "the daemon's socket")
        subprocess.run(
            [
                "curl",
                "-sf",
                "-o",
                os.devnull,
                "-X",
                "POST",
                "--unix-socket",
                daemon_sock,
                "http://localhost/v1/sync",
            ],
            check=True,
            timeout=30,
        )
        job = {
            "launchers": {
                "tmuxlocd context": [SCRIPT, "context"],
                "python -S context.py": HOOK,
            },
            "direct_form": "python -S context.py",
            "tmux": tmux,
            "server": farm.socket,
            "daemon": daemon_sock,
            "no_daemon": str(work / "nobody" / "d.sock"),
            "pane": probe_pane["pane_id"],
            "window": probe_pane["window_id"],
            "fmt": SELF_FORMAT,
            "n": n,
            "warmup": warmup,
        }
        tmp = job_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(job))
        tmp.rename(job_path)
        wait_for(out_path.exists, 60 + n * 10, "the probe's results")
        result: dict[str, object] = json.loads(out_path.read_text())
        if "error" in result:
            raise SystemExit(f"bench.context: the probe failed: {result['error']}")
        return result
    finally:
        if daemon is not None:
            daemon.terminate()
            daemon.wait(timeout=10)
        farm.kill()
        shutil.rmtree(work, ignore_errors=True)


def render(results: dict[int, dict[str, object]], facts: dict[str, object]) -> str:
    lines = [
        "# Harness hooks: `tmuxlocd context` per prompt",
        "",
        "`python -m bench.context` (" + ", ".join(f"{k} {v}" for k, v in facts.items()) + ").",
        "Each row is a child process started from a process in a pane, as a harness starts its",
        "hooks; wall time from spawn to exit, round robin. Ratios against `python -c pass` of",
        "the same phase of the run (the unchanged rows first, then the changed ones, each",
        "phase with its own `python -c pass`; B10: a hook per prompt <= 1.5x `python -c pass`,",
        "0 bytes when unchanged). Both sides pay",
        "the interpreter's start-up with this checkout's site-packages (an editable install's",
        "path finder included). A tool-call row first tells the session its location once",
        "(warm-up), as a prompt would have. `tmuxlocd context` is the console script;",
        "`python -S context.py` is the form `tmuxlocd install` writes (this interpreter, no",
        "site start-up, the module's file). The seed's read is its three subprocesses timed",
        "from an already running process: the seed's hook pays its own interpreter's start on",
        "top of it.",
        "",
    ]
    for panes, res in results.items():
        samples: dict[str, list[float]] = res["samples"]  # type: ignore[assignment]
        stdout: dict[str, list[int]] = res["stdout_bytes"]  # type: ignore[assignment]
        context: dict[str, list[int]] = res["context_bytes"]  # type: ignore[assignment]
        baseline: dict[str, str] = res["baseline"]  # type: ignore[assignment]
        lines += [
            f"## {panes} panes",
            "",
            (
                "| what | p50 | p99 | p50 / `python -c pass` | stdout bytes (p50) | "
                "bytes to the model (p50) |"
            ),
            "|---|---|---|---|---|---|",
        ]
        for name, values in samples.items():
            floor = median(samples[baseline[name]])
            out = median([float(x) for x in stdout[name]]) if stdout[name] else 0
            ctx = median([float(x) for x in context[name]]) if context[name] else 0
            model = f"{ctx:.0f}" if ":" in name else "n/a"
            lines.append(
                f"| {name} | {fmt_ms(median(values))} | {fmt_ms(p99(values))} | "
                f"{median(values) / floor:.2f}x | {out:.0f} | {model} |"
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.context", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="10 panes, few iterations")
    parser.add_argument("--sizes", default="10,100", help="pane counts (default 10,100)")
    parser.add_argument("--n", type=int, default=60, help="samples per row (default 60)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "RESULTS-context.md")
    args = parser.parse_args(argv)
    tmux = shutil.which("tmux")
    if tmux is None:
        raise SystemExit("bench.context: no tmux on PATH")
    sizes = [10] if args.quick else [int(s) for s in args.sizes.split(",")]
    n, warmup = (8, 2) if args.quick else (args.n, 5)
    facts: dict[str, object] = {**machine_facts(tmux), "samples": n}
    facts["tmux"] = str(facts["tmux"]).removeprefix("tmux ")
    # As an installed package has them (pip compiles on install); the environment may say
    # not to write bytecode, and compiling on every start would be measured instead.
    compileall.compile_dir(str(REPO / "tmuxlocd"), quiet=1, force=False)
    results = {panes: one_size(tmux, panes, n, warmup) for panes in sizes}
    text = render(results, facts)
    print(text)
    if not args.quick:
        try:
            before = args.out.read_text()
        except FileNotFoundError:
            before = ""
        args.out.write_text(with_end_to_end(text, before))
    return 0


END_TO_END = "\n## End to end"


def with_end_to_end(text: str, before: str) -> str:
    """The new tables, then the end-to-end sections the file held (rendered from the e2e
    suite by ``tests/e2e/report.py``, not measured here): a run of this bench keeps them."""
    at = before.find(END_TO_END)
    return text if at < 0 else text.rstrip("\n") + "\n" + before[at:]


if __name__ == "__main__":
    raise SystemExit(main())
