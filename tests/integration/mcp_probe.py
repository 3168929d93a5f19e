"""An MCP client that runs inside a tmux pane and drives ``tmuxlocd mcp`` through the SDK.

The MCP server must run as this process's child for its identity to be that of an agent in
this pane, so the client side of the tests runs here, and writes what it saw as JSON to
``--out`` (atomically: the test waits for the file).  ``--spawn tty`` starts the server as a
plain child that keeps this pane's controlling tty (as most agent hosts do); ``--spawn setsid``
uses the SDK's stdio client unchanged, which starts it in a new session with no controlling
tty; ``--spawn shared`` starts it as ``setsid`` does, under a process shaped like Codex's shared
app-server (``app-server --listen unix://``); ``--spawn tty,setsid`` runs the scenario once
each way.

Scenarios:
- ``basic``: tools, resources, instructions, every tool's answer and both resources.
- ``subscribe``: subscribes to both resources (2025 protocol: resources/subscribe), then makes
  changes one phase at a time and records which notifications arrived in which phase.
- ``listen``: the same first two phases over the 2026 protocol (subscriptions/listen).
- ``wait``: wait_for_pane on a pane of another session running ``cat``: met (busy, then idle
  when cat ends), timeout, gone (the pane killed while waited on), and a bad ``until``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import types as mt
from mcp.client import stdio as mcp_stdio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.subscriptions import listen

REPO = str(Path(__file__).resolve().parents[2])
SELF_URI = "tmux://self"
WINDOW_URI = "tmux://self/window"
DEADLINE = 15.0


_SDK_SPAWN = mcp_stdio._create_platform_compatible_process
# The arguments of a Python process whose command line is that of Codex's shared app-server
# and which runs the rest of its arguments as a child, on its own stdio.
SHARED_SERVER = [
    "-c",
    "import subprocess, sys; sys.exit(subprocess.call(sys.argv[sys.argv.index('--') + 1 :]))",
    "app-server",
    "--listen",
    "unix://",
    "--",
]


async def _spawn_keeping_tty(
    command: str,
    args: list[str],
    env: dict[str, str] | None = None,
    errlog: Any = sys.stderr,
    cwd: Any = None,
) -> Any:
    """Start a server as a plain child: same session, same controlling tty."""
    return await anyio.open_process(
        [command, *args], env=env, stderr=errlog, cwd=cwd, start_new_session=False
    )


def use_spawn(spawn: str) -> None:
    """``tty``: a plain child (as most agent hosts start servers); ``setsid``: the SDK's own
    way, a new session with no controlling tty."""
    mcp_stdio._create_platform_compatible_process = (
        _spawn_keeping_tty if spawn == "tty" else _SDK_SPAWN
    )


def text_of(result: mt.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, mt.TextContent)]


def resource_text(result: mt.ReadResourceResult) -> str:
    block = result.contents[0]
    assert isinstance(block, mt.TextResourceContents)
    return block.text


class Probe:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.phase = 0
        self.notes: list[dict[str, Any]] = []

    def tmux(self, *argv: str) -> str:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        proc = subprocess.run(
            ["tmux", "-S", self.args.tmux, "-f", os.devnull, *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=20,
            check=True,
        )
        return proc.stdout

    def sync(self) -> None:
        from tmuxlocd.clients.client import Client

        with Client(self.args.daemon) as client:
            client.sync()

    async def on_message(self, message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            self.notes.append(
                {"uri": message.params.uri, "phase": self.phase, "t": time.monotonic()}
            )

    def count(self, uri: str) -> int:
        return sum(1 for n in self.notes if n["uri"] == uri)

    async def until(self, predicate: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; notes {self.notes}")
            await anyio.sleep(0.01)

    def params(self, spawn: str = "tty") -> StdioServerParameters:
        env = {
            "TMUXLOCD_SOCKET": self.args.daemon,
            "PYTHONPATH": REPO,
            # The no-daemon fallback finds tmux through these; hosts pass the environment on.
            "TMUX": os.environ.get("TMUX", ""),
            "TMUX_PANE": os.environ.get("TMUX_PANE", ""),
            "TMUX_TMPDIR": os.environ.get("TMUX_TMPDIR", ""),
        }
        args = ["-m", "tmuxlocd", "mcp"]
        if spawn == "shared":
            args = [*SHARED_SERVER, sys.executable, *args]
        return StdioServerParameters(command=sys.executable, args=args, env=env, cwd=REPO)

    async def run(self) -> dict[str, Any]:
        out: dict[str, Any] = {"pane": os.environ.get("TMUX_PANE"), "runs": {}}
        for spawn in self.args.spawn.split(","):
            use_spawn(spawn)
            out["runs"][spawn] = await self.one(spawn)
        return out

    async def one(self, spawn: str) -> dict[str, Any]:
        t0 = time.monotonic()
        out: dict[str, Any] = {"t": {}}
        # The server's stderr is this probe's, which the test keeps in a file.
        async with stdio_client(self.params(spawn), errlog=sys.stderr) as (read, write):  # noqa: SIM117
            async with ClientSession(read, write, message_handler=self.on_message) as s:
                if self.args.scenario == "listen":
                    await s.discover()
                    out.update(await self.listen_scenario(s))
                    return out
                init = await s.initialize()
                out["t"]["initialized"] = round(time.monotonic() - t0, 3)
                out["protocol"] = init.protocol_version
                out["instructions"] = init.instructions
                caps = init.capabilities.resources
                out["subscribe_capability"] = bool(caps and caps.subscribe)
                if self.args.scenario == "basic":
                    out.update(await self.basic(s))
                elif self.args.scenario == "subscribe":
                    out.update(await self.subscribe_scenario(s))
                elif self.args.scenario == "wait":
                    out.update(await self.wait_scenario(s))
                out["t"]["done"] = round(time.monotonic() - t0, 3)
        return out

    async def basic(self, s: ClientSession) -> dict[str, Any]:
        tools = (await s.list_tools()).tools
        resources = (await s.list_resources()).resources
        calls = {
            "where": ("where_am_i", {}),
            "below": ("find_adjacent_panes", {"direction": "below"}),
            "right": ("find_adjacent_panes", {"direction": "right", "reference": "self"}),
            "window": ("list_panes", {}),
            "session": ("list_panes", {"scope": "session"}),
            "server_full": ("list_panes", {"scope": "server", "detail": "full"}),
            "bad": ("find_adjacent_panes", {"direction": "sideways"}),
        }
        answers: dict[str, Any] = {}
        for key, (name, arguments) in calls.items():
            t0 = time.monotonic()
            result = await s.call_tool(name, arguments)
            answers[key] = {
                "text": text_of(result),
                "is_error": result.is_error,
                "seconds": round(time.monotonic() - t0, 4),
            }
        return {
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.input_schema,
                    "annotations": t.annotations.model_dump(by_alias=True, exclude_none=True)
                    if t.annotations
                    else None,
                }
                for t in tools
            ],
            "resources": [{"uri": str(r.uri), "mime": r.mime_type} for r in resources],
            "answers": answers,
            "read_self": resource_text(await s.read_resource(SELF_URI)),
            "read_window": resource_text(await s.read_resource(WINDOW_URI)),
        }

    async def subscribe_scenario(self, s: ClientSession) -> dict[str, Any]:
        me = os.environ["TMUX_PANE"]
        other = self.tmux("display-message", "-p", "-t", me, "#{pane_id}").strip()
        assert other == me
        below = self.args.below
        with warnings.catch_warnings():
            # resources/subscribe is the 2025 protocol's, which hosts speak today.
            warnings.simplefilter("ignore")
            await s.subscribe_resource(SELF_URI)
            await s.subscribe_resource(WINDOW_URI)
        reads: dict[str, str] = {}

        # 1: a split in an unrelated session: nothing to tell.
        self.phase = 1
        self.tmux("split-window", "-d", "-t", self.args.other, "cat")
        self.sync()
        # 2: a split in this window: both resources change.
        self.phase = 2
        self.tmux("split-window", "-d", "-t", me, "cat")
        self.sync()
        await self.until(
            lambda: self.count(SELF_URI) >= 1 and self.count(WINDOW_URI) >= 1,
            "the split of this window",
        )
        reads["2"] = resource_text(await s.read_resource(SELF_URI))
        # 3: renaming this window changes the text form, not the window's pane summary.
        self.phase = 3
        self.tmux("rename-window", "-t", me, "renamed")
        self.sync()
        await self.until(lambda: self.count(SELF_URI) >= 2, "the rename")
        reads["3"] = resource_text(await s.read_resource(SELF_URI))
        # 4: another pane of this window becomes active: both change.
        self.phase = 4
        self.tmux("select-pane", "-t", below)
        self.sync()
        await self.until(
            lambda: self.count(SELF_URI) >= 3 and self.count(WINDOW_URI) >= 2, "the pane selection"
        )
        reads["4"] = resource_text(await s.read_resource(SELF_URI))
        reads["4w"] = resource_text(await s.read_resource(WINDOW_URI))
        self.phase = 5
        return {"notes": self.notes, "reads": reads}

    def waits(self) -> int:
        from tmuxlocd.clients.client import Client

        with Client(self.args.daemon) as client:
            return client.health().waits

    async def start_cat(self, pane: str) -> None:
        """``cat`` typed, and in front as tmux sees it (not the login shell's profile)."""
        self.tmux("send-keys", "-t", pane, "cat", "Enter")
        fmt = "#{pane_current_command}"
        await self.until(
            lambda: self.tmux("display-message", "-p", "-t", pane, fmt).strip() == "cat",
            "cat in front",
        )

    async def wait_scenario(self, s: ClientSession) -> dict[str, Any]:
        # The server's default shell itself (a command would run under ``sh -c``, whose
        # interactive child shell would keep the terminal in a group of its own).
        pane = self.tmux("split-window", "-d", "-t", self.args.other, "-P", "-F", "#{pane_id}")
        pane = pane.strip()
        await self.start_cat(pane)
        self.sync()
        answers: dict[str, Any] = {"pane": pane}

        async def call(key: str, arguments: dict[str, Any]) -> None:
            result = await s.call_tool("wait_for_pane", arguments)
            answers[key] = {"text": text_of(result), "is_error": result.is_error}

        await call("busy", {"pane": pane, "until": "busy", "timeout_s": DEADLINE})
        await call("timeout", {"pane": pane, "until": "idle", "timeout_s": 0.2})
        await call("bad", {"pane": pane, "until": "soon"})
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "idle", {"pane": pane, "timeout_s": DEADLINE})
            await self.until(lambda: self.waits() >= 1, "the idle wait")
            self.tmux("send-keys", "-t", pane, "C-d")
        await self.start_cat(pane)
        await call("busy_again", {"pane": pane, "until": "busy", "timeout_s": DEADLINE})
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "gone", {"pane": pane, "until": "idle", "timeout_s": DEADLINE})
            await self.until(lambda: self.waits() >= 1, "the wait on the pane to kill")
            self.tmux("kill-pane", "-t", pane)
        return {"answers": answers}

    async def listen_scenario(self, s: ClientSession) -> dict[str, Any]:
        me = os.environ["TMUX_PANE"]
        events: list[dict[str, Any]] = []
        where = await s.call_tool("where_am_i", {})
        below = await s.call_tool("find_adjacent_panes", {"direction": "below"})
        async with listen(s, resource_subscriptions=[SELF_URI, WINDOW_URI]) as sub:
            self.phase = 1
            self.tmux("split-window", "-d", "-t", self.args.other, "cat")
            self.sync()
            self.phase = 2
            self.tmux("split-window", "-d", "-t", me, "cat")
            self.sync()
            seen: set[str] = set()
            with anyio.fail_after(DEADLINE):
                async for event in sub:
                    uri = getattr(event, "uri", None)
                    events.append({"uri": uri, "phase": self.phase})
                    if uri is not None:
                        seen.add(uri)
                    if seen >= {SELF_URI, WINDOW_URI}:
                        break
        return {"where": text_of(where), "below": text_of(below), "events": events}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--daemon", required=True)
    parser.add_argument("--tmux", required=True)
    parser.add_argument("--spawn", default="tty", help="tty, setsid or both: tty,setsid")
    parser.add_argument(
        "--scenario", choices=("basic", "subscribe", "listen", "wait"), default="basic"
    )
    parser.add_argument("--go", help="wait for this file (the grid, as JSON) before starting")
    parser.add_argument("--other", default="", help="a pane of an unrelated session")
    args = parser.parse_args()
    args.below = ""
    out: dict[str, Any]
    try:
        if args.go:
            deadline = time.monotonic() + 60
            while not os.path.exists(args.go):
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{args.go} never appeared")
                time.sleep(0.01)
            with open(args.go) as f:
                args.below = json.load(f)["below"]
        out = anyio.run(Probe(args).run)
    except Exception:  # noqa: BLE001 - any failure is the test's to report
        out = {"error": traceback.format_exc()}
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
