"""The chaos relay: between the daemon and a real ``tmux -C``, it breaks replies on demand.

Started by the wrapper that ``tests/chaos.py`` installs, as ``python -m tests.chaos_relay
<real tmux> ARGS``; stdlib only, so that it starts fast.  What it injects, and how it is
steered (``CHAOS_CONTROL``, ``CHAOS_LOG``), is described in ``tests/chaos.py``.
"""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

KINDS = ("error", "delay", "truncate", "drop", "noise", "hang")


class _Settings:
    def __init__(self, path: str) -> None:
        self.path = path
        self.mtime = -1.0
        self.rate = 0.0
        self.kinds: tuple[str, ...] = ()
        self.rng = random.Random()

    def refresh(self) -> None:
        try:
            mtime = os.stat(self.path).st_mtime_ns / 1e9
        except OSError:
            return
        if mtime == self.mtime:
            return
        self.mtime = mtime
        try:
            words = Path(self.path).read_text().split()
        except OSError:
            return
        if len(words) == 4 and words[0] == "on":
            self.rate = float(words[1])
            self.kinds = tuple(k for k in words[2].split(",") if k in KINDS)
            # a different stream per relay process, reproducible from the seed and the pid
            self.rng = random.Random(f"{words[3]}:{os.getpid()}")
        else:
            self.rate, self.kinds = 0.0, ()

    def pick(self) -> str | None:
        self.refresh()
        if not self.kinds or self.rng.random() >= self.rate:
            return None
        return self.rng.choice(self.kinds)


def relay(argv: list[str]) -> int:
    control = os.environ.get("CHAOS_CONTROL", "")
    log_path = os.environ.get("CHAOS_LOG", "")
    settings = _Settings(control)
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert child.stdin is not None and child.stdout is not None
    to_child, from_child = child.stdin.fileno(), child.stdout.fileno()
    our_in, our_out = sys.stdin.fileno(), sys.stdout.fileno()

    def note(kind: str) -> None:
        if log_path:
            with open(log_path, "a") as f:
                f.write(kind + "\n")

    def end() -> int:
        child.kill()
        child.wait()
        return 0

    pending = b""  # output from tmux not yet split into lines
    block: list[bytes] | None = None  # the lines of a reply block being gathered
    hung = False
    inputs = [our_in, from_child]
    while inputs:
        ready, _, _ = select.select(inputs, [], [])
        if our_in in ready:
            data = os.read(our_in, 65536)
            if not data:
                inputs.remove(our_in)
                child.stdin.close()  # EOF to tmux: it detaches, as for the daemon itself
            else:
                os.write(to_child, data)
        if from_child not in ready:
            continue
        data = os.read(from_child, 65536)
        if not data:
            break
        if hung:
            continue
        pending += data
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw + b"\n"
            if block is None:
                if raw.startswith(b"%begin ") and raw.endswith(b" 1"):
                    block = [line]
                else:
                    os.write(our_out, line)
                continue
            block.append(line)
            if not (raw.startswith((b"%end ", b"%error ")) and raw.endswith(b" 1")):
                continue
            done, block = block, None
            kind = settings.pick()
            if kind is not None:
                note(kind)
            if kind == "error":
                head = done[0].split(b" ")
                tail = b" ".join([b"%error", *head[1:]])
                done = [done[0], b"chaos: injected error\n", tail]
            elif kind == "delay":
                time.sleep(settings.rng.uniform(0.02, 0.3))
            elif kind == "truncate":
                os.write(our_out, b"".join(done[: max(1, len(done) // 2)]))
                return end()
            elif kind == "drop":
                return end()
            elif kind == "noise":
                os.write(our_out, b"chaos: a stray line\n")
            elif kind == "hang":
                hung = True
                break
            os.write(our_out, b"".join(done))
    child.wait()
    return 0


def main() -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return relay(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
