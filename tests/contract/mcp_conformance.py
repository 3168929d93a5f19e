"""The official MCP SDK as a client of ``tmuxlocd mcp``: every tool called, each
``structuredContent`` validated against the tool's ``outputSchema``, the bad inputs that once
went through, and (in a pane) a subscription to ``tmux://self/window`` told of a pane's
activity.  Writes its rows, ``{tool, case, expected, got, ok}``, as JSON to ``--out``.

Run in a pane (``--where pane``: the server, spawned by the SDK in a new session, places
itself by its nearest ancestor with a tty) or outside tmux (``--where outside``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import anyio
import jsonschema
from mcp import types as mt
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

REPO = str(Path(__file__).resolve().parents[2])
WINDOW_URI = "tmux://self/window"
ECHO_BOUND = 1000  # what an error may be long at most, whatever its input


class Probe:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rows: list[dict[str, Any]] = []
        self.updates: list[str] = []
        self.updated = anyio.Event()

    def row(self, tool: str, case: str, expected: str, got: str, ok: bool) -> None:
        self.rows.append(
            {"where": self.args.where, "tool": tool, "case": case, "expected": expected,
             "got": got, "ok": ok}
        )  # fmt: skip

    async def on_message(self, message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            self.updates.append(str(message.params.uri))
            self.updated.set()

    def params(self) -> StdioServerParameters:
        env = {
            "TMUXLOCD_SOCKET": self.args.daemon,
            "PYTHONPATH": REPO,
            "TMUX": os.environ.get("TMUX", ""),
            "TMUX_PANE": os.environ.get("TMUX_PANE", ""),
            "TMUX_TMPDIR": os.environ.get("TMUX_TMPDIR", ""),
        }
        return StdioServerParameters(
            command=sys.executable, args=["-m", "tmuxlocd", "mcp"], env=env, cwd=REPO
        )

    async def run(self) -> None:
        async with stdio_client(self.params(), errlog=sys.stderr) as (read, write):  # noqa: SIM117
            async with ClientSession(read, write, message_handler=self.on_message) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                await self.valid_calls(s, tools)
                await self.bad_inputs(s, tools)
                if self.args.where == "pane":
                    await self.activity_update(s)

    async def call(
        self, s: ClientSession, tools: dict[str, mt.Tool], tool: str, case: str,
        arguments: dict[str, Any], *, error: bool,
    ) -> mt.CallToolResult:  # fmt: skip
        result = await s.call_tool(tool, arguments)
        if error:
            text = " ".join(b.text for b in result.content if isinstance(b, mt.TextContent))
            bounded = len(text) <= ECHO_BOUND
            self.row(
                tool,
                case,
                "isError, bounded message",
                f"isError={result.is_error}, {len(text)} chars: {text[:90]!r}",
                bool(result.is_error) and bounded,
            )
            return result
        schema = tools[tool].output_schema
        got = "isError" if result.is_error else "structuredContent"
        ok = not result.is_error and schema is not None
        if ok:
            try:
                jsonschema.validate(result.structured_content, schema)
                got += " valid against outputSchema"
            except jsonschema.ValidationError as exc:
                ok = False
                got += f" INVALID: {exc.message[:120]}"
        self.row(tool, case, "structuredContent valid against outputSchema", got, ok)
        return result

    async def valid_calls(self, s: ClientSession, tools: dict[str, mt.Tool]) -> None:
        inside = self.args.where == "pane"
        for name in sorted(tools):
            self.row(
                name,
                "declares outputSchema",
                "object schema",
                str((tools[name].output_schema or {}).get("type")),
                (tools[name].output_schema or {}).get("type") == "object",
            )
        where = await self.call(s, tools, "where_am_i", "{}", {}, error=False)
        told = (where.structured_content or {}).get("inside_tmux")
        self.row("where_am_i", "inside_tmux", str(inside), str(told), told is inside)
        # Outside a pane there is no self to look around: those calls are errors (bounded).
        for case, args in (
            ("direction=left", {"direction": "left"}),
            (f"direction=below, reference={self.args.other}",
             {"direction": "below", "reference": self.args.other}),
        ):  # fmt: skip
            outside_self = "reference" not in args and not inside
            await self.call(s, tools, "find_adjacent_panes", case, args, error=outside_self)
        for scope in ("window", "session", "server"):
            for detail in ("summary", "full"):
                await self.call(
                    s, tools, "list_panes", f"scope={scope}, detail={detail}",
                    {"scope": scope, "detail": detail}, error=not inside,
                )  # fmt: skip
        await self.call(s, tools, "list_agents", "scope=window", {}, error=not inside)
        await self.call(
            s, tools, "wait_for_pane", f"pane={self.args.other}, until=change, timeout_s=0.2",
            {"pane": self.args.other, "until": "change", "timeout_s": 0.2}, error=False,
        )  # fmt: skip

    async def bad_inputs(self, s: ClientSession, tools: dict[str, mt.Tool]) -> None:
        bad: list[tuple[str, str, dict[str, Any]]] = [
            ("find_adjacent_panes", "misspelt Reference", {"direction": "left", "Reference": "%0"}),
            ("wait_for_pane", "misspelt untill", {"pane": self.args.other, "untill": "busy"}),
            ("wait_for_pane", "9,000-digit pane id", {"pane": "9" * 9000, "timeout_s": 0}),
            ("wait_for_pane", "1 MB pane id", {"pane": "x" * 1_000_000, "timeout_s": 0}),
            ("list_panes", "scope=galaxy", {"scope": "galaxy"}),
            ("where_am_i", "fresh='yes'", {"fresh": "yes"}),
        ]
        for tool, case, arguments in bad:
            result = await self.call(s, tools, tool, case, arguments, error=True)
            if "misspelt" in case:
                text = " ".join(b.text for b in result.content if isinstance(b, mt.TextContent))
                wrong = [k for k in arguments if k not in tools[tool].input_schema["properties"]]
                named = all(repr(k) in text for k in wrong)
                self.row(tool, case + ": names it", f"names {wrong}", str(named), named)
        try:
            await s.call_tool("no_such_tool", {})
            self.row("no_such_tool", "unknown tool", "JSON-RPC -32602", "a result", False)
        except MCPError as exc:
            code = exc.error.code
            self.row(
                "no_such_tool", "unknown tool", "JSON-RPC -32602", f"JSON-RPC {code}",
                code == mt.INVALID_PARAMS,
            )  # fmt: skip

    async def activity_update(self, s: ClientSession) -> None:
        """A pane of this window starts a command: tmux://self/window is told."""
        await s.subscribe_resource(WINDOW_URI)
        before = len(self.updates)
        self.updated = anyio.Event()
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        argv = [self.args.tmux_bin, "-S", self.args.tmux, "send-keys", "-t", self.args.neighbour]
        await anyio.run_process([*argv, "sleep 30", "Enter"], env=env, check=True)
        with anyio.move_on_after(15):
            await self.updated.wait()
        told = len(self.updates) > before
        self.row(
            "resources/subscribe", f"{WINDOW_URI}: {self.args.neighbour} runs sleep",
            "notifications/resources/updated", "updated" if told else "nothing in 15 s", told,
        )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--daemon", required=True)
    parser.add_argument("--tmux", required=True, help="the tmux server's socket")
    parser.add_argument("--tmux-bin", default="tmux")
    parser.add_argument("--where", choices=("pane", "outside"), required=True)
    parser.add_argument("--other", required=True, help="a pane of another session")
    parser.add_argument("--neighbour", default="", help="a pane of the probe's window")
    args = parser.parse_args()
    probe = Probe(args)
    result: dict[str, Any] = {"rows": probe.rows}
    try:
        anyio.run(probe.run)
    except Exception:  # noqa: BLE001 - any failure is the test's to report
        result["error"] = traceback.format_exc()
    tmp = Path(args.out + ".tmp")
    tmp.write_text(json.dumps(result))
    tmp.rename(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
