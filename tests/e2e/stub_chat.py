"""OpenAI chat completions, as Copilot CLI (BYOK, ``COPILOT_PROVIDER_BASE_URL``), Qwen Code
(``OPENAI_BASE_URL``) and opencode (``@ai-sdk/openai-compatible``) use it against a stub:
``POST /v1/chat/completions``, streamed (server-sent ``chat.completion.chunk`` events, then
``data: [DONE]``) when the body asks for it; ``GET /v1/models`` lists one model; anything else
is a 404.

A ``ToolCall`` becomes one ``tool_calls`` entry (``finish_reason`` ``tool_calls``); its
``args`` are the function's arguments.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.e2e.stub_base import Recorded, Response, StubServer, ToolCall

MODEL = "stub-model"
USAGE = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def messages(body: Any) -> list[dict[str, Any]]:
    items = (body or {}).get("messages", []) if isinstance(body, dict) else []
    return [m for m in items if isinstance(m, dict)] if isinstance(items, list) else []


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def tool_names(body: Any) -> list[str]:
    tools = (body or {}).get("tools", []) if isinstance(body, dict) else []
    return [
        str(t["function"]["name"])
        for t in tools or []
        if isinstance(t, dict) and isinstance(t.get("function"), dict) and "name" in t["function"]
    ]


def tool_results(body: Any) -> list[str]:
    return [text_of(m.get("content")) for m in messages(body) if m.get("role") == "tool"]


def system_text(body: Any) -> str:
    return "".join(text_of(m.get("content")) for m in messages(body) if m.get("role") == "system")


class ChatStub(StubServer):
    _ids = itertools.count(1)

    def is_model_request(self, request: Recorded) -> bool:
        return request.method == "POST" and request.route.endswith("/chat/completions")

    def answer(self, request: Recorded) -> Response:
        if request.method == "GET" and request.route.endswith("/models"):
            return Response.json({"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        if not self.is_model_request(request):
            return Response.json({"error": {"message": "not found", "type": "not_found"}}, 404)
        turn = self.decide(request)
        n = next(self._ids)
        cid = f"chatcmpl-{n:06d}"
        call = None
        if isinstance(turn, ToolCall):
            call = {
                "id": f"call_{n:06d}",
                "type": "function",
                "function": {"name": turn.name, "arguments": json.dumps(turn.args)},
            }
        finish = "tool_calls" if call else "stop"
        if not (isinstance(request.body, dict) and request.body.get("stream")):
            text = None if isinstance(turn, ToolCall) else turn.text
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if call:
                message["tool_calls"] = [call]
            return Response.json(
                {
                    "id": cid,
                    "object": "chat.completion",
                    "created": 0,
                    "model": MODEL,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": USAGE,
                }
            )

        def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
            data = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": 0,
                "model": MODEL,
                "choices": choices,
                **extra,
            }
            return f"data: {json.dumps(data)}\n\n".encode()

        delta: dict[str, Any] = (
            {"tool_calls": [{"index": 0, **call}]}
            if call
            else {"content": turn.text if not isinstance(turn, ToolCall) else ""}
        )
        events = [
            chunk([{"index": 0, "delta": {"role": "assistant", "content": ""}}]),
            chunk([{"index": 0, "delta": delta, "finish_reason": None}]),
            chunk([{"index": 0, "delta": {}, "finish_reason": finish}]),
            chunk([], usage=USAGE),
            b"data: [DONE]\n\n",
        ]
        return Response(200, "text/event-stream", b"".join(events))
