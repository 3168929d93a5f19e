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

With ``--snapshot-bytes N`` the snapshot each connection starts with is a line of N bytes:
B9's floor, what delivering the daemon's snapshots to every subscriber that reconnects after
a restart costs this machine with nothing else done (no model, no HTTP parsing, no identity).

    python -m bench.fanout_floor --path SOCKET --fifo FIFO [--write transport|send]
        [--snapshot-bytes N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import time

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


async def serve(path: str, fifo: str, how: str, size: int, snapshot_bytes: int) -> None:
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

    def publish() -> None:
        nonlocal seq, pending
        pending += os.read(fd, 4096)
        *words, pending = pending.split(b"\n")
        for word in words:
            seq += 1
            kind = "pane.added" if word.strip() == b"added" else "pane.removed"
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

    loop.add_reader(fd, publish)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    await stop.wait()
    print(json.dumps({"loops": loops}), flush=True)
    loop.remove_reader(fd)
    os.close(fd)
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
    args = parser.parse_args()
    asyncio.run(serve(args.path, args.fifo, args.write, args.line_bytes, args.snapshot_bytes))


if __name__ == "__main__":
    main()
