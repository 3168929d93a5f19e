"""A stand-in for a harness process (Claude Code, Codex, Gemini CLI) in a pane: it runs each
hook it is handed as its own child, as a harness runs its hooks, and stays until killed.

``python agent_harness.py DIR HOOK...``: writes its pid to ``DIR/pid``, then reads jobs from
the FIFO ``DIR/jobs``, one JSON line each (``{"n": N, "stdin": <event JSON text>,
"env": {...}}``, and ``"argv"`` to run another command instead), runs ``HOOK...`` with that
stdin (through ``sh -c``, as harnesses run hook commands) and writes the hook's stdout, exit
status, and when it was started and ended (``time.monotonic``: the system's clock, which other
processes read too) to ``DIR/N.done``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time


def main(directory: str, hook: list[str]) -> None:
    with open(os.path.join(directory, "pid.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.replace(os.path.join(directory, "pid.tmp"), os.path.join(directory, "pid"))
    # Read and write: the FIFO never reads end-of-file between two writers.
    fd = os.open(os.path.join(directory, "jobs"), os.O_RDWR)
    jobs = os.fdopen(fd, "r")
    command = " ".join(shlex.quote(a) for a in hook)
    for line in jobs:
        job = json.loads(line)
        env = {**os.environ, **job.get("env", {})}
        argv = job.get("argv")
        started = time.monotonic()
        done = subprocess.run(
            ["sh", "-c", " ".join(shlex.quote(a) for a in argv) if argv else command],
            input=job["stdin"].encode(),
            capture_output=True,
            env=env,
            check=False,
        )
        out = os.path.join(directory, f"{job['n']}.done")
        with open(out + ".tmp", "w") as f:
            ended = time.monotonic()
            result = {"rc": done.returncode, "out": done.stdout.decode(), "err": ""}
            json.dump({**result, "started": started, "ended": ended}, f)
        os.replace(out + ".tmp", out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
