"""Times one hook run: ``hookclock.py LOG COMMAND...`` runs COMMAND with this process's stdin
(read whole, as a hook's event is) and stdout, and appends a JSON line to LOG: the event name,
the session id, the milliseconds COMMAND took and what it printed.  Standard library only,
started with ``-S``: it adds no import of the project to the hook it measures."""

from __future__ import annotations

import ctypes
import fcntl
import json
import subprocess
import sys
import time

PR_SET_NAME = 15


def pass_as_wrapper() -> None:
    """Names this process ``env`` (its /proc comm): the daemon places an agent at the hook's
    nearest ancestor on the pane's tty that is no shell or wrapper (``env`` is one), and
    this timer, a child of the harness between it and the hook, must not be taken for the
    harness (it exits with the hook, and the agent with it)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, b"env", 0, 0, 0)
    except (OSError, AttributeError):
        pass


def main(argv: list[str]) -> int:
    pass_as_wrapper()
    log, command = argv[1], argv[2:]
    data = sys.stdin.buffer.read()
    try:
        event = json.loads(data)
    except ValueError:
        event = {}
    if not isinstance(event, dict):
        event = {}
    start = time.monotonic_ns()
    proc = subprocess.run(command, input=data, stdout=subprocess.PIPE, check=False)
    ms = (time.monotonic_ns() - start) / 1e6
    sys.stdout.buffer.write(proc.stdout)
    sys.stdout.flush()
    line = {
        "event": str(event.get("hook_event_name", "")),
        "session": str(event.get("session_id", "")),
        "ms": round(ms, 2),
        "out_bytes": len(proc.stdout),
        "out": proc.stdout.decode("utf-8", "replace"),
    }
    with open(log, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(line) + "\n")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
