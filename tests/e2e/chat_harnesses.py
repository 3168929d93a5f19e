"""Copilot CLI, Qwen Code and opencode (pinned) against the chat-completions stub
(``stub_chat``): how to set each up in a throwaway HOME and run it non-interactively, and
the scenarios ``test_copilot.py``, ``test_qwen.py`` and ``test_opencode.py`` run.

Each is configured as a user would: ``tmuxlocd install <harness>`` writes its hooks (or, for
opencode, its plugin); the provider settings point the harness at the stub.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import socket
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import npmcache
from tests.e2e.panes import HarnessRig, Run, report, wrap_plugin
from tests.e2e.stub_base import (
    Block,
    Recorded,
    Text,
    ToolCall,
    Turn,
    location_blocks,
    location_bytes,
    new_blocks,
)
from tests.e2e.stub_chat import (
    MODEL,
    ChatStub,
    messages,
    system_text,
    tool_names,
    tool_results,
)
from tests.tmuxtest import poll


class ChatHarness:
    name: str
    package: str
    version: str
    told_at_start = True  # the first request's block is a session start's (no turn label)

    def __init__(self, hrig: HarnessRig, stub: ChatStub) -> None:
        self.hrig = hrig
        self.stub = stub
        self.prefix = npmcache.ensure(self.package, self.version)

    def binary(self) -> str:
        raise NotImplementedError

    def configure(self) -> None:
        """Provider settings in the HOME, before ``install`` (which keeps them)."""

    def env(self) -> dict[str, str]:
        return self.hrig.env()

    def argv(self, prompt: str, *, again: bool) -> list[str]:
        raise NotImplementedError

    def plugin(self) -> Path | None:
        """The file ``install`` writes whose hook command is timed (``panes.wrap_plugin``),
        for the harnesses whose tests report hook times; None: not timed."""
        return None

    def setup(self) -> list[str]:
        self.configure()
        steps = self.hrig.install(self.name)
        plugin = self.plugin()
        if plugin is not None:
            wrap_plugin(plugin, self.hrig.hook_log)
        return steps

    def record(self, scenario: str, requests: list[Recorded], **notes: Any) -> None:
        """One row of the e2e report (``tests/e2e/report.py``): the location bytes of each of
        the session's model requests, those each added, the hook runs and their times."""
        hooks = self.hrig.hook_runs()
        ms = [h.ms for h in hooks]
        prev: Any = None
        added = []
        for q in requests:
            added.append(sum(len(b.text.encode()) for b in new_blocks(prev, q.body)))
            prev = q.body
        report(
            {
                "harness": self.name,
                "package": self.package,
                "version": self.version,
                "scenario": scenario,
                "models": sorted(self.stub.models()),
                "requests": len(requests),
                "location_bytes": [location_bytes(q.body) for q in requests],
                "new_bytes": added,
                "hook_runs": len(hooks),
                "hook_events": sorted({h.event for h in hooks}),
                "hook_ms_median": round(statistics.median(ms), 1) if ms else None,
                "hook_ms_max": round(max(ms), 1) if ms else None,
                **notes,
            }
        )

    # The interactive program (its TUI, driven with send-keys): what its screen shows when it
    # is ready for a prompt and when it asks to run a shell command, and how it quits.
    ready_text = ""
    dialog_text = ""
    denied_text = ""  # shown once a denied turn is over ("": nothing to wait for)
    quit_command = "/quit"

    def tui_argv(self) -> list[str]:
        raise NotImplementedError

    def tui_started(self, pane: str) -> None:
        """Answer what the TUI asks before its prompt (a new HOME), then wait for it."""
        self.hrig.wait_screen(pane, self.ready_text)

    def prompt(self, text: str, *, again: bool = False) -> tuple[Run, list[Recorded]]:
        before = len(self.stub.model_requests())
        run = self.hrig.run_in_pane(self.hrig.first_pane, self.argv(text, again=again), self.env())
        assert not self.stub.errors, self.stub.errors
        assert run.rc == 0, f"exit {run.rc}\n{run.out[-2000:]}\n{run.err[-4000:]}"
        # The session's own requests: those carrying the prompt, and not a title's (a
        # harness's side requests, such as Qwen Code's memory extraction, carry neither the
        # conversation nor its context).
        requests = [
            q
            for q in self.stub.model_requests()[before:]
            if not title(q) and text in json.dumps(q.body, ensure_ascii=False)
        ]
        assert requests, f"no model request\n{run.err[-2000:]}"
        return run, requests


# The system prompts of a harness's side requests, which are no turn of the session:
# opencode's title generation, Qwen Code's memory extraction (0.24.4).
SIDE_REQUESTS = ("You are a title generator", "You are now acting as the managed memory")


def title(request: Recorded) -> bool:
    """A side request (``SIDE_REQUESTS``): not the session's."""
    return system_text(request.body).startswith(SIDE_REQUESTS)


class Copilot(ChatHarness):
    name = "copilot"
    package = "@github/copilot"
    version = "1.0.102"
    told_at_start = False  # no sessionStart hook: the first prompt's tells it

    def binary(self) -> str:
        # The npm loader only finds and runs the native binary of the platform package.
        found = sorted(self.prefix.glob("node_modules/@github/copilot-linux-*/copilot"))
        if not found:
            pytest.skip(f"{self.package}@{self.version}: no native binary for this platform")
        return str(found[0])

    def env(self) -> dict[str, str]:
        return self.hrig.env(
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_BASE_URL=self.stub.url + "/v1",
            COPILOT_PROVIDER_API_KEY="stub-key",
            COPILOT_MODEL=MODEL,
            COPILOT_AUTO_UPDATE="false",
        )

    def argv(self, prompt: str, *, again: bool) -> list[str]:
        return [
            self.binary(),
            *(["--continue"] if again else []),
            "-p",
            prompt,
            # Every tool and path without asking (the split names the private tmux socket,
            # outside the working directory).
            "--allow-all",
        ]

    ready_text = "/ commands"
    dialog_text = "Do you want to run this command?"
    # Typed before this, the quit command is queued behind the turn, and never runs.
    denied_text = "Operation cancelled by user"
    quit_command = "/exit"

    def tui_argv(self) -> list[str]:
        return [self.binary()]

    def tui_started(self, pane: str) -> None:
        self.hrig.wait_screen(pane, "Do you trust the files in this folder?")
        self.hrig.send_keys(pane, "Enter")  # 1. Yes
        super().tui_started(pane)


class Qwen(ChatHarness):
    name = "qwen"
    package = "@qwen-code/qwen-code"
    version = "0.24.4"

    def binary(self) -> str:
        return str(npmcache.bin_path(self.prefix, ".bin", "qwen"))

    def configure(self) -> None:
        path = self.hrig.home / ".qwen" / "settings.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        settings = {"security": {"auth": {"selectedType": "openai"}}, "model": {"name": MODEL}}
        path.write_text(json.dumps(settings, indent=2) + "\n")

    def env(self) -> dict[str, str]:
        return self.hrig.env(
            OPENAI_BASE_URL=self.stub.url + "/v1", OPENAI_API_KEY="stub-key", OPENAI_MODEL=MODEL
        )

    def argv(self, prompt: str, *, again: bool) -> list[str]:
        return [self.binary(), *(["--continue"] if again else []), "-p", prompt, "--yolo"]

    ready_text = "Type your message"
    dialog_text = "Allow execution of"

    def tui_argv(self) -> list[str]:
        # Its default mode is ``auto`` (a model classifies each call): ask the user instead.
        return [self.binary(), "--approval-mode", "default"]


class Opencode(ChatHarness):
    name = "opencode"
    package = "opencode-ai"
    version = "1.18.33"

    def binary(self) -> str:
        return str(npmcache.bin_path(self.prefix, ".bin", "opencode"))

    def configure(self) -> None:
        config_home = Path(self.hrig.env()["XDG_CONFIG_HOME"])
        path = config_home / "opencode" / "opencode.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "stub",
            "options": {"baseURL": self.stub.url + "/v1", "apiKey": "stub-key"},
            "models": {MODEL: {"name": "stub"}},
        }
        config: dict[str, Any] = {
            "model": f"stub/{MODEL}",
            "small_model": f"stub/{MODEL}",
            "autoupdate": False,
            "share": "disabled",
            "provider": {"stub": provider},
        }
        path.write_text(json.dumps(config, indent=2) + "\n")

    def env(self) -> dict[str, str]:
        return self.hrig.env(OPENCODE_DISABLE_AUTOUPDATE="1")

    def argv(self, prompt: str, *, again: bool) -> list[str]:
        return [self.binary(), "run", *(["-c"] if again else []), prompt]


class Pi(ChatHarness):
    name = "pi"
    package = "@mariozechner/pi-coding-agent"
    version = "0.73.1"
    told_at_start = False  # pi cannot add to a history before a prompt: the first tells it

    def plugin(self) -> Path:
        return self.hrig.home / ".pi" / "agent" / "extensions" / "tmuxlocd.js"

    def binary(self) -> str:
        return str(npmcache.bin_path(self.prefix, ".bin", "pi"))

    def configure(self) -> None:
        agent = self.hrig.home / ".pi" / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        provider = {
            "baseUrl": self.stub.url + "/v1",
            "api": "openai-completions",
            "apiKey": "stub-key",
            "models": [{"id": MODEL, "name": "stub"}],
        }
        (agent / "models.json").write_text(json.dumps({"providers": {"stub": provider}}) + "\n")
        settings = {"defaultProvider": "stub", "defaultModel": MODEL}
        (agent / "settings.json").write_text(json.dumps(settings) + "\n")

    def env(self) -> dict[str, str]:
        # No version check nor install ping to pi.dev.
        return self.hrig.env(PI_OFFLINE="1")

    def argv(self, prompt: str, *, again: bool) -> list[str]:
        return [self.binary(), "-p", *(["--continue"] if again else []), prompt]

    ready_text = "stub-model"
    quit_command = "/quit"

    def tui_argv(self) -> list[str]:
        return [self.binary()]


class Cline(ChatHarness):
    name = "cline"
    package = "cline"
    version = "3.0.65"
    told_at_start = False  # a task's first prompt tells it (beforeRun)

    def plugin(self) -> Path:
        return self.hrig.home / ".cline" / "plugins" / "tmuxlocd.js"

    def __init__(self, hrig: HarnessRig, stub: ChatStub) -> None:
        super().__init__(hrig, stub)
        # Cline's TUI starts its hub even with the local backend (seen with 3.0.65), on one
        # port per machine by default: this test's own, and ended with the test.
        self.hub_port = free_port()
        hrig.cleanups.append(self.end_hubs)

    def hubs(self) -> list[int]:
        """The pids of the Cline hubs started with this test's HOME (no one else's)."""
        found = []
        home = f"HOME={self.hrig.home}".encode()
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as f:
                    args = f.read().split(b"\0")
                with open(f"/proc/{name}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if b"--cline-hub-daemon" in args and home in env:
                found.append(int(name))
        return found

    def end_hubs(self) -> None:
        for pid in self.hubs():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        poll(lambda: not self.hubs(), 20, "this test's Cline hubs ended")

    def binary(self) -> str:
        # The npm wrapper (node) runs the platform binary; a local install's .bin links the
        # binary itself, so run the wrapper as `npm i -g` would.
        return str(npmcache.bin_path(self.prefix, "cline", "bin", "cline"))

    def configure(self) -> None:
        settings = self.hrig.home / ".cline" / "data" / "settings"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "global-settings.json").write_text(
            json.dumps({"telemetryOptOut": True, "autoUpdateEnabled": False}) + "\n"
        )
        proc = self.hrig.run_outside(
            [
                self.binary(),
                "auth",
                "-p",
                "openai",
                "-k",
                "stub-key",
                "-m",
                MODEL,
                "-b",
                self.stub.url + "/v1",
            ],
            self.env(),
            timeout=120,
        )
        assert proc.rc == 0, proc.out + proc.err

    def env(self) -> dict[str, str]:
        return self.hrig.env(
            CLINE_NO_AUTO_UPDATE="1",
            # Turns off the feature-flag poll (a DNS lookup of data.cline.bot).
            E2E_TEST="true",
            # Each session in its own CLI, on its pane's tty (no hub left behind); a test of
            # the hub sets it otherwise, with a port of its own.
            CLINE_SESSION_BACKEND_MODE="local",
            # Cline gives a plugin's import 4 s by default: a loaded machine must not leave
            # the plugin out of a run.
            CLINE_PLUGIN_IMPORT_TIMEOUT_MS="30000",
            CLINE_HUB_PORT=str(self.hub_port),
        )

    def argv(self, prompt: str, *, again: bool) -> list[str]:
        session = self.last_session() if again else ""
        return [self.binary(), *(["--id", session] if session else []), prompt]

    def last_session(self) -> str:
        """The id of the newest session Cline keeps (its sessions directory's newest)."""
        root = self.hrig.home / ".cline" / "data" / "sessions"
        found = sorted(root.iterdir(), key=lambda p: p.stat().st_mtime) if root.is_dir() else []
        assert found, f"no session under {root}"
        return found[-1].name.removesuffix(".json")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def stub() -> Iterator[ChatStub]:
    s = ChatStub()
    s.start()
    try:
        yield s
    finally:
        s.stop()
    assert s.errors == []


def only_block(body: Any, pane: str, why: str) -> Block:
    blocks = location_blocks(body)
    assert len(blocks) == 1, f"{len(blocks)} location blocks: {blocks}\n{why}"
    assert blocks[0].pane == pane, f"{blocks[0].text}\n{why}"
    return blocks[0]


def first_prompt_then_again(harness: ChatHarness) -> list[Recorded]:
    """The first prompt's every request holds the location once, naming the harness's pane
    (told at the session's start, or by the first prompt); the same session continued with
    an unchanged location adds no copy."""
    hrig = harness.hrig
    hrig.start_daemon()
    harness.setup()
    pane = hrig.first_pane
    _, first = harness.prompt("first prompt")
    block = only_block(first[0].body, pane, hrig.diagnostics())
    assert block.turn == (None if harness.told_at_start else 1)
    for q in first[1:]:
        only_block(q.body, pane, hrig.diagnostics())
    _, second = harness.prompt("second prompt", again=True)
    for q in second:
        only_block(q.body, pane, hrig.diagnostics())
    added = new_blocks(first[-1].body, second[0].body)
    assert added == [], f"{added}\n{hrig.diagnostics()}"
    return first + second


SHELL_TOOLS = {
    "copilot": "bash",
    "qwen": "run_shell_command",
    "opencode": "bash",
    "pi": "bash",
    "cline": "run_commands",
}


def neighbour(block: Block, direction: str) -> str:
    m = re.search(rf"{direction} ([^;]+)", block.neighbors)
    return m.group(1).strip() if m else ""


def tool_call_splits_the_pane(harness: ChatHarness) -> list[Recorded]:
    """The model's shell call splits the harness's pane from inside it: the request that
    carries the call's result carries the changed location once more (the after-tool hook),
    naming the new neighbour."""
    hrig = harness.hrig
    hrig.start_daemon()
    harness.setup()
    pane = hrig.first_pane
    split = shlex.join(hrig.tmux_argv("split-window", "-d", "-h", "-t", pane))
    shell = SHELL_TOOLS[harness.name]

    def decide(request: Recorded) -> Turn:
        if tool_results(request.body) or shell not in tool_names(request.body):
            return Text("done")
        return ToolCall(shell, {"command": split, "description": "split the pane"})

    harness.stub.decide = decide
    _, requests = harness.prompt("split my pane")
    results = [r for q in requests for r in tool_results(q.body)]
    created = set(hrig.panes()) - {pane}
    assert len(created) == 1, f"the shell call did not split the pane: {results}"
    (new,) = created
    first = only_block(requests[0].body, pane, hrig.diagnostics())
    assert neighbour(first, "right") == "none"
    after = [q for q in requests if tool_results(q.body)]
    assert after, f"no request carried the tool's result\n{hrig.diagnostics()}"
    added = new_blocks(requests[0].body, after[0].body)
    assert len(added) == 1, f"{added}\n{hrig.diagnostics()}"
    assert added[0].pane == pane and added[0].turn is not None
    assert neighbour(added[0], "right") == new, f"{added[0].text}\n{hrig.diagnostics()}"
    return requests


def split_from_outside(harness: ChatHarness) -> list[Recorded]:
    """A split from outside between two prompts of one session: the second prompt's request
    adds one block (turn 2), naming the new neighbour; the first's copy stays."""
    hrig = harness.hrig
    hrig.start_daemon()
    harness.setup()
    pane = hrig.first_pane
    _, first = harness.prompt("first prompt")
    only_block(first[0].body, pane, hrig.diagnostics())
    new = hrig.split(pane)
    _, second = harness.prompt("second prompt", again=True)
    added = new_blocks(first[-1].body, second[0].body)
    assert len(added) == 1, f"{added}\n{hrig.diagnostics()}"
    assert added[0].pane == pane and added[0].turn == 2, added[0].text
    assert neighbour(added[0], "right") == new, f"{added[0].text}\n{hrig.diagnostics()}"
    for q in second[1:]:
        assert new_blocks(second[0].body, q.body) == [], hrig.diagnostics()
    return first + second


def unchanged_tool_call(harness: ChatHarness) -> list[Recorded]:
    """A shell call that changes nothing: the request carrying its result adds no block (the
    after-tool event ran, and found the location unchanged)."""
    hrig = harness.hrig
    hrig.start_daemon()
    harness.setup()
    pane = hrig.first_pane
    shell = SHELL_TOOLS[harness.name]

    def decide(request: Recorded) -> Turn:
        if tool_results(request.body) or shell not in tool_names(request.body):
            return Text("done")
        return ToolCall(shell, {"command": "true", "description": "nothing"})

    harness.stub.decide = decide
    _, requests = harness.prompt("run true")
    after = [q for q in requests if tool_results(q.body)]
    assert after, f"no request carried the tool's result\n{hrig.diagnostics()}"
    for q in requests:
        only_block(q.body, pane, hrig.diagnostics())
    assert new_blocks(requests[0].body, after[0].body) == [], hrig.diagnostics()
    tools = [h for h in hrig.hook_runs() if h.event == "PostToolUse"]
    assert tools and all(h.out_bytes == 0 for h in tools), hrig.diagnostics()
    return requests


# ----------------------------------------------------------------------------------------------
# Agent state (SPEC §13) with the real programs.


def agent_working_then_gone(
    harness: ChatHarness, while_working: Callable[[], None] | None = None
) -> None:
    """A non-interactive run: while the model is asked (after the prompt's hook) the daemon
    lists one agent of this harness, in the pane, ``working``; once the process exited
    (its session-end hook, or its exit) there is none."""
    hrig = harness.hrig
    hrig.start_daemon()
    harness.setup()
    pane = hrig.first_pane
    seen: list[list[dict[str, Any]]] = []

    def decide(request: Recorded) -> Turn:
        if not title(request):
            # The answer waits until the daemon lists the agent: no race with the exit.
            poll(lambda: bool(hrig.agents()), 20, "the agent while it runs", interval=0.05)
            seen.append(hrig.agents())
            if while_working is not None:
                while_working()
        return Text("done")

    harness.stub.decide = decide
    harness.prompt("a prompt")
    assert seen, hrig.diagnostics()
    (agent,) = seen[0]
    assert agent["harness"] == harness.name and agent["pane"] == pane, agent
    assert agent["state"] == "working", agent
    assert agent["reason"] is None, agent
    poll(lambda: hrig.agents() == [], 20, "the agent gone after the exit", interval=0.05)


def killed_agent_goes(harness: ChatHarness) -> float:
    """``kill -9`` of the harness process (the agent's ``pid``) in the middle of a turn: no
    hook runs, and the daemon's pidfd ends the agent.  Returns the seconds from the kill to
    the daemon listing no agent (polled every 10 ms)."""
    hrig = harness.hrig
    hrig.start_daemon()
    harness.setup()
    pane = hrig.first_pane
    release = threading.Event()

    def decide(request: Recorded) -> Turn:
        if not title(request):
            release.wait(60)  # hold the turn open until the process is killed
        return Text("done")

    harness.stub.decide = decide
    tag = hrig.start_in_pane(pane, harness.argv("a prompt", again=False), harness.env())
    try:
        poll(
            lambda: [a["state"] for a in hrig.agents()] == ["working"],
            60,
            "a working agent",
            interval=0.05,
        )
        (agent,) = hrig.agents()
        assert agent["pane"] == pane, agent
        pid = int(agent["pid"])
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        poll(lambda: hrig.agents() == [], 10, "the agent gone after kill -9", interval=0.01)
        took = time.monotonic() - killed
    finally:
        release.set()
    hrig.wait(tag, 60)
    return took


def working_at_result(hrig: HarnessRig, seen: list[dict[str, Any]], what: str) -> Turn:
    """The model's answer to a request that carries a tool's result: once the daemon lists
    one agent, ``working`` (kept in ``seen``), the turn's last words."""
    poll(
        lambda: [a["state"] for a in hrig.agents()] == ["working"],
        20,
        f"a working agent when {what} goes to the model",
        interval=0.05,
    )
    seen.extend(hrig.agents())
    return Text("done")


def tui_permission_approved_then_denied(
    harness: ChatHarness, reason: str, after_denial: str
) -> dict[str, Any]:
    """The TUI, in a pane: a prompt whose shell call asks permission is ``waiting`` with
    ``reason`` while the dialog is shown; approved, it is ``working`` when the tool's result
    goes to the model and ``idle`` after the turn.  Another such prompt, denied: the agent is
    then ``after_denial`` (no hook runs after a denial in some harnesses).  Quitting leaves
    no agent.  Returns the states seen, for the report."""
    hrig = harness.hrig
    hrig.start_daemon()
    harness.setup()
    pane = hrig.first_pane
    marker = hrig.root / "marker"
    shell = SHELL_TOOLS[harness.name]
    at_result: list[dict[str, Any]] = []

    def decide(request: Recorded) -> Turn:
        if title(request):
            return Text("ok")
        last = messages(request.body)[-1] if messages(request.body) else {}
        if last.get("role") == "tool":
            # The tool's after-event (or the next prompt's) ran before this request.
            return working_at_result(hrig, at_result, "the tool's result")
        if last.get("role") == "user" and shell in tool_names(request.body):
            return ToolCall(shell, {"command": f"touch {marker}", "description": "touch"})
        return Text("done")

    harness.stub.decide = decide

    def states() -> list[tuple[str, str | None]]:
        return [(a["state"], a["reason"]) for a in hrig.agents()]

    def until(want: list[tuple[str, str | None]], what: str) -> None:
        try:
            poll(lambda: states() == want, 30, what, interval=0.05)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {hrig.agents()}\n{hrig.screen(pane)}") from None

    def ask(text: str) -> None:
        hrig.send_keys(pane, "-l", text)
        hrig.wait_screen(pane, text)
        hrig.send_keys(pane, "Enter")
        hrig.wait_screen(pane, harness.dialog_text)

    tag = hrig.start_in_pane(pane, harness.tui_argv(), harness.env(), interactive=True)
    harness.tui_started(pane)
    ask("please touch the marker")
    until([("waiting", reason)], "the agent waiting while the dialog is shown")
    (waiting,) = hrig.agents()
    assert waiting["pane"] == pane and waiting["harness"] == harness.name, waiting
    hrig.send_keys(pane, "Enter")  # 1. Yes (once)
    until([("idle", None)], "the agent idle after the approved turn")
    assert marker.exists()
    assert [a["state"] for a in at_result] == ["working"], at_result
    assert hrig.agents()[0]["session_id"] == waiting["session_id"]

    marker.unlink()
    ask("please touch it again")
    until([("waiting", reason)], "the agent waiting on the second dialog")
    hrig.send_keys(pane, "Escape")  # denied
    poll(lambda: harness.dialog_text not in hrig.screen(pane), 30, "the dialog closed")
    if harness.denied_text:
        hrig.wait_screen(pane, harness.denied_text)
    want = [(after_denial, reason if after_denial == "waiting" else None)]
    until(want, f"the agent {after_denial} after the denial")
    assert not marker.exists()

    quit_tui(harness, tag)
    return waiting


# The model's question, in each harness's question tool (Copilot CLI's ``ask_user``, Qwen
# Code's ``ask_user_question``): "Which colour?", red or blue.
QUESTIONS: dict[str, ToolCall] = {
    "copilot": ToolCall(
        "ask_user",
        {
            "message": "Which colour?",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "colour": {"type": "string", "title": "Colour", "enum": ["red", "blue"]}
                },
                "required": ["colour"],
            },
        },
    ),
    "qwen": ToolCall(
        "ask_user_question",
        {
            "questions": [
                {
                    "question": "Which colour?",
                    "header": "Colour",
                    "options": [
                        {"label": "red", "description": "red"},
                        {"label": "blue", "description": "blue"},
                    ],
                    "multiSelect": False,
                }
            ]
        },
    ),
}


def tui_question(harness: ChatHarness) -> None:
    """The TUI: the model's question (``QUESTIONS``) makes the agent ``waiting``,
    ``question`` (Copilot CLI: its ``notification`` ``elicitation_dialog``; Qwen Code: the
    ``PermissionRequest`` of ``ask_user_question``); answered, it is ``working`` when the
    answer goes to the model and ``idle`` after the turn; quitting leaves no agent."""
    hrig = harness.hrig
    hrig.start_daemon()
    harness.setup()
    pane = hrig.first_pane
    at_result: list[dict[str, Any]] = []
    question = QUESTIONS[harness.name]

    def decide(request: Recorded) -> Turn:
        if title(request):
            return Text("ok")
        last = messages(request.body)[-1] if messages(request.body) else {}
        if last.get("role") == "tool":
            return working_at_result(hrig, at_result, "the answer")
        if last.get("role") == "user" and question.name in tool_names(request.body):
            return question
        return Text("done")

    harness.stub.decide = decide

    def until(want: list[tuple[str, str | None]], what: str) -> None:
        try:
            poll(
                lambda: [(a["state"], a["reason"]) for a in hrig.agents()] == want,
                30,
                what,
                interval=0.05,
            )
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {hrig.agents()}\n{hrig.screen(pane)}") from None

    tag = hrig.start_in_pane(pane, harness.tui_argv(), harness.env(), interactive=True)
    harness.tui_started(pane)
    hrig.send_keys(pane, "-l", "ask me a question")
    hrig.wait_screen(pane, "ask me a question")
    hrig.send_keys(pane, "Enter")
    hrig.wait_screen(pane, "Which colour?")
    until([("waiting", "question")], "the agent waiting on the question")
    # The dialog's last choice drawn: its keys are read (an Enter sent while the question's
    # text alone was drawn was lost, once in about 40 runs).
    hrig.wait_screen(pane, "blue")
    hrig.send_keys(pane, "Enter")  # red
    until([("idle", None)], "the agent idle after the answered turn")
    assert [a["state"] for a in at_result] == ["working"], at_result
    quit_tui(harness, tag)


def quit_tui(harness: ChatHarness, tag: str) -> None:
    """Type the TUI's quit command (an Enter can land on the command's completion menu,
    which then completes instead of running it: Enter again until the program exits); then
    no agent is left."""
    hrig = harness.hrig
    pane = hrig.first_pane
    hrig.send_keys(pane, "-l", harness.quit_command)
    hrig.wait_screen(pane, harness.quit_command)
    for _ in range(4):
        hrig.send_keys(pane, "Enter")
        try:
            hrig.wait(tag, 15)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError(f"the TUI did not quit; its screen:\n{hrig.screen(pane)}")
    poll(lambda: hrig.agents() == [], 20, "no agent after quitting", interval=0.05)
