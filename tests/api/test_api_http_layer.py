"""What aiohttp answers before a route sees a request, as raw bytes on a real socket: every such
error is the error JSON of SPEC §4, a body that does not decode is a 400 naming its encoding,
and a target that is not a path (``CONNECT``) meets the token and Host checks first (SPEC §6).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from tests.api.apitest import A, Api, spec_state
from tmuxlocd.daemon.api import create_app
from tmuxlocd.daemon.api.server import ApiRunner
from tmuxlocd.daemon.hub import Hub

A_LONG = 9000  # over aiohttp's 8,190-byte line and header limits


def _exchange(family: int, address: Any, data: bytes) -> bytes:
    """``data`` sent on a fresh connection; the bytes of the first complete answer."""
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(5.0)
        sock.connect(address)
        sock.sendall(data)
        out = b""
        while True:
            head, sep, body = out.partition(b"\r\n\r\n")
            if sep and b" 100 " not in head.split(b"\r\n", 1)[0]:
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    None,
                )
                if length is not None and len(body) >= length:
                    return out
            elif sep:  # an interim 100 Continue: the answer proper follows
                out = body
                continue
            chunk = sock.recv(1 << 16)
            if not chunk:
                return out
            out += chunk


async def raw(family: int, address: Any, data: bytes) -> tuple[int, dict[str, str], bytes]:
    out = await asyncio.to_thread(_exchange, family, address, data)
    head, _, body = out.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(lines[0].split(" ", 2)[1]), headers, body


def error_json(status: int, headers: dict[str, str], body: bytes) -> tuple[int, str, str]:
    """(status, code, message) of an answer that must be the error JSON."""
    assert headers.get("content-type", "").startswith("application/json"), (status, headers, body)
    error = json.loads(body)["error"]
    assert isinstance(error["code"], str) and isinstance(error["message"], str), error
    assert len(body) < 1024, f"an error echoed its input: {len(body)} bytes"
    return status, error["code"], error["message"]


def request(method: str, target: str, *headers: str, body: bytes = b"") -> bytes:
    lines = [f"{method} {target} HTTP/1.1", "Host: localhost", *headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


PARSER_REFUSALS = [
    ("url too long", request("GET", "/v1/panes/" + "9" * A_LONG), 400, "line_too_long"),
    (
        "header too long",
        request("GET", "/v1/health", "X-Big: " + "y" * A_LONG),
        400,
        "line_too_long",
    ),
    (
        "too many headers",
        request("GET", "/v1/health", *(f"X-H{i}: y" for i in range(200))),
        400,
        None,
    ),
    ("bad request line", b"GET /v1/health HTTP/1.1 extra\r\nHost: x\r\n\r\n", 400, None),
    ("bad method", b"G(T /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", 400, "bad_request_line"),
    ("no colon", b"GET /v1/health HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 400, None),
    (
        "br encoding",
        request("POST", "/v1/notify", "Content-Encoding: br", body=b"\x00\x01"),
        400,
        "bad_encoding",
    ),
    (
        "zstd encoding",
        request("POST", "/v1/notify", "Content-Encoding: zstd", body=b"\x00\x01"),
        400,
        "bad_encoding",
    ),
]


@pytest.mark.parametrize(
    ("data", "status", "code"),
    [p[1:] for p in PARSER_REFUSALS],
    ids=[p[0] for p in PARSER_REFUSALS],
)
async def test_parser_refusals_are_the_error_json(
    api: Api, data: bytes, status: int, code: str | None
) -> None:
    got = error_json(*await raw(socket.AF_UNIX, api.path, data))
    assert got[0] == status, got
    if code is not None:
        assert got[1] == code, got
    else:
        assert got[1].startswith("bad_"), got


@pytest.mark.parametrize("path", ["/v1/notify", "/v1/agents/self", "/v1/sync"])
@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_body_that_does_not_decode_is_a_400(
    api: Api, hub: Hub, path: str, encoding: str
) -> None:
    hub.update(spec_state(A))
    data = request(
        "POST",
        path,
        f"Content-Encoding: {encoding}",
        "Content-Type: application/json",
        body=b"this is not " + encoding.encode(),
    )
    status, code, message = error_json(*await raw(socket.AF_UNIX, api.path, data))
    assert (status, code) == (400, "bad_encoding"), message
    assert encoding in message


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
async def test_a_body_that_decodes_is_read(api: Api, encoding: str) -> None:
    plain = b'{"hook": "after-new-window"}'
    packed = gzip.compress(plain) if encoding == "gzip" else zlib.compress(plain)
    data = request(
        "POST",
        "/v1/notify",
        f"Content-Encoding: {encoding}",
        "Content-Type: application/json",
        body=packed,
    )
    status, _, body = await raw(socket.AF_UNIX, api.path, data)
    assert (status, json.loads(body)) == (202, {"accepted": True})


async def test_expect_other_than_continue_is_417_json(api: Api) -> None:
    data = request("POST", "/v1/sync", "Expect: bogus")
    status, code, _ = error_json(*await raw(socket.AF_UNIX, api.path, data))
    assert (status, code) == (417, "expectation_failed")
    data = request("POST", "/v1/notify", "Expect: 100-continue", body=b"{}")
    status, _, body = await raw(socket.AF_UNIX, api.path, data)
    assert status == 202, body


async def test_connect_on_the_unix_socket_is_404_json(api: Api) -> None:
    data = b"CONNECT localhost:80 HTTP/1.1\r\nHost: localhost\r\n\r\n"
    status, code, _ = error_json(*await raw(socket.AF_UNIX, api.path, data))
    assert (status, code) == (404, "not_found")


@pytest.fixture
async def tcp_port(hub: Hub) -> AsyncIterator[int]:
    runner = ApiRunner(create_app(hub, tcp_token="s3cret"), handle_signals=False, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield runner.addresses[0][1]
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(
    ("target", "extra", "want"),
    [
        ("localhost:80", (), (401, "unauthorized")),
        ("*", (), (401, "unauthorized")),
        ("localhost:80", ("Authorization: Bearer wrong",), (401, "unauthorized")),
        ("localhost:80", ("Authorization: Bearer s3cret",), (404, "not_found")),
    ],
)
async def test_connect_over_tcp_meets_the_token_first(
    tcp_port: int, target: str, extra: tuple[str, ...], want: tuple[int, str]
) -> None:
    method = "OPTIONS" if target == "*" else "CONNECT"
    data = request(method, target, *extra)
    status, code, _ = error_json(*await raw(socket.AF_INET, ("127.0.0.1", tcp_port), data))
    assert (status, code) == want


async def test_connect_over_tcp_meets_the_host_check(tcp_port: int) -> None:
    data = (
        b"CONNECT localhost:80 HTTP/1.1\r\nHost: evil.example\r\n"
        b"Authorization: Bearer s3cret\r\n\r\n"
    )
    status, code, _ = error_json(*await raw(socket.AF_INET, ("127.0.0.1", tcp_port), data))
    assert (status, code) == (403, "forbidden")


async def test_errors_echo_a_bounded_part_of_the_input(api: Api) -> None:
    status, body, _ = await api.get("/v1/panes/" + "x" * 5000)
    assert status == 400 and len(json.dumps(body)) < 1024, body
    assert "5000 characters" in body["error"]["message"]
