"""The in-pane half of ``python -m bench.context``: times harness hooks as a harness runs them.

A hook identifies its pane by its controlling tty, so this runs as the command of a pane of
the benchmark's tmux server, starts every variant as a child (round robin, so that drift hits
all alike), and writes the samples to a JSON file.

    python -m bench.context_probe JOB.json OUT.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any


def main() -> int:
    with open(sys.argv[1]) as f:
        job: dict[str, Any] = json.load(f)
    out_path = sys.argv[2]
    try:
        result = measure(job)
    except Exception as exc:  # noqa: BLE001 - reported to the orchestrator, which fails
        result = {"error": repr(exc)}
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, out_path)
    return 0


def measure(job: dict[str, Any]) -> dict[str, Any]:
    tmux, server, daemon = job["tmux"], job["server"], job["daemon"]
    pane, window = job["pane"], job["window"]
    env_up = dict(os.environ, TMUXLOCD_SOCKET=daemon)
    env_down = dict(os.environ, TMUXLOCD_SOCKET=job["no_daemon"])
    base = [tmux, "-S", server]
    names = iter(range(10**9))

    def event(name: str, session: str, **extra: Any) -> bytes:
        data = {
            "session_id": session,
            "transcript_path": "/dev/null",
            "cwd": "/",
            "hook_event_name": name,
            **extra,
        }
        return json.dumps(data).encode()

    def prompt(session: str) -> bytes:
        return event("UserPromptSubmit", session, prompt="which pane is below?")

    def tool(session: str) -> bytes:
        command = "tmux break-pane"  # tmux: the command a hook reports, never run
        return event(
            "PostToolUse",
            session,
            tool_name="Bash",
            tool_input={"command": command},
            tool_response={"stdout": ""},
        )

    def run(argv: list[str], stdin: bytes | None, env: dict[str, str]) -> bytes:
        proc = subprocess.run(
            argv, input=stdin, capture_output=True, env=env, check=True, timeout=30
        )
        if proc.stderr:
            raise RuntimeError(f"{argv}: {proc.stderr!r}")
        return proc.stdout

    def sync() -> None:
        subprocess.run(
            [
                "curl",
                "-s",
                "-o",
                os.devnull,
                "-X",
                "POST",
                "--unix-socket",
                daemon,
                "http://localhost/v1/sync",
            ],
            check=True,
            timeout=30,
        )

    def change() -> None:  # not timed: the location changes between two prompts
        subprocess.run([*base, "rename-window", "-t", window, f"w{next(names)}"], check=True)
        sync()

    def seed() -> bytes:
        # The seed's per-turn read: which tty am I on, which tty has $TMUX_PANE, and only if
        # they agree, the fields.
        tty = run(["ps", "-o", "tty=", "-p", str(os.getpid())], None, env_up).strip()
        pane_tty = run(
            [*base, "display-message", "-p", "-t", pane, "#{pane_tty}"], None, env_up
        ).strip()
        if pane_tty != b"/dev/" + tty:
            raise RuntimeError(f"tty check failed: {tty!r} vs {pane_tty!r}")
        return run([*base, "display-message", "-p", "-t", pane, job["fmt"]], None, env_up)

    # Two phases: a change between prompts is a change for every session of the pane, so
    # the unchanged rows run first, round robin, then the changed ones.  Each hook form has
    # its own sessions; a tool-call row's session is told once first, as a prompt would.
    unchanged: dict[str, Callable[[], bytes]] = {
        "python -c pass": lambda: run([sys.executable, "-c", "pass"], None, env_up),
        "seed's read (ps + 2 display-message)": seed,
    }
    # Each phase has its own baseline: the ratios compare rows measured at the same time.
    changed: dict[str, Callable[[], bytes]] = {
        "python -c pass (second phase)": lambda: run([sys.executable, "-c", "pass"], None, env_up),
    }
    for form, launcher in job["launchers"].items():
        hook = [*launcher, "claude"]
        for sid in (f"{form}-u", f"{form}-c", f"{form}-tc"):
            run(hook, prompt(sid), env_up)

        def bind(argv: list[str], data: bytes, env: dict[str, str]) -> Callable[[], bytes]:
            return lambda: run(argv, data, env)

        unchanged[f"{form}: prompt, unchanged"] = bind(hook, prompt(f"{form}-u"), env_up)
        unchanged[f"{form}: after a tool call, unchanged"] = bind(hook, tool(f"{form}-u"), env_up)
        changed[f"{form}: prompt, changed"] = bind(hook, prompt(f"{form}-c"), env_up)
        changed[f"{form}: after a tool call, changed"] = bind(hook, tool(f"{form}-tc"), env_up)
        if form == job["direct_form"]:
            unchanged[f"{form}: prompt, unchanged, no daemon"] = bind(
                hook, prompt(f"{form}-d"), env_down
            )
            changed[f"{form}: prompt, changed, no daemon"] = bind(
                hook, prompt(f"{form}-dc"), env_down
            )
    names_all = [*unchanged, *changed]
    samples: dict[str, list[float]] = {name: [] for name in names_all}
    sizes: dict[str, list[int]] = {name: [] for name in names_all}
    contexts: dict[str, list[int]] = {name: [] for name in names_all}
    for phase, between in ((unchanged, None), (changed, change)):
        for i in range(job["warmup"] + job["n"]):
            for name, fn in phase.items():
                if between is not None and name.startswith(tuple(job["launchers"])):
                    between()
                t0 = time.perf_counter()
                out = fn()
                dt = time.perf_counter() - t0
                if i < job["warmup"]:
                    continue
                samples[name].append(dt)
                sizes[name].append(len(out))
                if out and name.startswith(tuple(job["launchers"])):
                    context = json.loads(out)["hookSpecificOutput"]["additionalContext"]
                    contexts[name].append(len(context.encode()))
    return {
        "baseline": {
            **{name: "python -c pass" for name in unchanged},
            **{name: "python -c pass (second phase)" for name in changed},
        },
        "samples": samples,
        "stdout_bytes": sizes,
        "context_bytes": contexts,
    }


if __name__ == "__main__":
    raise SystemExit(main())
