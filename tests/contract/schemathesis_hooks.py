"""Schemathesis hooks of the contract run (SCHEMATHESIS_HOOKS=tests.contract.schemathesis_hooks).

Two kinds of request last as long as they are allowed to, and are shortened here so that
thousands of them end in seconds (every other value is sent as generated):

- a valid ``GET /v1/panes/{pane}/wait`` waits up to its ``timeout_s`` (300 s at most): it is
  capped at a tenth of a second;
- ``GET /v1/events`` never ends: Schemathesis stops reading an SSE stream after its first event
  (``max-stream-events`` in schemathesis.toml), but an NDJSON stream is read to its end, so
  format=ndjson (or the Accept that asks for it) is sent as SSE.  The NDJSON form is checked by
  tests/api/test_api_streams.py.
"""

from __future__ import annotations

from typing import Any

import schemathesis

WAIT_CAP_S = 0.1


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    query = case.query
    if not isinstance(query, dict):
        return
    if case.path == "/v1/events":
        if query.get("format") == "ndjson":
            query["format"] = "sse"
        headers = case.headers or {}
        for name in list(headers):
            if name.lower() == "accept" and "ndjson" in str(headers[name]):
                del headers[name]
    if case.path == "/v1/panes/{pane}/wait" and "timeout_s" not in query:
        query["timeout_s"] = WAIT_CAP_S  # its default is 300 s
    value = query.get("timeout_s")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > WAIT_CAP_S:
        query["timeout_s"] = WAIT_CAP_S
