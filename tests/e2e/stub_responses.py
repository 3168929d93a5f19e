"""The OpenAI Responses API, as far as Codex uses it against a stub: ``POST /v1/responses``
streamed as server-sent events; anything else (a model list, a probe) is a 404.

Codex reaches it through a ``[model_providers.<name>]`` entry with ``base_url`` ending in
``/v1`` and ``wire_api = "responses"``.  The stream is what Codex's parser reads
(``codex-rs/codex-api/src/sse/responses.rs``, ``process_sse``): ``response.created``, per
output item ``response.output_item.added``, for a message ``response.output_text.delta``,
``response.output_item.done``, then ``response.completed`` with the response id and usage.

A ``ToolCall`` becomes a ``function_call`` item.  Codex 0.171's shell tool is
``exec_command`` (``{"cmd": "..."}``); an MCP tool is offered inside a namespace tool
``mcp__<server>`` and called with ``namespace`` set: a ``ToolCall`` named
``mcp__<server>__<tool>`` is sent that way.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from tests.e2e.stub_base import Recorded, Response, StubServer, ToolCall

SHELL_TOOL = "exec_command"


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(dict(data, type=kind))}\n\n".encode()


def input_items(body: Any) -> list[dict[str, Any]]:
    items = (body or {}).get("input", [])
    return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []


def tool_names(body: Any) -> list[str]:
    """Every tool offered, a namespace's tools as ``<namespace>__<tool>``."""
    out = []
    for tool in (body or {}).get("tools", []):
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "namespace":
            out += [f"{tool.get('name')}__{t.get('name')}" for t in tool.get("tools", [])]
        elif tool.get("name"):
            out.append(str(tool["name"]))
    return out


def output_text(item: dict[str, Any]) -> str:
    output = item.get("output")
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "".join(p.get("text", "") for p in output if isinstance(p, dict))
    return ""


def tool_results(body: Any) -> list[str]:
    """The text of every ``function_call_output`` item of the request, in order."""
    return [output_text(i) for i in input_items(body) if i.get("type") == "function_call_output"]


def user_texts(body: Any) -> list[str]:
    """The text of the user messages (Codex's environment context among them)."""
    out = []
    for item in input_items(body):
        if item.get("type") == "message" and item.get("role") == "user":
            for part in item.get("content", []):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    out.append(part["text"])
    return out


class ResponsesStub(StubServer):
    _ids = itertools.count(1)

    def is_model_request(self, request: Recorded) -> bool:
        return request.method == "POST" and request.route == "/v1/responses"

    def answer(self, request: Recorded) -> Response:
        if not self.is_model_request(request):
            return Response.json({"error": {"message": "not found", "type": "not_found"}}, 404)
        turn = self.decide(request)
        n = next(self._ids)
        rid = f"resp_{n:06d}"
        item: dict[str, Any]
        text = ""
        if isinstance(turn, ToolCall):
            item = {
                "type": "function_call",
                "id": f"fc_{n:06d}",
                "call_id": f"call_{n:06d}",
                "arguments": json.dumps(turn.args),
            }
            namespace, sep, name = turn.name.rpartition("__")
            if sep and namespace.startswith("mcp__"):
                item.update(name=name, namespace=namespace)
            else:
                item["name"] = turn.name
        else:
            text = turn.text
            item = {
                "type": "message",
                "id": f"msg_{n:06d}",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        events = [
            _sse("response.created", {"response": {"id": rid}}),
            _sse("response.output_item.added", {"output_index": 0, "item": item}),
        ]
        if item["type"] == "message":
            delta = {"output_index": 0, "content_index": 0, "item_id": item["id"]}
            events.append(_sse("response.output_text.delta", dict(delta, delta=text)))
        events.append(_sse("response.output_item.done", {"output_index": 0, "item": item}))
        usage = {
            "input_tokens": 1,
            "input_tokens_details": None,
            "output_tokens": 1,
            "output_tokens_details": None,
            "total_tokens": 2,
        }
        events.append(_sse("response.completed", {"response": {"id": rid, "usage": usage}}))
        return Response(200, "text/event-stream", b"".join(events))
