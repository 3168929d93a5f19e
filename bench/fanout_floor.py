"""The floor of fan-out in this stack: one asyncio process writing one chunk to N streams.

B8 asks that an event reach the last of 1,000 subscribers within 10 ms of the first.  Any
daemon in Python on one event loop writes once per socket; this server does nothing else, so
the spread its streams see (measured by the same ``bench.fanout_probe``, in the same run) is
what the machine gives one loop of writes, and what the daemon spends above it is its own.

It answers every connection as ``/v1/events?format=ndjson`` would begin (HTTP/1.1, chunked,
a one-line snapshot carrying an id), then waits.  A line written to its FIFO (``added`` or
``removed``) is sent to every stream as one chunk holding a ``pane.added`` / ``pane.removed``
line of ``--line-bytes``: with ``--write transport`` by ``transport.write`` (asyncio's own
path, as the daemon's publisher writes), with ``--write send`` by ``os.write`` on each
descriptor (nothing of asyncio at all).

It prints ``ready`` once listening, and on SIGTERM one JSON line: the number of streams and
the seconds of each publication's loop of writes (the writer's share of the spread).

With ``--control-argv JSON`` (a tmux control client's argv) it publishes on tmux's own word
instead: each ``%layout-change`` that client reads is a ``pane.added`` when the window has more
panes than at its last layout change (or it is the window's first), a ``pane.removed`` when
fewer.  That is the floor of a publication made while tmux is still busy with the split (its
fork of the new pane, its other clients): the daemon publishes then too, on the same 2 cores.

With ``--rows-argv JSON`` as well (tmux 3.3), it publishes on the rows of the daemon's own
hooks instead, as the daemon does there: those argv are the daemon's hook waiter client
(``tmuxlocd.core.attach.waiter_argv``, ``{client}`` standing for its control client's name, which
is this process's own), started anew every ``--rows-chain`` rounds as the daemon does, and each
round's rows (``|<count> @W <zoomed> <layout> <pane> ...``) are a ``pane.added`` or
``pane.removed`` by their count of panes.  The hooks are the caller's to install.  That is the
floor of a publication on 3.3's path: the rows come by another tmux client, after the
``%layout-change``.

With ``--snapshot-bytes N`` the snapshot each connection starts with is a line of N bytes:
B9's floor, what delivering the daemon's snapshots to every subscriber that reconnects after
a restart costs this machine with nothing else done (no model, no HTTP parsing, no identity).

    python -m bench.fanout_floor --path SOCKET --fifo FIFO [--write transport|send]
        [--snapshot-bytes N] [--control-argv JSON [--rows-argv JSON --rows-chain N]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Callable

from tmuxlocd.core.attach import WAITER_MARK

HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
)


def chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def event_line(kind: str, seq: int, size: int) -> bytes:
    head = f'{{"type":"{kind}","id":"floor:{seq}","pad":"'.encode()
    tail = b'"}\n'
    return head + b"x" * max(0, size - len(head) - len(tail)) + tail


# A layout's leaf cells (``WxH,X,Y,ID``); a split cell's fourth field is a ``{`` or ``[``.
# Counted here, not by tmuxlocd.core.layout's strict parse (about 0.1 ms for 26 panes): the floor
# does the least a publication can; tests/unit/test_fanout_floor.py holds the two to
# the same count on layouts captured from tmux.
LEAF = re.compile(rb"\d+x\d+,\d+,\d+,\d+")


def layout_kind(line: bytes, panes_of: dict[bytes, int]) -> str | None:
    """What a control client's ``%layout-change @W LAYOUT ...`` line tells of its window:
    ``pane.added`` / ``pane.removed`` by its count of panes against the last (None: not such
    a line, or the same count)."""
    parts = line.split(b" ")
    if len(parts) < 3 or parts[0] != b"%layout-change":
        return None
    count = len(LEAF.findall(parts[2]))
    before = panes_of.get(parts[1])
    panes_of[parts[1]] = count
    if before is None or count > before:
        return "pane.added"
    return "pane.removed" if count < before else None


def rows_kinds(line: bytes, mark: bytes, panes_of: dict[bytes, int]) -> list[str]:
    """What one round of the daemon's 3.3 hook waiter tells (``mark``, then per firing of a
    hook ``|<count> @W <zoomed> <layout> <pane> ...``): for each window, ``pane.added`` /
    ``pane.removed`` by its count of panes against the last, as ``layout_kind`` does."""
    if not line.startswith(mark):
        return []
    kinds: list[str] = []
    for entry in line[len(mark) :].split(b"|")[1:]:
        words = entry.split(b" ")
        if len(words) < 5:
            continue
        window, count = words[1], len(words) - 4
        before = panes_of.get(window)
        panes_of[window] = count
        if before is None or count > before:
            kinds.append("pane.added")
        elif count < before:
            kinds.append("pane.removed")
    return kinds


class Lines(asyncio.SubprocessProtocol):
    """A child's output, line by line, straight from the loop's read callback (no task)."""

    def __init__(self, on_line: Callable[[bytes], None]) -> None:
        self.on_line = on_line
        self.partial = b""
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        self.exited.set()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            self.on_line(line)


class Stream(asyncio.Protocol):
    def __init__(self, streams: list[Stream], snapshot: bytes) -> None:
        self.streams = streams
        self.snapshot = snapshot
        self.transport: asyncio.Transport | None = None
        self.fd = -1
        self.head = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.fd = transport.get_extra_info("socket").fileno()

    def data_received(self, data: bytes) -> None:
        if self.transport is None or b"\r\n\r\n" in self.head:
            return
        self.head += data
        if b"\r\n\r\n" in self.head:
            self.transport.write(HEAD + self.snapshot)
            self.streams.append(self)

    def connection_lost(self, exc: Exception | None) -> None:
        with contextlib.suppress(ValueError):
            self.streams.remove(self)
        self.transport = None


async def serve(
    path: str,
    fifo: str,
    how: str,
    size: int,
    snapshot_bytes: int,
    control: list[str] | None,
    rows: list[str] | None = None,
    chain: int = 0,
) -> None:
    loop = asyncio.get_running_loop()
    streams: list[Stream] = []
    # One snapshot for all, as the daemon shares one frame among the streams of a selection.
    snapshot = chunk(event_line("snapshot", 0, snapshot_bytes))
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    server = await loop.create_unix_server(lambda: Stream(streams, snapshot), path, backlog=4096)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(fifo)
    os.mkfifo(fifo, 0o600)
    # Read and write: the FIFO never reads as ended between two writers.
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    seq = 0
    pending = b""
    loops: list[tuple[int, float]] = []  # (streams, seconds) of each publication's writes

    def send(kind: str) -> None:
        nonlocal seq
        seq += 1
        data = chunk(event_line(kind, seq, size))
        began = time.perf_counter()
        if how == "send":
            for stream in streams:
                with contextlib.suppress(OSError):
                    os.write(stream.fd, data)
        else:
            for stream in streams:
                if stream.transport is not None:
                    stream.transport.write(data)
        loops.append((len(streams), time.perf_counter() - began))

    def publish() -> None:
        nonlocal pending
        pending += os.read(fd, 4096)
        *words, pending = pending.split(b"\n")
        for word in words:
            send("pane.added" if word.strip() == b"added" else "pane.removed")

    loop.add_reader(fd, publish)
    waiters: list[tuple[asyncio.SubprocessTransport, Lines]] = []
    mark = WAITER_MARK.encode()

    async def start_waiter(argv: list[str]) -> None:
        served = 0

        def on_round(line: bytes) -> None:
            nonlocal served
            if not line.startswith(mark):
                return
            served += 1
            for kind in rows_kinds(line, mark, panes_of):
                send(kind)
            if served == chain - 1:
                # The next one waits before this one's last round, as the daemon's does.
                waiting.append(loop.create_task(start_waiter(argv)))

        waiter, protocol = await loop.subprocess_exec(
            lambda: Lines(on_round),
            *argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", os.defpath)},
            start_new_session=True,
        )
        waiters.append((waiter, protocol))

    waiting: list[asyncio.Task[None]] = []
    panes_of: dict[bytes, int] = {}
    tmux: asyncio.SubprocessTransport | None = None
    tmux_in: asyncio.BaseTransport | None = None
    lines: Lines | None = None
    if control is not None:
        # Ready once tmux answers a command through it: it is attached, and sees what follows.
        attached = asyncio.Event()

        name: list[str] = []
        session_changed = asyncio.Event()

        def on_line(line: bytes) -> None:
            if line.startswith(b"%session-changed "):
                session_changed.set()
            elif line.startswith(b"floor-attached "):
                name.append(line.split(b" ", 1)[1].decode())
                attached.set()
            elif rows is None and (kind := layout_kind(line, panes_of)) is not None:
                send(kind)

        tmux, lines = await loop.subprocess_exec(
            lambda: Lines(on_line),
            *control,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        tmux_in = tmux.get_pipe_transport(0)
        assert isinstance(tmux_in, asyncio.WriteTransport)
        async with asyncio.timeout(30):
            # tmux 3.3 may answer a new control client's command before its attach
            # completes, with an empty #{client_name}: %session-changed says it is done.
            await session_changed.wait()
            tmux_in.write(b"display-message -p 'floor-attached #{client_name}'\n")
            await attached.wait()
        if rows is not None:
            await start_waiter([word.replace("{client}", name[0]) for word in rows])
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    await stop.wait()
    print(json.dumps({"loops": loops}), flush=True)
    loop.remove_reader(fd)
    os.close(fd)
    for task in waiting:
        await task  # a successor being started: it is ended with the others
    for waiter, _ in waiters:
        # Ours, blocked in wait-for: ended by their pid.
        if waiter.get_returncode() is None:
            waiter.kill()
    for waiter, ended in waiters:
        # Closed once reaped: a close before would reap it itself, under the loop's watcher.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                await ended.exited.wait()
        waiter.close()
    if tmux is not None and tmux_in is not None and lines is not None:
        tmux_in.close()  # tmux -C ends at the end of its input
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                await lines.exited.wait()
        tmux.close()
    server.close()
    for stream in streams:
        if stream.transport is not None:
            stream.transport.abort()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True)
    parser.add_argument("--fifo", required=True)
    parser.add_argument("--write", choices=("transport", "send"), default="transport")
    parser.add_argument("--line-bytes", type=int, default=1000)
    parser.add_argument("--snapshot-bytes", type=int, default=200)
    parser.add_argument("--control-argv", type=json.loads, default=None)
    parser.add_argument("--rows-argv", type=json.loads, default=None)
    parser.add_argument("--rows-chain", type=int, default=0)
    args = parser.parse_args()
    if args.rows_argv is not None and (args.control_argv is None or args.rows_chain < 2):
        parser.error("--rows-argv needs --control-argv and a --rows-chain of 2 or more")
    asyncio.run(
        serve(
            args.path,
            args.fifo,
            args.write,
            args.line_bytes,
            args.snapshot_bytes,
            args.control_argv,
            args.rows_argv,
            args.rows_chain,
        )
    )


if __name__ == "__main__":
    main()
