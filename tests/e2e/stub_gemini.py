"""The Gemini API, as far as Gemini CLI uses it against a stub (``GOOGLE_GEMINI_BASE_URL``):
``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` (the chat: one server-sent
event), ``:generateContent`` (the CLI's side requests, e.g. a routing or next-speaker check
that asks for JSON) and ``:countTokens``, for any model name."""

from __future__ import annotations

import json
import re
from typing import Any

from tests.e2e.stub_base import Recorded, Response, StubServer, Text, ToolCall

_MODEL_ROUTE = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):(\w+)$")

# What a side request that asks for JSON gets: the fields of the CLI's checks known to ask
# (a router's choice, the next speaker); every other reader ignores fields it does not know.
SIDE_JSON = {"reasoning": "stub", "model_choice": "flash", "next_speaker": "user"}


def function_responses(body: Any) -> list[str]:
    """Each ``functionResponse`` part of the request's contents, as JSON text, in order."""
    out = []
    for content in (body or {}).get("contents", []):
        for part in content.get("parts", []) or []:
            if isinstance(part, dict) and "functionResponse" in part:
                out.append(json.dumps(part["functionResponse"]))
    return out


def tool_names(body: Any) -> list[str]:
    names = []
    for tool in (body or {}).get("tools", []) or []:
        for decl in tool.get("functionDeclarations", []) or []:
            names.append(decl.get("name", ""))
    return names


def _usage() -> dict[str, int]:
    return {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}


class GeminiStub(StubServer):
    def route(self, request: Recorded) -> tuple[str, str] | None:
        m = _MODEL_ROUTE.match(request.route)
        return (m.group(1), m.group(2)) if m else None

    def is_model_request(self, request: Recorded) -> bool:
        r = self.route(request)
        return request.method == "POST" and r is not None and r[1] == "streamGenerateContent"

    def models(self) -> set[str]:
        """The model names of the chat requests (which model the CLI asked for)."""
        return {r[0] for q in self.model_requests() if (r := self.route(q))}

    def answer(self, request: Recorded) -> Response:
        r = self.route(request)
        if request.method != "POST" or r is None:
            return Response.json({"error": {"code": 404, "message": "not found"}}, 404)
        method = r[1]
        if method == "countTokens":
            return Response.json({"totalTokens": 10})
        if method == "generateContent":
            config = (request.body or {}).get("generationConfig", {}) or {}
            wants_json = config.get("responseMimeType") == "application/json"
            text = json.dumps(SIDE_JSON) if wants_json else "ok"
            return Response.json(self._candidate({"text": text}))
        if method != "streamGenerateContent":
            return Response.json({"error": {"code": 404, "message": "not found"}}, 404)
        turn = self.decide(request)
        if isinstance(turn, ToolCall):
            part: dict[str, Any] = {"functionCall": {"name": turn.name, "args": turn.args}}
        else:
            assert isinstance(turn, Text)
            part = {"text": turn.text}
        event = json.dumps(self._candidate(part))
        return Response(200, "text/event-stream", f"data: {event}\n\n".encode())

    @staticmethod
    def _candidate(part: dict[str, Any]) -> dict[str, Any]:
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [part]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": _usage(),
        }
