"""How to drive each harness against its stub: install it (pinned), configure a throwaway
HOME for it, start a prompt or a resumed prompt non-interactively, and read its tool calls
and results out of a request.  The scenarios (``test_harnesses.py``) are written once
against this interface."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.e2e import npmcache, stub_anthropic, stub_gemini
from tests.e2e.panes import HarnessRig
from tests.e2e.stub_anthropic import AnthropicStub
from tests.e2e.stub_base import Decide, Recorded, StubServer, Text, ToolCall, Turn


class Driver:
    name: str  # the harness's name for `tmuxlocd install`
    package: str
    version: str
    shell_tool: str

    def __init__(self) -> None:
        self.prefix: Path | None = None

    # -- set-up -----------------------------------------------------------------------------

    def ensure(self) -> None:
        self.prefix = npmcache.ensure(self.package, self.version)

    def setup(self, hrig: HarnessRig) -> None:
        """Configure the HOME, then ``tmuxlocd install`` and its MCP server there."""
        raise NotImplementedError

    def stub(self, decide: Decide) -> StubServer:
        raise NotImplementedError

    def env(self, hrig: HarnessRig, stub: StubServer) -> dict[str, str]:
        raise NotImplementedError

    def argv(self, prompt: str, *, resume: str | None = None) -> list[str]:
        raise NotImplementedError

    def last_session(self, hrig: HarnessRig) -> str:
        """What ``argv(resume=...)`` takes to resume the session last run."""
        raise NotImplementedError

    # The interactive program (its TUI, driven with send-keys).
    quit_command = "/quit"

    def tui_argv(self) -> list[str]:
        raise NotImplementedError

    # The TUI in its default permission mode, where a file edit asks the user first: the
    # tool that writes a file, and the words on the screen while it asks.
    write_tool: str
    asking_words: str
    asking_reason: str  # the agent's reason while it asks

    def asking_tui_argv(self) -> list[str]:
        raise NotImplementedError

    def write_call(self, path: str, content: str) -> ToolCall:
        return ToolCall(self.write_tool, {"file_path": path, "content": content})

    def prepare_tui(self, hrig: HarnessRig) -> None:
        """What the TUI asks once on a new machine, answered in the HOME beforehand."""

    # -- reading requests -------------------------------------------------------------------

    def tool_names(self, body: Any) -> list[str]:
        raise NotImplementedError

    def tool_results(self, body: Any) -> list[str]:
        raise NotImplementedError

    def shell_call(self, command: Sequence[str]) -> ToolCall:
        raise NotImplementedError

    def mcp_decide(self) -> Decide:
        """A model that calls the ``where_am_i`` tool of the MCP server ``tmux`` (by the name
        the harness offers it under), then answers with text."""

        def call(request: Recorded) -> Turn:
            names = [n for n in self.tool_names(request.body) if n.endswith("where_am_i")]
            return ToolCall(names[0], {}) if names else Text("no where_am_i tool offered")

        return self.once_then_text(call)

    def once_then_text(self, call: Callable[[Recorded], Turn]) -> Decide:
        """A model that makes one tool call, and answers with text once the request holds its
        result."""

        def decide(request: Recorded) -> Turn:
            if self.tool_results(request.body):
                return Text("done")
            return call(request)

        return decide


# ----------------------------------------------------------------------------------------------


CLAUDE_KEY = "sk-ant-fake-key-for-a-stub"


class Claude(Driver):
    name = "claude"
    package = "@anthropic-ai/claude-code"
    version = "2.1.332"
    shell_tool = "Bash"

    def binary(self) -> str:
        assert self.prefix is not None
        return str(npmcache.bin_path(self.prefix, ".bin", "claude"))

    def setup(self, hrig: HarnessRig) -> None:
        steps = hrig.install(self.name, hrig.home / ".claude" / "settings.json")
        # Claude Code keeps user MCP servers in ~/.claude.json, which it rewrites itself:
        # install prints the `claude mcp add` line to run instead of editing it.
        (line,) = [s for s in steps if "claude mcp add" in s]
        argv = shlex.split(line[line.index("claude mcp add") :])
        proc = hrig.run_outside([self.binary(), *argv[1:]], timeout=120)
        assert proc.rc == 0, proc.out + proc.err

    def stub(self, decide: Decide) -> StubServer:
        return AnthropicStub(decide)

    def env(self, hrig: HarnessRig, stub: StubServer) -> dict[str, str]:
        return hrig.env(
            ANTHROPIC_BASE_URL=stub.url,
            ANTHROPIC_API_KEY=CLAUDE_KEY,
            DISABLE_AUTOUPDATER="1",
            DISABLE_TELEMETRY="1",
            DISABLE_ERROR_REPORTING="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )

    def argv(self, prompt: str, *, resume: str | None = None) -> list[str]:
        # The prompt before --allowedTools: that option takes every word after it.
        again = ["--resume", resume] if resume else []
        return [self.binary(), "-p", prompt, *again, "--allowedTools", "Bash", "mcp__tmux"]

    quit_command = "/exit"

    def tui_argv(self) -> list[str]:
        return [self.binary(), "--allowedTools", "Bash", "mcp__tmux"]

    write_tool = "Write"
    asking_words = "Do you want to create"
    asking_reason = "permission: Write"  # its PermissionRequest's tool_name

    def asking_tui_argv(self) -> list[str]:
        return [self.binary(), "--permission-mode", "default"]

    def prepare_tui(self, hrig: HarnessRig) -> None:
        # ~/.claude.json (written by `claude mcp add` in setup): onboarding done, the API key
        # approved (by its last 20 characters), the folder trusted.
        path = hrig.home / ".claude.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data["hasCompletedOnboarding"] = True
        data["customApiKeyResponses"] = {"approved": [CLAUDE_KEY[-20:]], "rejected": []}
        data.setdefault("projects", {}).setdefault(str(hrig.work), {})["hasTrustDialogAccepted"] = (
            True
        )
        path.write_text(json.dumps(data, indent=2))

    def last_session(self, hrig: HarnessRig) -> str:
        files = sorted(
            (hrig.home / ".claude" / "projects").rglob("*.jsonl"), key=lambda p: p.stat().st_mtime
        )
        assert files, "no Claude Code session file"
        return files[-1].stem

    def tool_names(self, body: Any) -> list[str]:
        return stub_anthropic.tool_names(body)

    def tool_results(self, body: Any) -> list[str]:
        return stub_anthropic.tool_results(body)

    def mcp_decide(self) -> Decide:
        # Claude Code 2.1.332 defers MCP tools: their names are listed in the system prompt
        # and a model loads a schema with ToolSearch ("select:<name>") before calling it.
        name = "mcp__tmux__where_am_i"

        def decide(request: Recorded) -> Turn:
            used = stub_anthropic.tool_uses(request.body)
            if name in used:
                return Text("done")
            if name in self.tool_names(request.body) or "ToolSearch" in used:
                return ToolCall(name, {})
            if "ToolSearch" in self.tool_names(request.body):
                return ToolCall("ToolSearch", {"query": f"select:{name}"})
            return Text("no ToolSearch and no where_am_i offered")

        return decide

    def shell_call(self, command: Sequence[str]) -> ToolCall:
        return ToolCall("Bash", {"command": shlex.join(command), "description": "split"})


class Gemini(Driver):
    name = "gemini"
    package = "@google/gemini-cli"
    version = "0.61.0"
    shell_tool = "run_shell_command"

    def binary(self) -> str:
        assert self.prefix is not None
        return str(npmcache.bin_path(self.prefix, ".bin", "gemini"))

    def setup(self, hrig: HarnessRig) -> None:
        gemini = hrig.home / ".gemini"
        gemini.mkdir(parents=True, exist_ok=True)
        settings = gemini / "settings.json"
        settings.write_text(
            json.dumps(
                {
                    "security": {
                        "auth": {"selectedType": "gemini-api-key"},
                        "folderTrust": {"enabled": True},
                    },
                    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                    "privacy": {"usageStatisticsEnabled": False},
                    "telemetry": {"enabled": False},
                },
                indent=2,
            )
        )
        (gemini / "trustedFolders.json").write_text(
            json.dumps({str(hrig.work): "TRUST_FOLDER"}, indent=2)
        )
        hrig.install(self.name, settings)  # hooks and the MCP server, in the same file

    def stub(self, decide: Decide) -> StubServer:
        return stub_gemini.GeminiStub(decide)

    def env(self, hrig: HarnessRig, stub: StubServer) -> dict[str, str]:
        return hrig.env(GEMINI_API_KEY="fake", GOOGLE_GEMINI_BASE_URL=stub.url)

    def argv(self, prompt: str, *, resume: str | None = None) -> list[str]:
        again = ["--resume", resume] if resume else []
        return [self.binary(), *again, "--approval-mode", "yolo", "-p", prompt]

    def tui_argv(self) -> list[str]:
        return [self.binary(), "--approval-mode", "yolo"]

    write_tool = "write_file"
    asking_words = "Allow once"
    # Its ToolPermission Notification: the confirmation's type, no tool name for an edit.
    asking_reason = "permission: edit"

    def asking_tui_argv(self) -> list[str]:
        return [self.binary(), "--approval-mode", "default"]

    def last_session(self, hrig: HarnessRig) -> str:
        return "latest"  # the HOME is this test's: its latest session is the one just run

    def tool_names(self, body: Any) -> list[str]:
        return stub_gemini.tool_names(body)

    def tool_results(self, body: Any) -> list[str]:
        return stub_gemini.function_responses(body)

    def shell_call(self, command: Sequence[str]) -> ToolCall:
        return ToolCall(
            "run_shell_command", {"command": shlex.join(command), "description": "split"}
        )


DRIVERS: dict[str, Callable[[], Driver]] = {"claude": Claude, "gemini": Gemini}
