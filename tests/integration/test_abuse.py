"""Abuse of a daemon running as ``python -m tmuxlocd serve``: garbage and malformed HTTP on
its Unix socket, huge headers and bodies, a slowloris, path tricks in ids, every query
parameter fuzzed (hypothesis), and hostile tmux names (escape sequences, 10 KB, bytes that
are not UTF-8, raw control characters) flowing through the JSON and text forms.

The rules checked: never a 5xx, never a crash; every error the application answers is
``{"error": {"code", "message"}}`` with a 4xx status; JSON is always valid; the text form is
always exactly three lines (four with neighbours); the daemon keeps answering others.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.soak import REPO, TMUX, rss_kib, tmux_env, window_name
from tests.tmuxbin import accepted_names, refuses_name
from tests.tmuxtest import TmuxServer
from tmuxlocd.clients.client import UnixHTTPConnection
from tmuxlocd.core.names import unvis

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
    pytest.mark.timeout(180),
]

CODE = re.compile(r"[a-z][a-z0-9_]*")


@dataclass
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Env:
    srv: TmuxServer
    sock: str
    proc: subprocess.Popen[bytes]
    log_path: str
    rss0: int

    def request(
        self,
        method: str,
        target: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        stream: bool = False,
    ) -> Answer:
        conn = UnixHTTPConnection(self.sock, 10.0)
        try:
            conn.putrequest(method, target, skip_accept_encoding=True)
            for k, v in (headers or {}).items():
                conn.putheader(k, v)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            if stream and resp.status == 200:
                # A stream: its first frame (up to a blank line or a newline), then hang up.
                data = b""
                end = b"\n\n" if "event-stream" in resp.getheader("Content-Type", "") else b"\n"
                while end not in data:
                    chunk = resp.read1(1 << 16)
                    if not chunk:
                        break
                    data += chunk
            else:
                data = resp.read()
            return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)
        finally:
            conn.close()

    def raw(self, data: bytes, timeout: float = 5.0, wait: bool = True) -> bytes:
        """Bytes in, whatever comes back until the daemon closes or goes quiet."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(self.sock)
            with contextlib.suppress(OSError):
                sock.sendall(data)
            if not wait:
                return b""
            out = b""
            with contextlib.suppress(OSError):
                while True:
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        break
                    out += chunk
                    if b"\r\n\r\n" in out and _complete(out):
                        break
            return out

    def alive(self) -> None:
        """The daemon runs and answers (``request``'s socket timeout catches a hang)."""
        assert self.proc.poll() is None, "the daemon died:\n" + self.log()
        answer = self.request("GET", "/v1/health")
        assert answer.status == 200 and answer.json["status"] == "ok"

    def log(self) -> str:
        return Path(self.log_path).read_text(errors="replace")

    def sync(self) -> None:
        assert self.request("POST", "/v1/sync").status == 200

    def pane_ids(self) -> list[str]:
        return [line for line in self.srv.run("list-panes", "-a", "-F", "#{pane_id}").split()]


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    return m is None or len(body) >= int(m.group(1))


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    srv = TmuxServer()
    srv.start("A")
    srv.run("set-option", "-g", "default-shell", "/bin/sh")
    srv.run("new-session", "-d", "-s", "B", "-x", "100", "-y", "30")
    srv.run("split-window", "-d", "-t", "A:0")
    srv.run("split-window", "-d", "-h", "-t", "B:0")
    directory = tempfile.mkdtemp(prefix="tlx-", dir="/tmp")
    sock = os.path.join(directory, "d.sock")
    log_path = os.path.join(directory, "daemon.log")
    environ = tmux_env()
    environ["PYTHONPATH"] = str(REPO)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tmuxlocd",
                "serve",
                "--listen",
                f"unix:{sock}",
                "-S",
                srv.socket_path,
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=environ,
            cwd=str(REPO),
            start_new_session=True,
        )
    e = Env(srv, sock, proc, log_path, 0)
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(OSError, http.client.HTTPException):
                if e.request("GET", "/v1/health").status == 200:
                    break
            assert proc.poll() is None and time.monotonic() < deadline, e.log()
            time.sleep(0.02)
        e.sync()
        e.rss0 = rss_kib(proc.pid)
        yield e
        e.alive()
        assert rss_kib(proc.pid) < e.rss0 + 40 * 1024, "daemon memory grew"
        text = e.log()
        assert " ERROR " not in text and "Traceback" not in text, (
            "the daemon logged errors:\n" + text[text.find(" ERROR ") - 30 :][:3000]
        )
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        srv.kill()
        with contextlib.suppress(OSError):
            for name in os.listdir(directory):
                os.unlink(os.path.join(directory, name))
            os.rmdir(directory)


def check_answer(answer: Answer, what: str) -> None:
    """The rules for anything the application answers."""
    assert answer.status < 500, f"{what}: {answer.status} {answer.body[:300]!r}"
    ctype = answer.headers.get("content-type", "")
    if answer.status >= 400:
        assert ctype.startswith("application/json"), f"{what}: {answer.status} {ctype}"
        err = answer.json["error"]
        assert CODE.fullmatch(err["code"]), f"{what}: code {err['code']!r}"
        assert isinstance(err["message"], str) and err["message"]
    elif ctype.startswith("application/json") and answer.body:
        json.loads(answer.body)
    elif ctype.startswith("text/plain") and answer.body:
        check_text_form(answer.body.decode("utf-8"), what)


def check_text_form(text: str, what: str) -> None:
    lines = text.split("\n")
    assert lines[-1] == "", f"{what}: text form does not end with a newline: {text!r}"
    assert len(lines) - 1 in (3, 4), f"{what}: {len(lines) - 1} lines: {text!r}"
    # Also for a reader that splits lines the Unicode way (U+2028, U+0085, ...).
    assert len(text.splitlines()) == len(lines) - 1, f"{what}: hidden line breaks: {text!r}"
    assert text.startswith("tmux location")
    for ch in text:
        assert ch == "\n" or not (ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0), (
            f"{what}: raw control character {ch!r} in the text form"
        )


# ----------------------------------------------------------------------------------------------
# Malformed HTTP and garbage.

MALFORMED = [
    b"\r\n\r\n",
    b"GET\r\n\r\n",
    b"GET /v1/health\r\n\r\n",  # HTTP/0.9
    b"GET /v1/health HTTP/9.9\r\nHost: x\r\n\r\n",
    b"G\x00T /v1/health HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v1/he\x00alth HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nNoColonHere\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
    b"POST /v1/notify HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n",
    b"POST /v1/notify HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nContent-Length: 20\r\n\r\n",
    (
        b"POST /v1/notify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"zz\r\nab\r\n0\r\n\r\n"
    ),
    (
        b"POST /v1/notify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        b"Content-Length: 3\r\n\r\n0\r\n\r\n"
    ),
    b"POST /v1/notify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\n Folded: header\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\nX: \xff\xfe\x00\r\n\r\n",
    b"GET " + b"/v1/panes/" + b"9" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /v1/health HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    b"CONNECT localhost:80 HTTP/1.1\r\nHost: x\r\n\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(range(256)),  # a TLS hello
]


def test_malformed_http(env: Env) -> None:
    for data in MALFORMED:
        out = env.raw(data)
        if out:
            status = int(out.split(b" ", 2)[1])
            assert status < 500, f"{data[:60]!r} -> {out[:200]!r}"
        env.alive()


def test_pipelined_requests(env: Env) -> None:
    out = env.raw(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n" * 3, wait=False)
    assert out == b""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(env.sock)
        sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n" * 3)
        data = b""
        while data.count(b"HTTP/1.1 200") < 3:
            chunk = sock.recv(1 << 16)
            assert chunk, data
            data += chunk


@given(st.binary(min_size=1, max_size=2000))
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
def test_garbage_bytes(env: Env, data: bytes) -> None:
    # A prefix of a request makes the daemon wait for the rest: no answer is fine.
    out = env.raw(data, timeout=0.3)
    if out.startswith(b"HTTP/"):
        status = int(out.split(b" ", 2)[1])
        assert status < 500, f"{data[:80]!r} -> {out[:200]!r}"
    assert env.proc.poll() is None


def test_huge_headers_and_bodies(env: Env) -> None:
    big = "x" * (1 << 20)
    out = env.raw(f"GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: {big}\r\n\r\n".encode())
    assert out == b"" or 400 <= int(out.split(b" ", 2)[1]) < 500
    many = "".join(f"X-H{i}: {'y' * 100}\r\n" for i in range(10_000))
    out = env.raw(f"GET /v1/health HTTP/1.1\r\nHost: x\r\n{many}\r\n".encode())
    assert out == b"" or 400 <= int(out.split(b" ", 2)[1]) < 500
    env.alive()
    # Bodies: 64 KiB at most (SPEC §6), declared or chunked.
    answer = env.request(
        "POST",
        "/v1/notify",
        body=b"{" + b" " * (1 << 20) + b"}",
        headers={"Content-Type": "application/json"},
    )
    assert answer.status == 413 and answer.json["error"]["code"] == "payload_too_large"
    chunked = b"".join(b"4000\r\n" + b" " * 0x4000 + b"\r\n" for _ in range(8)) + b"0\r\n\r\n"
    out = env.raw(
        b"POST /v1/notify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked
    )
    assert int(out.split(b" ", 2)[1]) == 413, out[:300]
    env.alive()


def test_slowloris(env: Env) -> None:
    """Twenty clients send their request a byte a second; everyone else is served at once."""
    request = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"
    results: list[bytes] = []
    errors: list[BaseException] = []
    done_sending: list[int] = []

    def slow() -> None:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(20)
                sock.connect(env.sock)
                for byte in request[:5]:
                    sock.sendall(bytes([byte]))
                    time.sleep(1.0)  # the attack itself: one byte a second
                sock.sendall(request[5:])
                done_sending.append(1)
                data = b""
                while b"\r\n\r\n" not in data or not _complete(data):
                    chunk = sock.recv(1 << 16)
                    if not chunk:
                        break
                    data += chunk
                results.append(data)
        except Exception as exc:  # noqa: BLE001 -- reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=slow) for _ in range(20)]
    for t in threads:
        t.start()
    slowest = 0.0
    served = 0
    served_meanwhile = 0  # answered while every slow client was still mid-request
    while any(t.is_alive() for t in threads):
        t0 = time.monotonic()
        answer = env.request("GET", "/v1/tree")
        assert answer.status == 200
        slowest = max(slowest, time.monotonic() - t0)
        served += 1
        if not done_sending:
            served_meanwhile += 1
    for t in threads:
        t.join()
    assert not errors, errors
    # A daemon held up by the slow requests would answer the others only once they were
    # complete; here the others are served all along (the slowest answer is printed).
    assert served_meanwhile > 20, (served_meanwhile, served)
    print(f"\nslowloris: {served_meanwhile} of {served} meanwhile, slowest {slowest:.3f} s")
    # The slow requests themselves were answered properly in the end.
    assert len(results) == 20 and all(r.startswith(b"HTTP/1.1 200") for r in results)


# ----------------------------------------------------------------------------------------------
# Ids and paths.

PATHS = [
    "/v1/panes/..%2f..",
    "/v1/panes/..%2F..%2Fetc%2Fpasswd",
    "/v1/panes/%00",
    "/v1/panes/%2500",
    "/v1/panes/1%00",
    "/v1/panes/self%00",
    "/v1/panes/%ff%fe",
    "/v1/panes/%c0%ae%c0%ae",
    "/v1/panes/99999999999999999999",
    "/v1/panes/1" + "0" * 5000,
    "/v1/panes/-1",
    "/v1/panes/+1",
    "/v1/panes/0x1",
    "/v1/panes/1e3",
    "/v1/panes/%253",
    "/v1/panes/%25253",
    "/v1/panes/%EF%BC%93",
    "/v1/panes/%E0%A5%A7",
    "/v1/panes/%E2%80%A8",
    "/v1/panes/%20",
    "/v1/panes/1/neighbors/sideways",
    "/v1/panes/1/neighbors/%2e%2e",
    "/v1/panes/1/neighbors/left/extra",
    "/v1/panes/%40",
    "/v1/panes/@1",
    "/v1/panes/$1",
    "/v1/panes/SELF",
    "/v1/panes/self/neighbors/up",
    "/v1/../v1/health",
    "//v1/health",
    "/v1/health/",
    "/v1//panes",
    "/v1/tree%00",
    "/v1/%2e%2e/v1/tree",
    "/v2/tree",
    "/v1/panes?limit=1&limit=2",
    "/v1/panes?window=%40%40",
    "/v1/panes?session=%24%24",
    "/v1/panes?server=..%2f..%2f..",
    "/v1/panes?server=%00",
    "/v1/panes?server=" + "a" * 5000,
    "/v1/panes?pane=1&pane=self",
    "/v1/events?since=%00",
    "/v1/events?since=x:1:2",
    "/v1/events?since=" + "9" * 400,
    "/v1/events?types=pane.added%00",
]


def test_path_tricks(env: Env) -> None:
    for path in PATHS:
        for method in ("GET", "POST", "DELETE"):
            answer = env.request(method, path, stream="/v1/events" in path)
            check_answer(answer, f"{method} {path[:80]}")
            # Only a spelling of a pane id may find one (%2500 is "%00", pane %0).
            segment = urllib.parse.unquote([*path.split("/"), "", "", ""][3])
            if (
                path.startswith("/v1/panes/")
                and method == "GET"
                and "?" not in path
                and "/neighbors" not in path
                and not re.fullmatch(r"%?[0-9]{1,9}", segment)
            ):
                assert answer.status in (400, 404), f"{path}: {answer.status}"
    env.alive()


@given(st.text(max_size=40) | st.binary(max_size=30).map(lambda b: b.decode("latin-1")))
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzzed_ids(env: Env, ident: str) -> None:
    quoted = urllib.parse.quote(ident.encode("utf-8", "surrogatepass"), safe="")
    for path in (
        f"/v1/panes/{quoted}",
        f"/v1/panes/{quoted}/neighbors",
        f"/v1/panes/1/neighbors/{quoted}",
        f"/v1/panes?window={quoted}",
        f"/v1/panes?session={quoted}",
        f"/v1/panes?server={quoted}",
    ):
        answer = env.request("GET", path)
        check_answer(answer, path)


# ----------------------------------------------------------------------------------------------
# Every query parameter, fuzzed.

NAMES = [
    "limit",
    "offset",
    "format",
    "detail",
    "types",
    "min_interval_ms",
    "turn",
    "since",
    "pane",
    "window",
    "session",
    "server",
    "neighbors",
    "fresh",
    "accept",
]
INTERESTING = [
    "",
    "0",
    "1",
    "-1",
    "00",
    "01",
    "self",
    "%1",
    "@1",
    "$1",
    "@0",
    "$0",
    "%0",
    "1e3",
    "0x10",
    "99999999999999999999",
    "1000",
    "1001",
    "3600000",
    "3600001",
    "true",
    "yes",
    "off",
    "json",
    "text",
    "ndjson",
    "sse",
    "summary",
    "full",
    "ancestor",
    "pane.added,pane.removed",
    "pane.added,,",
    "bogus",
    " 1",
    "1 ",
    "１",
    "१",
    "\x00",
    "\ufeff1",
    "../..",
    "a" * 3000,
    "x:1",
    ":1",
    "deadbeef:0",
    "\u2028",
    "日本",
]
VALUE = st.one_of(
    st.sampled_from(INTERESTING),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=20),
    st.binary(max_size=12).map(lambda b: b.decode("latin-1")),
)
ENDPOINT = st.sampled_from(
    [
        ("GET", "/v1/self"),
        ("GET", "/v1/panes"),
        ("GET", "/v1/panes/0"),
        ("GET", "/v1/panes/0/neighbors"),
        ("GET", "/v1/panes/0/neighbors/left"),
        ("GET", "/v1/panes/self"),
        ("GET", "/v1/tree"),
        ("GET", "/v1/health"),
        ("GET", "/v1/events"),
        ("POST", "/v1/sync"),
        ("POST", "/v1/notify"),
    ]
)


HTTP_LINE_MAX = 8000  # aiohttp refuses a request line over 8,190 bytes


def query_string(params: list[tuple[str, str]]) -> str:
    return "&".join(
        f"{k}={urllib.parse.quote(v.encode('utf-8', 'surrogatepass'), safe='')}" for k, v in params
    )


@given(
    ENDPOINT,
    st.lists(st.tuples(st.sampled_from(NAMES), VALUE), max_size=5),
    st.sampled_from([None, "text/plain", "application/x-ndjson", "*/*", "application/json"]),
    st.one_of(
        st.none(), st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
    ),
)
@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzzed_query_parameters(
    env: Env,
    endpoint: tuple[str, str],
    params: list[tuple[str, str]],
    accept: str | None,
    last_event_id: str | None,
) -> None:
    method, path = endpoint
    headers = {}
    if accept is not None:
        headers["Accept"] = accept
    if last_event_id is not None and path == "/v1/events":
        headers["Last-Event-ID"] = last_event_id
    target = path + ("?" + query_string(params) if params else "")
    answer = env.request(method, target, headers=headers, stream=path == "/v1/events")
    if len(target) > HTTP_LINE_MAX:
        # Refused by the HTTP parser before the application sees it, in the error JSON too.
        assert answer.status == 400 and answer.json["error"]["code"] == "line_too_long", answer
        return
    check_answer(answer, f"{method} {target[:200]} {headers}")
    if path == "/v1/events" and answer.status == 200:
        first = answer.body.split(b"\n", 1)[0]
        if answer.headers["content-type"].startswith("application/x-ndjson"):
            assert json.loads(first)["type"] in ("snapshot", "reset")


@given(
    st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(
                    st.sampled_from(["hook", "server", "target", "x", ""]) | st.text(max_size=5),
                    inner,
                    max_size=4,
                )
            ),
            max_leaves=10,
        ).map(lambda v: json.dumps(v).encode()),
    )
)
@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
def test_fuzzed_notify_bodies(env: Env, body: bytes) -> None:
    answer = env.request(
        "POST", "/v1/notify", body=body, headers={"Content-Type": "application/json"}
    )
    check_answer(answer, f"notify {body[:100]!r}")
    assert answer.status in (202, 400), answer.status


# ----------------------------------------------------------------------------------------------
# Hostile names from the tmux side.

# As argv (str; a lone surrogate becomes that byte: \udcff is the byte 0xff).
WINDOW_RENAMES = [
    "\x1b[31mred\x1b[0m \x1b]0;title\x07 \x1b[2J\x1b[H",
    "x" * 10_240,
    "日本語" * 1200,
    "\udcff\udcfe not utf-8",
    "\u2028line\u2029para\x85nel\x7fdel",
    'quote " backslash \\ tab \t nl \n cr \r end',
    "\\033 \\n \\t \\\\ (backslash text, not escapes)",
]
RAW_WINDOW_NAMES = [  # new-window -n stores these unencoded
    "raw\nnewline\ttab\x1b[2J\udcff",
    "raw\r\ncrlf\x85\u2028",
]
SESSION_RENAMES = [
    "\x1b]0;pwned\x07 session \u2028 \x85",
    "s" * 10_240,
    "\udcff\udcfe",
    "sess\nnl\ttab",
]


def tmux_names(srv: TmuxServer) -> tuple[dict[str, str], dict[str, str]]:
    """(window id -> name, session id -> name) as tmux has them, decoded."""
    out = subprocess.run(
        srv.argv(
            "-u",
            "list-windows",
            "-a",
            "-F",
            "W\t#{window_id}\t#{window_name}",
            ";",
            "list-sessions",
            "-F",
            "S\t#{session_id}\t#{session_name}",
        ),
        capture_output=True,
        env=tmux_env(),
        check=True,
        timeout=20,
    ).stdout.decode("utf-8", "replace")
    windows: dict[str, str] = {}
    sessions: dict[str, str] = {}
    rows: list[str] = []
    for line in out.split("\n")[:-1]:
        if re.match(r"[WS]\t[@$][0-9]+\t", line) or not rows:
            rows.append(line)
        else:
            rows[-1] += "\n" + line
    for row in rows:
        tag, ident, name = row.split("\t", 2)
        if tag == "W":
            windows[ident] = window_name(name)
        else:
            sessions[ident] = unvis(name)
    return windows, sessions


def test_hostile_tmux_names(env: Env) -> None:
    """Every hostile name the tmux under test takes (3.7+ refuses control characters and bad
    UTF-8: those are checked to be refused, so they cannot reach the daemon)."""
    srv = env.srv
    sessions = srv.run("list-sessions", "-F", "#{session_id}").split()
    takes_any = not refuses_name("\udcff\x1b")
    raw_window_names = accepted_names(RAW_WINDOW_NAMES) or ["raw #[fg=red] \u2028 \x85"]
    for name in [*WINDOW_RENAMES, *SESSION_RENAMES]:
        if refuses_name(name):
            argv = srv.argv("rename-window", "--", name)
            done = subprocess.run(
                argv, capture_output=True, env=tmux_env(), timeout=20, check=False
            )
            assert done.stderr.startswith(b"invalid window name: "), done
    for i, name in enumerate(accepted_names(WINDOW_RENAMES)):
        wid = srv.run(
            "new-window", "-d", "-P", "-F", "#{window_id}", "-t", f"{sessions[i % 2]}:"
        ).strip()
        srv.run("rename-window", "-t", wid, "--", name)
    for name in raw_window_names:
        srv.run("new-window", "-d", "-n", name, "-t", f"{sessions[0]}:")
    for i, name in enumerate(accepted_names(SESSION_RENAMES)):
        target = f"H{i}"
        srv.run(
            "new-session", "-d", "-s", target, "-n", raw_window_names[i % len(raw_window_names)]
        )
        srv.run("rename-session", "-t", target, "--", name)
    env.sync()
    windows, session_names = tmux_names(srv)
    tree = env.request("GET", "/v1/tree")
    assert tree.status == 200
    data = json.loads(tree.body)  # valid JSON whatever the names
    got_windows = {w["id"]: w["name"] for s in data["servers"][0]["sessions"] for w in s["windows"]}
    got_sessions = {s["id"]: s["name"] for s in data["servers"][0]["sessions"]}
    assert got_windows == windows
    assert got_sessions == session_names
    if takes_any:
        assert any("\ufffd" in n for n in windows.values()), "no invalid UTF-8 reached the daemon"
    assert any(len(n) >= 10_240 for n in windows.values())
    for pane in env.pane_ids():
        number = pane[1:]
        for query in ("format=text", "format=text&neighbors=1", "format=text&turn=7"):
            answer = env.request("GET", f"/v1/panes/{number}?{query}")
            assert answer.status == 200
            check_text_form(answer.body.decode("utf-8"), f"pane {pane} {query}")
        answer = env.request("GET", f"/v1/panes/{number}")
        check_answer(answer, f"pane {pane}")
        assert answer.json["window"]["name"] == windows[answer.json["window"]["id"]]
    # The streams carry them too: NDJSON lines parse, SSE text events are three lines.
    answer = env.request("GET", "/v1/events?format=ndjson", stream=True)
    assert json.loads(answer.body.split(b"\n", 1)[0])["type"] == "snapshot"
    for pane in env.pane_ids()[-4:]:
        answer = env.request("GET", f"/v1/events?format=text&pane={pane[1:]}", stream=True)
        assert answer.status == 200
        frame = answer.body.decode("utf-8").split("\n\n", 1)[0]
        data_lines = [line for line in frame.split("\n") if line.startswith("data: ")]
        assert len(data_lines) == 3, frame
        assert len(frame.splitlines()) == len(frame.split("\n")), f"hidden breaks: {frame!r}"
    env.alive()
