"""Renders the rows the end-to-end tests wrote to ``$TMUXLOCD_E2E_REPORT`` (JSON lines, one
per test) as Markdown tables, one per harness and version:

    TMUXLOCD_E2E_REPORT=/tmp/e2e.jsonl .venv/bin/pytest -m e2e tests/e2e
    .venv/bin/python -m tests.e2e.report /tmp/e2e.jsonl

Columns: the scenario; the model requests it made; the bytes of location text in each
request's body (the history included, so a block carried along counts again) and the bytes
that request added; the hook runs (events) and their wall time, median and largest (each hook
timed around the command ``tmuxlocd install`` wrote, ``tests/e2e/hookclock.py``).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any

# The scenarios in the order of the list.
ORDER = (
    "first_prompt_then_resume",
    "interactive_prompts",
    "split_from_outside",
    "tool_call_splits_the_pane",
    "outside_a_pane",
    "outside_a_pane, foreign pty",
    "daemon_down",
    "two_sessions_two_panes",
    "mcp_where_am_i",
)


def _key(row: dict[str, Any]) -> tuple[int, str]:
    name = str(row.get("scenario", ""))
    return (ORDER.index(name) if name in ORDER else len(ORDER), name)


def _bytes(values: list[int]) -> str:
    return ", ".join(str(v) for v in values) or "-"


def render(rows: list[dict[str, Any]]) -> str:
    """A table per harness package of its scenarios' rows, then one of the ``kill -9``
    timings (rows with ``gone_ms``: from the signal to no agent listed, and to the pidfd
    readable where the test held one)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    kills = [row for row in rows if "gone_ms" in row]
    for row in rows:
        if "package" in row:
            groups[(str(row["package"]), str(row["version"]))].append(row)
    out = []
    for (package, version), items in sorted(groups.items()):
        # A scenario run twice (a report appended to by two runs): the last row stands.
        latest = {str(r["scenario"]): r for r in items}
        models = sorted({m for r in latest.values() for m in r.get("models", [])})
        out.append(f"### {package} {version}")
        out.append("")
        tools = sorted({str(r["mcp_tool"]) for r in latest.values() if r.get("mcp_tool")})
        if tools:
            out.append("MCP tool as offered to the model: " + ", ".join(f"`{t}`" for t in tools))
            out.append("")
        if models:
            out.append("Model named in its requests: " + ", ".join(f"`{m}`" for m in models))
            out.append("")
        out.append(
            "| scenario | model requests | location bytes per request | added per request "
            "| hook runs | hook events | hook ms median / max |"
        )
        out.append("|---|---|---|---|---|---|---|")
        for r in sorted(latest.values(), key=_key):
            ms = (
                f"{r['hook_ms_median']} / {r['hook_ms_max']}"
                if r.get("hook_ms_median") is not None
                else "-"
            )
            out.append(
                f"| {r['scenario']} | {r.get('requests', '-')} "
                f"| {_bytes(r.get('location_bytes', []))} "
                f"| {_bytes(r.get('new_bytes', []))} | {r.get('hook_runs', '-')} "
                f"| {', '.join(r.get('hook_events', [])) or '-'} | {ms} |"
            )
        out.append("")
    if kills:
        out.append("### kill -9 of the harness")
        out.append("")
        out.append("| harness | run | process ended (pidfd) ms | no agent listed ms |")
        out.append("|---|---|---|---|")
        for r in kills:
            out.append(
                f"| {r.get('harness', '-')} | {r.get('kill', '-')} "
                f"| {r.get('exit_ms', '-')} | {r['gone_ms']} |"
            )
        out.append("")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} REPORT.jsonl", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    print(render(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
