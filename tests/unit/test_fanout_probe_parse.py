"""bench.fanout_probe's reader: the same lines, ids and snapshot however the bytes are cut."""

from __future__ import annotations

import time

from hypothesis import given
from hypothesis import strategies as st

from bench.fanout_probe import Sub


def chunk(data: bytes) -> bytes:
    return b"%x\r\n" % len(data) + data + b"\r\n"


SNAPSHOT = b'{"type":"snapshot","id":"new1:7","time":1.0,"panes":[' + b"x" * 5000 + b"]}\n"
RESET = b'{"type":"reset","id":"new1:7","time":1.0}\n'
CHANGED = b'{"type":"pane.changed","id":"new1:8","time":1.0,"location":{}}\n'
HEARTBEAT = b'{"type":"heartbeat"}\n'
RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n"
    + chunk(RESET + SNAPSHOT[:3000])  # a line spanning two chunks
    + chunk(SNAPSHOT[3000:])
    + chunk(HEARTBEAT)
    + chunk(CHANGED + CHANGED.replace(b"new1:8", b"new1:9"))
)


def read_in_pieces(cuts: list[int]) -> Sub:
    sub = Sub("unused", "/v1/events")
    now = time.perf_counter()
    at = 0
    for cut in [*sorted(cuts), len(RESPONSE)]:
        piece = bytearray(RESPONSE[at:cut]) + bytearray(64)  # bytes past n are never read
        sub._consume(piece, cut - at, now)
        at = cut
    return sub


def test_a_response_read_whole() -> None:
    sub = read_in_pieces([])
    assert (sub.status, sub.lines, sub.last_id) == (200, 4, "new1:9")
    assert sub.snapshot_instance == "new1" and sub.snapshot_at is not None
    assert not sub.ended


@given(st.lists(st.integers(0, len(RESPONSE)), max_size=30))
def test_a_response_read_in_any_pieces(cuts: list[int]) -> None:
    sub = read_in_pieces(cuts)
    assert (sub.status, sub.lines, sub.last_id, sub.snapshot_instance) == (
        200,
        4,
        "new1:9",
        "new1",
    )


def test_the_last_chunk_ends_the_stream_and_an_error_status_ends_it_at_once() -> None:
    sub = Sub("unused", "/v1/events")
    sub._consume(RESPONSE + b"0\r\n\r\n", len(RESPONSE) + 5, 0.0)
    assert sub.ended and sub.lines == 4
    refused = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 2\r\n\r\n{}"
    sub = Sub("unused", "/v1/events")
    sub._consume(refused, len(refused), 0.0)
    assert sub.ended and sub.status == 503 and sub.lines == 0
