"""The Anthropic Messages API, as far as Claude Code uses it against a stub:
``POST /v1/messages`` (streamed as server-sent events when the body says ``stream``, else one
JSON message) and ``POST /v1/messages/count_tokens``; anything else is a 404."""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.e2e.stub_base import Recorded, Response, StubServer, Text, ToolCall, Turn


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def tool_results(body: Any) -> list[str]:
    """The text of every ``tool_result`` block of the request's messages, in order."""
    out = []
    for message in (body or {}).get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                if isinstance(inner, str):
                    out.append(inner)
                elif isinstance(inner, list):
                    out.append("".join(b.get("text", "") for b in inner if isinstance(b, dict)))
    return out


def tool_uses(body: Any) -> list[str]:
    """The names of the tools the conversation's assistant turns called, in order."""
    return [
        block.get("name", "")
        for message in (body or {}).get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_use"
    ]


def tool_names(body: Any) -> list[str]:
    return [t.get("name", "") for t in (body or {}).get("tools", []) if isinstance(t, dict)]


class AnthropicStub(StubServer):
    _ids = itertools.count(1)

    def is_model_request(self, request: Recorded) -> bool:
        return request.method == "POST" and request.route == "/v1/messages"

    def answer(self, request: Recorded) -> Response:
        if request.method == "POST" and request.route == "/v1/messages/count_tokens":
            return Response.json({"input_tokens": 10})
        if not self.is_model_request(request):
            return Response.json({"type": "error", "error": {"type": "not_found_error"}}, 404)
        body = request.body or {}
        turn = self.decide(request)
        model = body.get("model", "stub")
        n = next(self._ids)
        if isinstance(turn, ToolCall):
            content: dict[str, Any] = {
                "type": "tool_use",
                "id": f"toolu_{n:06d}",
                "name": turn.name,
                "input": turn.args,
            }
            stop = "tool_use"
        else:
            assert isinstance(turn, Text)
            content = {"type": "text", "text": turn.text}
            stop = "end_turn"
        if not body.get("stream"):
            return Response.json(
                {
                    "id": f"msg_{n:06d}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [content],
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 10, "output_tokens": 5},
                }
            )
        if content["type"] == "tool_use":
            start = {**content, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(turn_args(turn))}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": content["text"]}
        events = [
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": f"msg_{n:06d}",
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 1},
                    },
                },
            ),
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": start},
            ),
            _sse(
                "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
            ),
            _sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            _sse("message_stop", {"type": "message_stop"}),
        ]
        return Response(200, "text/event-stream", b"".join(events))


def turn_args(turn: Turn) -> dict[str, Any]:
    return turn.args if isinstance(turn, ToolCall) else {}
