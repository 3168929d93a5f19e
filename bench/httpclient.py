"""HTTP clients over Unix sockets, the same for the daemon and the floor app.

- ``UnixHTTPConnection``: the standard library's keep-alive ``http.client`` on AF_UNIX, what a
  small Python tool would use; used for the latency rows.
- ``throughput``: N concurrent keep-alive connections on asyncio streams, each sending the next
  request as soon as the previous answer is complete.
- ``StreamRecorder``: an NDJSON ``/v1/events`` subscriber that timestamps every line the
  moment its bytes arrive (the protocol callback, before any parsing), for the propagation rows.
"""

from __future__ import annotations

import asyncio
import http.client
import socket
import time
from collections.abc import Callable


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 10.0) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self.unix_path)
        self.sock = sock


def get(conn: UnixHTTPConnection, path: str) -> tuple[int, dict[str, str], bytes]:
    conn.request("GET", path)
    resp = conn.getresponse()
    body = resp.read()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


def request_bytes(path: str, method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
            break
    if length:
        await reader.readexactly(length)
    return status


async def throughput(path: str, target: str, conns: int, duration: float) -> tuple[int, float]:
    """Completed requests and elapsed seconds with ``conns`` closed-loop keep-alive clients."""
    req = request_bytes(target)
    streams = [await asyncio.open_unix_connection(path) for _ in range(conns)]
    # One round trip each first: connection set-up is not part of the rate.
    for reader, writer in streams:
        writer.write(req)
        await _read_response(reader)
    count = 0
    bad = 0
    start = time.perf_counter()
    deadline = start + duration

    async def worker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal count, bad
        while time.perf_counter() < deadline:
            writer.write(req)
            status = await _read_response(reader)
            count += 1
            if status != 200:
                bad += 1

    await asyncio.gather(*(worker(r, w) for r, w in streams))
    elapsed = time.perf_counter() - start
    for _, writer in streams:
        writer.close()
    if bad:
        raise RuntimeError(f"{bad} of {count} requests to {target} were not 200")
    return count, elapsed


class StreamRecorder(asyncio.Protocol):
    """One NDJSON event stream: every line with the time its bytes arrived."""

    def __init__(self, on_line: Callable[[float, bytes], None]) -> None:
        self.count = 0
        self.status: int | None = None
        self._buf = b""
        self._head_done = False
        self._chunked = False
        self._body = b""  # de-chunked bytes not yet split into lines
        self._on_line = on_line
        self.connected = asyncio.get_running_loop().create_future()
        self.closed = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self._buf += data
        if not self._head_done:
            end = self._buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self._buf = self._buf[:end], self._buf[end + 4 :]
            self.status = int(head[9:12])
            self._chunked = b"transfer-encoding: chunked" in head.lower()
            self._head_done = True
            if not self.connected.done():
                self.connected.set_result(self.status)
        if self._chunked:
            while True:
                eol = self._buf.find(b"\r\n")
                if eol < 0:
                    break
                size = int(self._buf[:eol].split(b";")[0], 16)
                if len(self._buf) < eol + 2 + size + 2:
                    break
                self._body += self._buf[eol + 2 : eol + 2 + size]
                self._buf = self._buf[eol + 2 + size + 2 :]
        else:
            self._body += self._buf
            self._buf = b""
        if b"\n" in self._body:
            *complete, self._body = self._body.split(b"\n")
            for line in complete:
                if line:
                    self.count += 1
                    self._on_line(now, line)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.connected.done():
            self.connected.set_exception(ConnectionError("stream closed before its head"))
        if not self.closed.done():
            self.closed.set_result(None)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def open_stream(
    path: str, target: str, on_line: Callable[[float, bytes], None]
) -> StreamRecorder:
    loop = asyncio.get_running_loop()
    _, proto = await loop.create_unix_connection(lambda: StreamRecorder(on_line), path)
    assert proto.transport is not None
    proto.transport.write(request_bytes(target))
    status = await asyncio.wait_for(proto.connected, 10)
    if status != 200:
        raise RuntimeError(f"GET {target}: status {status}")
    return proto
