"""Fan-out to many streams (SPEC §5, §6): the publisher writes every ready stream itself.

A real tmux server on a private socket, the real daemon, 1,000 streams on real Unix sockets:
every stream gets every event once, in order, right after its snapshot, whatever the others
do (one of them never reads).  A slow reader's `lagged` is tests/integration/test_faults.py's
``test_subscribers_that_never_read`` (and tests/api/test_api_streams.py's, with a queue of 2).
"""

from __future__ import annotations

import asyncio
import json
import socket

import pytest

from tests.integration.test_faults import (  # noqa: F401 - `rig` is the fixture
    Rig,
    raise_nofile,
    rig,
    stuck_stream,
)
from tests.soak import TMUX, tmux_ok
from tests.tmuxtest import wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
    pytest.mark.timeout(180),
]


class RawReader:
    """One NDJSON stream read by a loop callback into a list: cheap enough for 1,000."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.sendall(b"GET /v1/events?format=ndjson HTTP/1.1\r\nHost: localhost\r\n\r\n")
        self.sock.setblocking(False)
        self.parts: list[bytes] = []
        self.tail = b""
        self.marker = b'"type":"snapshot"'
        self.found = asyncio.Event()
        asyncio.get_running_loop().add_reader(self.sock.fileno(), self._read)

    def _read(self) -> None:
        try:
            data = self.sock.recv(1 << 20)
        except BlockingIOError:
            return
        if not data:
            asyncio.get_running_loop().remove_reader(self.sock.fileno())
            self.found.set()  # ended: the check below says what was missing
            return
        self.parts.append(data)
        self.tail = (self.tail + data)[-65536:]
        if self.marker in self.tail:
            self.found.set()

    def expect(self, marker: bytes) -> None:
        self.marker = marker
        self.found.clear()
        if marker in self.tail:
            self.found.set()

    def lines(self) -> list[dict[str, object]]:
        raw = b"".join(self.parts)
        head, _, body = raw.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        out = bytearray()
        while body:
            size_s, _, rest = body.partition(b"\r\n")
            size = int(size_s, 16)
            out += rest[:size]
            body = rest[size + 2 :]
        return [json.loads(line) for line in bytes(out).split(b"\n") if line]

    def close(self) -> None:
        loop = asyncio.get_running_loop()
        loop.remove_reader(self.sock.fileno())
        self.sock.close()


def seq_of(ident: object) -> int:
    assert isinstance(ident, str)
    return int(ident.rpartition(":")[2])


async def test_a_thousand_streams_get_every_event_once_in_order(rig: Rig) -> None:  # noqa: F811
    raise_nofile(4096)
    stuck = stuck_stream(rig.daemon.sock)  # never reads: must slow no one
    # With the rig's own stream and the stuck one: the daemon's 1,000 streams.
    readers = [RawReader(rig.daemon.sock) for _ in range(998)]
    try:
        async with asyncio.timeout(60):
            await asyncio.gather(*(r.found.wait() for r in readers))
        sock = rig.sock
        for args in (
            ("split-window", "-d", "-t", "A:0"),
            ("select-layout", "-t", "A:0", "tiled"),
            ("rename-window", "-t", "A:0", "fanned"),
            ("split-window", "-d", "-h", "-t", "B:0"),
            ("kill-pane", "-t", "A:0.1"),
            ("new-window", "-d", "-t", "B:"),
        ):
            await tmux_ok(sock, *args)
            await rig.daemon.sync()  # each change published on its own
        last = await rig.daemon.sync()
        marker = f'"id":"{last}"'.encode()
        for r in readers:
            r.expect(marker)
        async with asyncio.timeout(60):
            await asyncio.gather(*(r.found.wait() for r in readers))
        told: list[list[tuple[int, str]]] = []
        for r in readers:
            lines = r.lines()
            assert lines[0]["type"] == "snapshot", lines[0]
            first = seq_of(lines[0]["id"])
            events = [
                (seq_of(e["id"]), str(e["type"])) for e in lines[1:] if e["type"] != "heartbeat"
            ]
            # Every event after the snapshot, each once, in order, up to the barrier's.
            assert [s for s, _ in events] == list(range(first + 1, seq_of(last) + 1)), events
            told.append(events)
        # All of them were told the same events of the same changes.
        start = max(events[0][0] for events in told)
        common = [[e for e in events if e[0] >= start] for events in told]
        assert all(c == common[0] for c in common)
        assert {t for _, t in common[0]} >= {"pane.added", "pane.removed", "pane.changed"}
        health = await rig.daemon.health()
        assert health["subscribers"] == 1000
    finally:
        for r in readers:
            r.close()
        stuck.close()
    await wait_until(lambda: _streams_left(rig, 1), 30, "the streams to end")
    await rig.healthy()


async def _streams_left(rig: Rig, count: int) -> bool:  # noqa: F811
    health = await rig.daemon.health()
    return bool(health["subscribers"] == count)
