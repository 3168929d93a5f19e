"""next-3.8's events against today's hook path, on the same tmux build.

    python -m bench.event_paths --tmux PATH [--sizes 10,100] [--splits 30] [--out FILE]

A change in a session the daemon is not attached to reaches it today (tmux 3.4+) by its
``window-layout-changed[7741]`` hook, a ``display-message -c <its client>`` that carries the
window's layout and panes: a ``%message`` on its control connection, no query after it.
next-3.8 can hand the same event to a client blocked in ``wait-for -E -v`` instead (its
payload: the event's name and ``window=@N``), after which the window must still be read.

For each split of a window of N panes in another session, each path alone on a fresh server
(a ``wait-for`` client costs the server something for every event), this times from the
split's client starting to:
- ``hook %message``: today's path, the message on a control client (all a Location needs);
- ``wait-for -E payload``: the event's ``window=@N`` line on a ``wait-for -E -v`` client;
- ``payload + read``: that, plus ``list-panes -t @N`` over the control client, sent when the
  payload came (what the event path needs before it knows the window's panes).

Medians over ``--splits`` splits (each split is killed again, unmeasured).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tmuxlocd.core.model import MESSAGE_PANE_FORMAT, PANE_FORMAT

HOOK = "window-layout-changed"
HOOK_INDEX = 7741
MARK = "tmuxlocd-bench-hook"


class Server:
    def __init__(self, tmux: str, root: Path) -> None:
        self.tmux = tmux
        self.socket = str(root / "s")
        self.env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}

    def argv(self, *args: str) -> list[str]:
        return [self.tmux, "-S", self.socket, "-f", os.devnull, *args]

    def run(self, *args: str) -> str:
        done = subprocess.run(
            self.argv(*args), capture_output=True, text=True, env=self.env, timeout=30, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")
        return done.stdout


class Lines:
    """A subprocess's stdout, line by line, each with the time it was read; searched from a
    position, so that two waits never take each other's lines."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[tuple[float, str]] = []
        self.changed = asyncio.Event()
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            self.lines.append((time.perf_counter(), line.decode(errors="replace").rstrip()))
            self.changed.set()

    def mark(self) -> int:
        return len(self.lines)

    async def until(
        self, test: str | Callable[[str], bool], start: int, timeout: float = 10.0
    ) -> tuple[float, int]:
        """The time of the first line from ``start`` on that holds ``test`` (or passes it),
        and the position after it."""
        check = test if callable(test) else (lambda line: test in line)
        i = start
        async with asyncio.timeout(timeout):
            while True:
                while i < len(self.lines):
                    when, line = self.lines[i]
                    i += 1
                    if check(line):
                        return when, i
                self.changed.clear()
                if i == len(self.lines):
                    await self.changed.wait()


async def measure(tmux: str, panes: int, splits: int, mode: str) -> dict[str, list[float]]:
    """``mode`` "hook": today's path alone; "event": the ``wait-for -E`` path alone (each on
    a fresh server: a ``wait-for`` client costs the server for every event at 1,000 panes,
    which would slow the other path too)."""
    root = Path(tempfile.mkdtemp(prefix="tev-", dir="/tmp"))
    srv = Server(tmux, root)
    procs: list[asyncio.subprocess.Process] = []
    try:
        srv.run("new-session", "-d", "-s", "obs", "-x", "80", "-y", "24", "cat")
        srv.run("new-session", "-d", "-s", "work", "-x", "800", "-y", "300", "cat")
        for _ in range(panes - 1):
            srv.run("split-window", "-d", "-t", "work:0", "cat", ";", "select-layout", "-t",
                    "work:0", "tiled")  # fmt: skip
        window = srv.run("display-message", "-p", "-t", "work:0", "#{window_id}").strip()
        control = await asyncio.create_subprocess_exec(
            *srv.argv("-C", "attach-session", "-t", "obs", "-f", "no-output,ignore-size"),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=srv.env,
            start_new_session=True,
            limit=1 << 24,  # a hook's %message carries every pane of the window on one line
        )
        procs.append(control)
        ctl = Lines(control)
        assert control.stdin is not None
        control.stdin.write(b"display-message -p 'name #{client_name}'\n")
        await control.stdin.drain()
        await ctl.until("name ", 0)
        name = srv.run("list-clients", "-F", "#{client_name} #{client_control_mode}")
        client = next(line.split()[0] for line in name.splitlines() if line.endswith(" 1"))
        out: dict[str, list[float]] = {"hook": [], "event": [], "event+read": []}
        if mode == "hook":
            payload = (
                f"#{{window_id}} #{{window_zoomed_flag}} #{{window_layout}}{MESSAGE_PANE_FORMAT}"
            )
            srv.run(
                "set-hook", "-g", f"{HOOK}[{HOOK_INDEX}]",
                f"display-message -c '{client}' '{MARK} {payload}'",
            )  # fmt: skip
            for _ in range(splits):
                ctl_at = ctl.mark()
                start = time.perf_counter()
                new = await split_pane(srv, window)
                hook_at, _ = await ctl.until(with_pane(window, new, True), ctl_at)
                out["hook"].append((hook_at - start) * 1000)
                killed = ctl.mark()
                await kill_pane(srv, new)
                await ctl.until(with_pane(window, new, False), killed)
            return out
        chain: list[str] = []
        for _ in range(4 * splits + 4):
            chain += [*(";" if chain else ()), "wait-for", "-E", "-v", HOOK]
        waiter = await asyncio.create_subprocess_exec(
            *srv.argv(*chain),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            env=srv.env,
            start_new_session=True,
        )
        procs.append(waiter)
        events = Lines(waiter)
        # The waiter is in place once it has seen one event (it may not be waiting yet when
        # the first split comes: then that split is undone and made again).
        for _ in range(50):
            at = events.mark()
            new = srv.run("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", window, "cat")
            try:
                _, at = await events.until(f"window={window}", at, timeout=0.5)
            except TimeoutError:
                srv.run("kill-pane", "-t", new.strip())
                continue
            srv.run("kill-pane", "-t", new.strip())
            await events.until(f"window={window}", at)
            break
        else:
            raise RuntimeError("the wait-for -E client saw no event")
        for _ in range(splits):
            ev_at = events.mark()
            start = time.perf_counter()
            split = asyncio.create_task(split_pane(srv, window))
            event_at, ev_at = await events.until(f"window={window}", ev_at)
            sent = ctl.mark()
            # What the event path must read then: the window's panes and its layout.
            read = f"list-panes -t {window} -F '{PANE_FORMAT}' ; "
            read += f"display-message -p -t {window} '#{{window_layout}}'\n"
            control.stdin.write(read.encode())
            await control.stdin.drain()
            # The reply of the second command (the hook's %message is no block).
            _, at = await ctl.until("%begin ", sent)
            _, at = await ctl.until("%end ", at)
            _, at = await ctl.until("%begin ", at)
            read_at, _ = await ctl.until("%end ", at)
            new = await split
            out["event"].append((event_at - start) * 1000)
            out["event+read"].append((read_at - start) * 1000)
            await kill_pane(srv, new)
            await events.until(f"window={window}", ev_at)
        return out
    finally:
        for proc in procs:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        ender = await asyncio.create_subprocess_exec(
            *srv.argv("kill-server"), stderr=asyncio.subprocess.DEVNULL, env=srv.env
        )
        await ender.wait()
        shutil.rmtree(root, ignore_errors=True)


async def split_pane(srv: Server, window: str) -> str:
    split = await asyncio.create_subprocess_exec(
        *srv.argv("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", window, "cat"),
        stdout=asyncio.subprocess.PIPE,
        env=srv.env,
    )
    new = (await split.communicate())[0].decode().strip()
    if split.returncode != 0 or not new.startswith("%"):
        raise RuntimeError(f"split-window -t {window} failed")
    return new


async def kill_pane(srv: Server, pane: str) -> None:
    kill = await asyncio.create_subprocess_exec(*srv.argv("kill-pane", "-t", pane), env=srv.env)
    await kill.wait()


def with_pane(window: str, pane: str, present: bool) -> Callable[[str], bool]:
    """The hook's message about ``window`` that holds ``pane`` (or does not: after its
    kill), so that a late message of the round before is never taken for this one's."""
    head = f"%message {MARK} {window} "
    return lambda line: line.startswith(head) and (f" {pane}." in line) is present


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.event_paths", description=__doc__)
    parser.add_argument("--tmux", required=True, help="a tmux with wait-for -E (next-3.8)")
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--splits", type=int, default=30)
    parser.add_argument("--out", type=Path)
    ns = parser.parse_args(argv)
    version = subprocess.run(
        [ns.tmux, "-V"], capture_output=True, text=True, check=False
    ).stdout.strip()
    lines = [
        (
            f"### Event paths on {version} (median of {ns.splits} splits in another session, "
            "ms from the split's client starting)"
        ),
        "",
        "| panes | hook %message (today) | wait-for -E payload | payload + read |",
        "|---|---|---|---|",
    ]
    for size in (int(s) for s in ns.sizes.split(",")):
        got = asyncio.run(measure(ns.tmux, size, ns.splits, "hook"))
        got.update(
            {k: v for k, v in asyncio.run(measure(ns.tmux, size, ns.splits, "event")).items() if v}
        )
        med = {k: statistics.median(v) for k, v in got.items()}
        lines.append(
            f"| {size} | {med['hook']:.2f} | {med['event']:.2f} | {med['event+read']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if ns.out is not None:
        ns.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
