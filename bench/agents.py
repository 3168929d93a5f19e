"""``python -m bench.agents [--samples N] [--out bench/RESULTS-agents.md]``

Agent state (SPEC §13): from a hook's start to a subscriber's ``agent.state`` event (the
hook started by a stand-in harness in a pane, as a harness starts its hooks; the subscriber a
``types=agent.state`` stream), the hook's cost next to ``python -c pass`` started the same way,
and the daemon's CPU per report.  A private tmux server and daemon, as the tests have them.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.httpclient import UnixHTTPConnection, get
from bench.stats import fmt_ms, median
from tests.daemontest import PYTHON, REPO, Daemon, Rig, private_rig
from tests.tmuxtest import TMUX, poll

# The hook as `tmuxlocd install` writes it (this interpreter, -S, the hook module's file): a
# black box, not imported.
HOOK = [sys.executable, "-S", os.path.join(REPO, "tmuxlocd", "clients", "context.py")]


def this_hook() -> list[str]:
    return list(HOOK)


HARNESS = str(Path(REPO) / "tests" / "integration" / "agent_harness.py")
TICKS = os.sysconf("SC_CLK_TCK")
# mawk reads a pipe in blocks unless told it is interactive: one line, one command.
AWK = "awk -W interactive" if "mawk" in os.path.realpath(shutil.which("awk") or "") else "awk"


class Harness:
    def __init__(self, rig: Rig) -> None:
        self.dir = rig.root / f"harness{time.monotonic_ns()}"
        self.dir.mkdir()
        os.mkfifo(self.dir / "jobs")
        command = "exec " + " ".join([PYTHON, HARNESS, str(self.dir), *this_hook(), "claude"])
        self.pane = rig.tmux.run("new-window", "-d", "-P", "-F", "#{pane_id}", command).strip()
        poll((self.dir / "pid").exists, 20, "the harness")
        self.n = 0

    def run(self, stdin: str, argv: list[str] | None = None) -> dict[str, Any]:
        self.n += 1
        job: dict[str, Any] = {"n": self.n, "stdin": stdin}
        if argv:
            job["argv"] = argv
        with open(self.dir / "jobs", "w") as fifo:
            fifo.write(json.dumps(job) + "\n")
        done = self.dir / f"{self.n}.done"
        poll(done.exists, 20, f"job {self.n}")
        result: dict[str, Any] = json.loads(done.read_text())
        return result


def event(name: str, **extra: Any) -> str:
    base = {"session_id": "bench", "cwd": REPO, "hook_event_name": name, "transcript_path": ""}
    return json.dumps({**base, **extra})


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def measure(samples: int) -> dict[str, Any]:
    with private_rig(start=True) as rig:
        daemon = Daemon(rig).wait_ready()
        try:
            return _measure(rig, daemon, samples)
        finally:
            daemon.stop()


def _measure(rig: Rig, daemon: Daemon, samples: int) -> dict[str, Any]:
    from tmuxlocd.client import Client
    from tmuxlocd.core.events import AgentStateChanged

    h = Harness(rig)
    h.run(event("SessionStart", source="startup"))
    got: list[tuple[float, str]] = []
    arrived = threading.Condition()
    ready = threading.Event()

    def subscribe() -> None:
        with Client(rig.daemon_socket) as client:
            for ev in client.events(types=["agent.state"], reconnect=False):
                if not isinstance(ev, AgentStateChanged):
                    ready.set()  # the snapshot: subscribed
                    continue
                with arrived:
                    got.append((time.monotonic(), ev.agent.state))
                    arrived.notify_all()

    threading.Thread(target=subscribe, daemon=True).start()
    ready.wait(20)
    latencies: list[float] = []
    hook_times: list[float] = []
    cpu_before = cpu_s(daemon.proc.pid)
    permission = event("PermissionRequest", tool_name="Bash", tool_input={"command": "ls"})
    for i in range(samples * 2):
        sent, state = (permission, "waiting") if i % 2 == 0 else (event("Stop"), "idle")
        seen = len(got)
        done = h.run(sent)
        with arrived:
            arrived.wait_for(lambda: len(got) > seen, 10)  # noqa: B023 - called here, at once
        when, told = got[seen]
        assert told == state, (told, state)
        latencies.append(when - done["started"])
        hook_times.append(done["ended"] - done["started"])
    cpu = cpu_s(daemon.proc.pid) - cpu_before
    # kill -9 of the harness -> the subscriber's gone (the daemon's pidfd wakes it).
    kills: list[float] = []
    for _ in range(max(3, samples // 4)):
        other = Harness(rig)
        other.run(event("SessionStart", source="startup"))
        with arrived:
            arrived.wait_for(lambda: bool(got) and got[-1][1] == "idle", 10)
        seen = len(got)
        pid = int((other.dir / "pid").read_text())
        killed = time.monotonic()
        os.kill(pid, 9)
        with arrived:
            arrived.wait_for(lambda: len(got) > seen, 10)  # noqa: B023 - called here, at once
        when, told = got[seen]
        assert told == "gone", told
        kills.append(when - killed)
    # The hook next to python -c pass, started the same way (sh -c by the harness), round robin.
    rows: dict[str, list[float]] = {"python -c pass": [], "python -S -c pass": [], "hook": []}
    for i in range(samples):
        for name, values in rows.items():
            stdin = permission if i % 2 == 0 else event("Stop")
            argv = None if name == "hook" else [PYTHON, *name.split()[1:]]
            done = h.run(stdin, argv)
            values.append(done["ended"] - done["started"])
    return {
        "latency": latencies,
        "kills": kills,
        "hook_in_loop": hook_times,
        "rows": rows,
        "cpu_per_report": cpu / (samples * 2),
        "reports": samples * 2,
    }


def many(agent_count: int, reports: int) -> dict[str, float]:
    """The daemon's CPU per report with ``agent_count`` agents known, each a small stand-in
    harness (``awk``, running each line it reads through ``sh -c`` as a harness runs hooks):
    every agent registered, then ``reports`` changes round robin, one at a time."""
    with private_rig(start=True) as rig:
        daemon = Daemon(rig).wait_ready()
        try:
            work = rig.root / "many"
            work.mkdir()
            fifos = []
            for i in range(agent_count):
                fifo = work / f"f{i}"
                os.mkfifo(fifo)
                # Read and write: the FIFO never reads end-of-file between two writers.
                rig.tmux.run("new-window", "-d", f"exec {AWK} '{{ system($0) }}' 0<>{fifo}")
                fifos.append(fifo)
            hook = " ".join(this_hook())
            n = 0

            def send(i: int, stdin: str) -> Path:
                nonlocal n
                n += 1
                data, done = work / f"{n}.json", work / f"{n}.done"
                data.write_text(stdin)
                with open(fifos[i], "w") as f:
                    f.write(f"{hook} claude <{data} >/dev/null; touch {done}\n")
                return done

            pending = [
                send(i, event("SessionStart", source="startup", session_id=f"a{i}"))
                for i in range(agent_count)
            ]
            poll(lambda: all(p.exists() for p in pending), 120, "every agent's start")
            poll(lambda: len(agents_of(rig)) == agent_count, 30, "every agent known")
            before = cpu_s(daemon.proc.pid)
            started = time.monotonic()
            for r in range(reports):
                i = r % agent_count
                stdin = (
                    event("PermissionRequest", tool_name="Bash", session_id=f"a{i}")
                    if (r // agent_count) % 2 == 0
                    else event("Stop", session_id=f"a{i}")
                )
                done = send(i, stdin)
                poll(done.exists, 20, f"report {r}")
            wall = time.monotonic() - started
            cpu = cpu_s(daemon.proc.pid) - before
            rss = int(
                next(
                    line.split()[1]
                    for line in Path(f"/proc/{daemon.proc.pid}/status").read_text().splitlines()
                    if line.startswith("VmRSS:")
                )
            )
            return {"cpu_per_report": cpu / reports, "wall": wall, "rss_kib": rss}
        finally:
            daemon.stop()


def agents_of(rig: Rig) -> list[Any]:
    conn = UnixHTTPConnection(rig.daemon_socket)
    try:
        status, _headers, body = get(conn, "/v1/agents")
    finally:
        conn.close()
    return [] if status != 200 else list(json.loads(body)["agents"])


def report(result: dict[str, Any], samples: int) -> str:
    tmux_version = subprocess.run(
        [TMUX or "tmux", "-V"], check=False, capture_output=True, text=True
    ).stdout
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        check=False,
        capture_output=True,
        text=True,
        cwd=REPO,
    ).stdout.strip()
    lat = result["latency"]
    rows = result["rows"]
    base = median(rows["python -c pass"])
    out = [
        "# Agent state: a hook's event to a subscriber",
        "",
        (
            f"`python -m bench.agents` ({tmux_version.strip()}, "
            f"python {platform.python_version()}, "
            f"cores {os.cpu_count()}, date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"samples {samples}, commit {commit})."
        ),
        (
            "A stand-in harness in a pane of a private tmux server starts the installed hook "
            "(`sh -c 'python -S .../context.py claude'`) with a `PermissionRequest` or a `Stop` "
            "event on stdin, alternately, one at a time; a `types=agent.state` stream of the same "
            "daemon receives each change. Times from the hook's spawn (the harness's "
            "`time.monotonic()`, the system clock the subscriber reads too)."
        ),
        "",
        "| what | p50 | max |",
        "|---|---|---|",
        (
            f"| hook spawned -> subscriber has `agent.state` ({len(lat)} changes) | "
            f"{fmt_ms(median(lat))} | {fmt_ms(max(lat))} |"
        ),
        (
            f"| `kill -9` of the harness -> subscriber has `agent.state` gone "
            f"({len(result['kills'])} kills) | {fmt_ms(median(result['kills']))} | "
            f"{fmt_ms(max(result['kills']))} |"
        ),
        (
            f"| the hook, spawn to exit, in that loop | {fmt_ms(median(result['hook_in_loop']))} | "
            f"{fmt_ms(max(result['hook_in_loop']))} |"
        ),
        "",
        (
            "The hook next to `python -c pass`, each started the same way by the harness "
            "(`sh -c`), round robin:"
        ),
        "",
        "| what | p50 | max | p50 / `python -c pass` |",
        "|---|---|---|---|",
    ]
    for name, values in rows.items():
        label = (
            "hook (`python -S context.py claude`, a state-only event)"
            if name == "hook"
            else (f"`{name}`")
        )
        out.append(
            f"| {label} | {fmt_ms(median(values))} | {fmt_ms(max(values))} | "
            f"{median(values) / base:.2f}x |"
        )
    for count, row in sorted(result.get("many", {}).items()):
        out += [
            "",
            (
                f"With {count} agent{'s' if count != 1 else ''} known (each a stand-in "
                "harness, `awk`, in its own pane), "
                f"changing state round robin: daemon CPU per report "
                f"{row['cpu_per_report'] * 1000:.2f} ms, daemon RSS {row['rss_kib'] / 1024:.1f} "
                "MiB after."
            ),
        ]
    out += [
        "",
        (
            f"Daemon CPU per report: {result['cpu_per_report'] * 1000:.2f} ms "
            f"({result['reports']} reports; user + system time of the daemon over the loop, "
            "which includes its stream write and its agents file)."
        ),
        "",
    ]
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.agents")
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--agents", default="1,100", help="agent counts for the CPU per report (comma list)"
    )
    ns = parser.parse_args()
    if TMUX is None:
        print("bench.agents: needs tmux", file=sys.stderr)
        return 1
    result = measure(ns.samples)
    counts = [int(c) for c in ns.agents.split(",") if c]
    result["many"] = {c: many(c, max(2 * c, 2 * ns.samples)) for c in counts}
    text = report(result, ns.samples)
    if ns.out:
        Path(ns.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
