"""A stand-in for a model API: OpenAI chat completions over loopback HTTP, recording requests.

Used by ``calibrate_harnesses.py`` to run a real harness against something that answers and
keeps every request it was sent, so that what a hook injected can be found in the bytes the
harness would have sent to its model.

- ``POST .../chat/completions`` (streamed or not): answers ``ok``; when the last user message
  contains ``RUNSHELL: <command>`` and no tool result follows it, answers with one call of
  the harness's shell tool (the first tool whose name is in ``SHELL_TOOLS``) with that
  command, then ``done`` once the result comes back.
- ``GET .../models``: one model, ``stub-model``.
- anything else: 404, recorded too.

Each request is one JSON line in the log: ``{"method", "path", "body"}`` (the body parsed
when it is JSON, else the text).  Run: ``python stub_model.py LOG`` (prints the port on
stdout, then serves until killed).
"""

from __future__ import annotations

import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHELL_TOOLS = ("bash", "shell", "run_shell_command", "run_command")
MODEL = "stub-model"
_LOCK = threading.Lock()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def shell_call(body: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """The shell tool call to answer with, if the turn asks for one and has none yet."""
    messages = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    if last_user < 0:
        return None
    if any(m.get("role") == "tool" for m in messages[last_user + 1 :]):
        return None
    match = re.search(r'RUNSHELL: ([^<\n"]+)', _text(messages[last_user].get("content")))
    if match is None:
        return None
    for tool in body.get("tools") or []:
        fn = tool.get("function") or {}
        if fn.get("name") in SHELL_TOOLS:
            params = fn.get("parameters") or {}
            args: dict[str, Any] = {}
            for name in params.get("required") or []:
                args[name] = "stub"
            args["command"] = match.group(1).strip()
            if "description" in (params.get("properties") or {}):
                args["description"] = "run it"
            return str(fn["name"]), args
    return None


class Handler(BaseHTTPRequestHandler):
    log_path = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self, body: Any) -> None:
        line = json.dumps({"method": self.command, "path": self.path, "body": body}) + "\n"
        with _LOCK, open(self.log_path, "a", encoding="utf-8") as f:
            f.write(line)

    def _json(self, code: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._record(None)
        if self.path.rstrip("/").endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", "replace")
        self._record(body)
        if not self.path.split("?")[0].endswith("/chat/completions") or not isinstance(body, dict):
            self._json(404, {"error": {"message": "not found"}})
            return
        call = shell_call(body)
        done = any(m.get("role") == "tool" for m in body.get("messages") or [])
        text = "done" if done else "ok"
        if body.get("stream"):
            self._stream(call, text)
        else:
            message: dict[str, Any] = {"role": "assistant", "content": None if call else text}
            if call:
                message["tool_calls"] = [_tool_call(call)]
            self._json(
                200,
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "created": 0,
                    "model": MODEL,
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if call else "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
                },
            )

    def _stream(self, call: tuple[str, dict[str, Any]] | None, text: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> None:
            value = {
                "id": "chatcmpl-stub",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": MODEL,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                **extra,
            }
            self.wfile.write(f"data: {json.dumps(value)}\n\n".encode())

        chunk({"role": "assistant", "content": ""})
        if call:
            chunk({"tool_calls": [{"index": 0, **_tool_call(call)}]})
            chunk({}, "tool_calls")
        else:
            chunk({"content": text})
            chunk({}, "stop")
        usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
        self.wfile.write(
            f"data: {json.dumps({'id': 'chatcmpl-stub', 'object': 'chat.completion.chunk', 'created': 0, 'model': MODEL, 'choices': [], 'usage': usage})}\n\n".encode()  # noqa: E501
        )
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


def _tool_call(call: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    name, args = call
    return {
        "id": "call_stub_1",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def main(argv: list[str]) -> int:
    Handler.log_path = argv[0]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
