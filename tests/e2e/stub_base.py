"""A stand-in for a model API on 127.0.0.1: it records every request and answers from a
script, so that a test can assert exactly what a real harness sent to its model.

The protocol stubs (``stub_anthropic``, ``stub_gemini``) subclass ``StubServer`` and turn a
``Turn`` (some text, or one tool call) into their wire format.  A test scripts the model with
a function ``decide(request) -> Turn`` that looks at the request body, e.g. "answer with a
shell call unless the conversation already holds a tool result".

``location_blocks`` finds every location block (``tmux location:`` or ``tmux location (turn
N):`` and the lines that follow it, see ``tmuxlocd.core.location.text_form``) in a request body,
wherever the harness put it: a system reminder, a user turn, a tool result.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Recorded:
    """One request as it reached the stub."""

    method: str
    path: str  # with the query string
    headers: dict[str, str]
    body: Any  # the parsed JSON, None when the body was not JSON
    raw: bytes

    @property
    def route(self) -> str:
        """The path without the query string."""
        return urlsplit(self.path).path


@dataclass(frozen=True)
class Text:
    text: str = "ok"


@dataclass(frozen=True)
class ToolCall:
    name: str
    args: dict[str, Any] = field(default_factory=dict)


Turn = Text | ToolCall
Decide = Callable[[Recorded], Turn]


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes

    @staticmethod
    def json(data: Any, status: int = 200) -> Response:
        return Response(status, "application/json", json.dumps(data).encode())


def always_text(_: Recorded) -> Turn:
    return Text("ok")


class StubServer:
    """A threaded HTTP server on 127.0.0.1:0.  ``requests`` holds every request in the order
    received; ``decide`` answers model requests (set it before the harness runs, or pass it
    in).  Subclasses implement ``answer``."""

    def __init__(self, decide: Decide = always_text) -> None:
        self.decide = decide
        self.requests: list[Recorded] = []
        self.errors: list[str] = []  # exceptions raised while answering (a test asserts none)
        self._lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # a test reads .requests, not a log

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                rec = Recorded(self.command, self.path, dict(self.headers.items()), body, raw)
                with stub._lock:
                    stub.requests.append(rec)
                try:
                    resp = stub.answer(rec)
                except Exception as exc:  # noqa: BLE001 (reported to the test, answered as a 500)
                    stub.errors.append(f"{rec.method} {rec.path}: {exc!r}")
                    resp = Response.json({"error": {"message": repr(exc)}}, 500)
                self.send_response(resp.status)
                self.send_header("content-type", resp.content_type)
                self.send_header("content-length", str(len(resp.body)))
                self.end_headers()
                self.wfile.write(resp.body)

            do_GET = do_POST = do_PUT = do_HEAD = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def answer(self, request: Recorded) -> Response:
        raise NotImplementedError

    def is_model_request(self, request: Recorded) -> bool:
        """A request that asks the model for a turn (not a token count, not a probe)."""
        raise NotImplementedError

    def model_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if self.is_model_request(r)]

    def models(self) -> set[str]:
        """The model names the harness asked for in its model requests."""
        return {
            str(q.body["model"])
            for q in self.model_requests()
            if isinstance(q.body, dict) and "model" in q.body
        }

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


# ----------------------------------------------------------------------------------------------
# Location blocks in request bodies.

_HEAD = re.compile(r"tmux location(?: \(turn (\d+)\))?:\n")
# The lines a block has after its head (tmuxlocd.core.location.text_form, harness.VERIFIED_*).
_BODY_LINE = re.compile(r"(session |window active=|neighbors: |verified_by )[^\n]*(\n|$)")
_PANE = re.compile(r", pane \d+ (%\d+)")


@dataclass(frozen=True)
class Block:
    text: str  # the whole block, head included
    turn: int | None  # the head's "turn N", None for a session start's block

    @property
    def pane(self) -> str | None:
        m = _PANE.search(self.text)
        return m.group(1) if m else None

    @property
    def body(self) -> str:
        """The block without its head: equal for the same location told at another turn."""
        return self.text.split("\n", 1)[1]

    @property
    def neighbors(self) -> str:
        for line in self.text.splitlines():
            if line.startswith("neighbors: "):
                return line
        return ""


def strings(value: Any) -> Iterator[str]:
    """Every string in a parsed JSON value, keys left out."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def blocks_in_text(text: str) -> list[Block]:
    found = []
    for m in _HEAD.finditer(text):
        end = m.end()
        while line := _BODY_LINE.match(text, end):
            end = line.end()
        turn = int(m.group(1)) if m.group(1) else None
        found.append(Block(text[m.start() : end], turn))
    return found


def location_blocks(body: Any) -> list[Block]:
    """Every location block in a request body, in the order of the body's strings."""
    return [b for s in strings(body) for b in blocks_in_text(s)]


def location_bytes(body: Any) -> int:
    """The UTF-8 bytes of the location blocks in a request body."""
    return sum(len(b.text.encode()) for b in location_blocks(body))


def new_blocks(before: Any, after: Any) -> list[Block]:
    """The blocks of ``after`` beyond those ``before`` held (a multiset difference): what a
    request added to the history the previous one already carried."""
    left = [b.text for b in location_blocks(before)] if before is not None else []
    added = []
    for b in location_blocks(after):
        if b.text in left:
            left.remove(b.text)
        else:
            added.append(b)
    return added


def mcp_names_pane(answer: str, pane: str) -> bool:
    """Whether the MCP tool ``where_am_i``'s answer, as a harness showed it to its model,
    names ``pane`` as the caller's: the text form (``, pane N %3``), or the JSON of its
    ``structuredContent``, which Claude Code and Codex show instead of the text when a tool
    returns it (spec's MCP part)."""
    if re.search(rf", pane \d+ {re.escape(pane)}\b", answer):
        return True
    start = answer.find('{"inside_tmux"')
    if start < 0:
        return False
    try:
        value, _ = json.JSONDecoder().raw_decode(answer, start)
    except ValueError:
        return False
    location = value.get("location") if isinstance(value, dict) else None
    return isinstance(location, dict) and location.get("pane", {}).get("id") == pane
