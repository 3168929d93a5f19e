"""``tmuxlocd context <harness>`` driven exactly as each harness drives it.

An "agent" is a pane of a private tmux server running a small job loop; each hook is a child
of that loop (as a harness's hooks are children of the agent), with the event JSON of that
harness on its stdin.  Every answer is checked against the harness's documented hook output
contract (docs/harnesses.md), with the daemon up, down and dead.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemontest import REPO, SCRIPT, Daemon, Rig, private_rig
from tests.tmuxtest import TMUX, poll
from tmuxlocd.clients.context import transcript_writers
from tmuxlocd.clients.install import this_hook

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]

HARNESSES = ("claude", "codex", "gemini")
PROMPT = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
AFTER_TOOL = {"claude": "PostToolUse", "codex": "PostToolUse", "gemini": "AfterTool"}


# ----------------------------------------------------------------------------------------------
# Each harness's events, with the fields its documentation (or schema) gives them.


def event(harness: str, name: str, session: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "session_id": session,
        "transcript_path": f"/tmp/transcripts/{session}.jsonl",
        "cwd": REPO,
        "hook_event_name": name,
    }
    if harness == "codex":
        base.update(model="gpt-5-codex", permission_mode="default")
        if name != "SessionStart":
            base["turn_id"] = f"turn-{time.monotonic_ns()}"
    if harness == "gemini":
        base["timestamp"] = "2026-12-01T10:00:00.000Z"
    base.update(extra)
    return base


def start(harness: str, session: str, source: str = "startup") -> dict[str, Any]:
    return event(harness, "SessionStart", session, source=source)


def prompt(harness: str, session: str, text: str = "which pane is below me?") -> dict[str, Any]:
    return event(harness, PROMPT[harness], session, prompt=text)


TOOL_COMMAND = "tmux break-pane"  # tmux: the command a hook reports, never run


def after_tool(harness: str, session: str, command: str = TOOL_COMMAND) -> dict[str, Any]:
    tool = {"claude": "Bash", "codex": "Bash", "gemini": "run_shell_command"}[harness]
    response: Any = {"stdout": "", "stderr": "", "interrupted": False}
    if harness == "gemini":
        response = {"llmContent": "", "returnDisplay": ""}
    extra: dict[str, Any] = {
        "tool_name": tool,
        "tool_input": {"command": command},
        "tool_response": response,
    }
    if harness != "gemini":
        extra["tool_use_id"] = f"toolu_{time.monotonic_ns()}"
    return event(harness, AFTER_TOOL[harness], session, **extra)


def check_output(harness: str, sent: dict[str, Any], stdout: str, stderr: str) -> str | None:
    """What the harness would accept from the hook, or a failed assertion: nothing at all, or
    one JSON object ``{"hookSpecificOutput": {"hookEventName": <the event>, "additionalContext":
    <text>}}`` (Codex's output schemas allow no other key there; Gemini CLI parses stderr when
    stdout is empty, so stderr stays empty too).  Returns the additional context."""
    assert stderr == "", stderr
    if stdout == "":
        return None
    assert stdout.endswith("\n") and stdout.count("\n") == 1, stdout
    value = json.loads(stdout)
    assert set(value) == {"hookSpecificOutput"}, value
    specific = value["hookSpecificOutput"]
    assert set(specific) == {"hookEventName", "additionalContext"}, specific
    assert specific["hookEventName"] == sent["hook_event_name"]
    text = specific["additionalContext"]
    assert isinstance(text, str) and text
    return text


# ----------------------------------------------------------------------------------------------
# An agent in a pane.


class Agent:
    """A pane whose process runs each hook it is handed, as the harness would."""

    def __init__(self, rig: Rig, name: str) -> None:
        self.rig = rig
        self.dir = rig.root / name
        self.dir.mkdir()
        self.fifo = self.dir / "jobs"
        os.mkfifo(self.fifo)
        loop = f'while read job < {self.fifo}; do sh "$job"; done'
        self.pane = rig.tmux.run("new-window", "-d", "-P", "-F", "#{pane_id}", loop).strip()
        self.n = 0

    def hook(
        self,
        harness: str,
        sent: dict[str, Any] | bytes,
        *args: str,
        setsid: bool = False,
        launcher: list[str] | None = None,
    ) -> str | None:
        """Run ``tmuxlocd context <harness> ARGS`` in the pane with ``sent`` on stdin; check
        its exit status and its output against the harness's contract; return the context."""
        self.rig.sync()  # the daemon has seen every change made before this hook
        self.n += 1
        job = self.dir / f"{self.n}"
        data = sent if isinstance(sent, bytes) else json.dumps(sent).encode()
        Path(f"{job}.in").write_bytes(data)
        argv = ["setsid", "-w"] if setsid else []
        argv += [*(launcher or [SCRIPT, "context"]), harness, *args]
        cmd = " ".join(shlex.quote(a) for a in argv)
        Path(f"{job}.sh").write_text(
            f"{cmd} <{job}.in >{job}.out 2>{job}.err; echo $? >{job}.rc.tmp; "
            f"mv {job}.rc.tmp {job}.rc\n"
        )
        self._hand(f"{job}.sh")
        rc = Path(f"{job}.rc")
        poll(rc.exists, 20.0, f"hook {self.n} in {self.pane}")
        assert rc.read_text().strip() == "0"
        out, err = Path(f"{job}.out").read_text(), Path(f"{job}.err").read_text()
        if isinstance(sent, bytes):
            assert out == "" and err == "", (out, err)
            return None
        return check_output(harness, sent, out, err)

    def _hand(self, line: str) -> None:
        fd: list[int] = []

        def opened() -> bool:
            try:
                fd.append(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                return False
            return True

        poll(opened, 20.0, "the agent's job loop")
        try:
            os.write(fd[0], (line + "\n").encode())
        finally:
            os.close(fd[0])

    def close(self) -> None:
        self.rig.tmux.run("kill-pane", "-t", self.pane, check=False)


@pytest.fixture
def rig() -> Iterator[Rig]:
    with private_rig(start=True) as rig:
        yield rig


@pytest.fixture(params=["daemon", "no daemon"])
def mode(request: pytest.FixtureRequest, rig: Rig) -> Iterator[str]:
    if request.param == "daemon":
        d = Daemon(rig).wait_ready()
        try:
            yield "daemon"
        finally:
            assert d.stop() == 0, d.logs()
    else:
        yield "no daemon"


def neighbours(text: str) -> str:
    return text.splitlines()[-1]


# ----------------------------------------------------------------------------------------------
# The schedule.


@pytest.mark.parametrize("harness", HARNESSES)
def test_a_prompt_injects_once_then_on_change(rig: Rig, mode: str, harness: str) -> None:
    agent = Agent(rig, "a")
    first = agent.hook(harness, prompt(harness, "s1"))
    assert first is not None
    lines = first.splitlines()
    assert lines[0] == "tmux location (turn 1):"
    assert f"pane 0 {agent.pane}" in lines[1]
    assert lines[3] == "neighbors: above none; below none; left none; right none"
    assert len(first.encode()) < 300

    assert agent.hook(harness, prompt(harness, "s1")) is None  # unchanged: nothing at all

    below = rig.tmux.run(
        "split-window", "-d", "-v", "-t", agent.pane, "-P", "-F", "#{pane_id}", "cat"
    ).strip()
    third = agent.hook(harness, prompt(harness, "s1"))
    assert third is not None
    assert third.splitlines()[0] == "tmux location (turn 3):"
    assert neighbours(third) == f"neighbors: above none; below {below}; left none; right none"
    assert agent.hook(harness, prompt(harness, "s1")) is None


def test_the_form_install_writes(rig: Rig, mode: str) -> None:
    """``python -S <package>/context.py``: no site start-up, the dependencies loaded only
    when computing without a daemon."""
    agent = Agent(rig, "a")
    fast = this_hook()
    assert fast[1] == "-S"
    assert agent.hook("gemini", prompt("gemini", "s1"), launcher=fast) is not None
    assert agent.hook("gemini", prompt("gemini", "s1"), launcher=fast) is None
    rig.tmux.run("split-window", "-d", "-t", agent.pane, "cat")
    told = agent.hook("gemini", after_tool("gemini", "s1"), launcher=fast)
    assert told is not None and "below %" in told


def test_a_hook_installed_before_the_layers_still_runs(rig: Rig, mode: str) -> None:
    """Installs before the package had folders wrote ``python -S <site>/tmuxlocd/context.py``
    into harness hooks: that file still runs the hook, the same answers, from its depth."""
    agent = Agent(rig, "a")
    fast = this_hook()
    old = [fast[0], "-S", str(Path(fast[2]).parent.parent / "context.py")]
    assert old[2].endswith(os.path.join("tmuxlocd", "context.py")) and old[2] != fast[2]
    assert agent.hook("codex", prompt("codex", "s1"), launcher=old) is not None
    assert agent.hook("codex", prompt("codex", "s1"), launcher=old) is None
    rig.tmux.run("split-window", "-d", "-t", agent.pane, "cat")
    told = agent.hook("codex", after_tool("codex", "s1"), launcher=old)
    assert told is not None and "below %" in told


@pytest.mark.parametrize("harness", HARNESSES)
def test_after_a_break_pane_the_tool_hook_injects(rig: Rig, mode: str, harness: str) -> None:
    agent = Agent(rig, "a")
    rig.tmux.run("split-window", "-d", "-h", "-t", agent.pane, "cat")
    assert agent.hook(harness, prompt(harness, "s1")) is not None
    assert agent.hook(harness, after_tool(harness, "s1", "ls")) is None  # unchanged

    rig.tmux.run("break-pane", "-d", "-s", agent.pane)
    window = rig.tmux.display(agent.pane, "#{window_index}")
    told = agent.hook(harness, after_tool(harness, "s1"))
    assert told is not None
    assert told.splitlines()[0] == "tmux location (turn 1):"
    assert f"window {window} " in told.splitlines()[1]
    assert neighbours(told) == "neighbors: above none; below none; left none; right none"
    assert agent.hook(harness, after_tool(harness, "s1")) is None
    assert agent.hook(harness, prompt(harness, "s1")) is None


@pytest.mark.parametrize("harness", HARNESSES)
def test_what_the_session_start_told_is_not_told_again(rig: Rig, mode: str, harness: str) -> None:
    """The first prompt of a session carries nothing the session start already told."""
    agent = Agent(rig, "a")
    told = agent.hook(harness, start(harness, "s1"))
    assert told is not None and told.startswith("tmux location:\n")
    assert len(told.encode()) < 200  # the only copy the session gets (about 180 bytes)
    assert agent.hook(harness, prompt(harness, "s1")) is None
    assert agent.hook(harness, after_tool(harness, "s1", "ls")) is None
    assert agent.hook(harness, prompt(harness, "s1")) is None
    # A change after it is told, once, by the next tool call or prompt.
    below = rig.tmux.run(
        "split-window", "-d", "-v", "-t", agent.pane, "-P", "-F", "#{pane_id}", "cat"
    ).strip()
    changed = agent.hook(harness, after_tool(harness, "s1"))
    assert changed is not None and changed.startswith("tmux location (turn 2):\n")
    assert neighbours(changed) == f"neighbors: above none; below {below}; left none; right none"
    assert agent.hook(harness, prompt(harness, "s1")) is None


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_clear_and_compaction_tell_again(rig: Rig, mode: str, harness: str) -> None:
    """Claude Code and Codex start the session again with source "clear" or "compact": the
    model lost its history, so the location is told again, and counts as told."""
    agent = Agent(rig, "a")
    assert agent.hook(harness, start(harness, "s1")) is not None
    assert agent.hook(harness, prompt(harness, "s1")) is None
    for source in ("compact", "clear"):
        again = agent.hook(harness, start(harness, "s1", source))
        assert again is not None and again.startswith("tmux location:\n")
        assert agent.hook(harness, prompt(harness, "s1")) is None


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_a_resumed_session_is_not_told_what_its_history_replays(
    rig: Rig, mode: str, harness: str
) -> None:
    """``claude -p --resume`` and ``codex exec resume`` keep the session id and replay every
    earlier injection: an unchanged location is not told again, a changed one once."""
    agent = Agent(rig, "a")
    assert agent.hook(harness, start(harness, "s1")) is not None
    assert agent.hook(harness, prompt(harness, "s1")) is None
    assert agent.hook(harness, start(harness, "s1", "resume")) is None
    assert agent.hook(harness, prompt(harness, "s1")) is None

    rig.tmux.run("split-window", "-d", "-t", agent.pane, "cat")
    resumed = agent.hook(harness, start(harness, "s1", "resume"))
    assert resumed is not None and "below %" in neighbours(resumed)
    assert agent.hook(harness, prompt(harness, "s1")) is None
    assert agent.hook(harness, start(harness, "s1", "resume")) is None


def test_a_resumed_gemini_session_is_told_what_its_history_dropped(rig: Rig, mode: str) -> None:
    """Gemini CLI drops a session start's injection from a resumed history and keeps a
    prompt's: told once on resume after the former, not at all after the latter."""
    agent = Agent(rig, "a")
    assert agent.hook("gemini", start("gemini", "s1")) is not None
    assert agent.hook("gemini", prompt("gemini", "s1")) is None
    resumed = agent.hook("gemini", start("gemini", "s1", "resume"))
    assert resumed is not None and resumed.startswith("tmux location:\n")
    assert agent.hook("gemini", prompt("gemini", "s1")) is None

    # Told by a prompt (a session whose start hook did not run): kept on resume.
    assert agent.hook("gemini", prompt("gemini", "s2")) is not None
    assert agent.hook("gemini", start("gemini", "s2", "resume")) is None


class Transcript:
    """A Gemini CLI session's transcript, appended to as Gemini CLI 0.61.0 does."""

    REQUEST = b'{"id":"m1","type":"gemini","content":"ok"}\n{"$set":{"lastUpdated":"t"}}\n'
    COMPRESSED = b'{"$set":{"sessionId":"s1"}}\n{"$set":{"messages":[]}}\n'

    def __init__(self, rig: Rig) -> None:
        self.path = rig.root / "chats" / "session-s1.jsonl"
        self.path.parent.mkdir()
        self.path.write_bytes(b'{"sessionId":"s1","projectHash":"p"}\n')

    def request(self, agent: Agent, compressed: bool = False) -> None:
        """Gemini CLI's PreCompress, then the request, compressed or not."""
        sent = event("gemini", "PreCompress", "s1", transcript_path=str(self.path))
        assert agent.hook("gemini", {**sent, "trigger": "auto"}) is None
        with self.path.open("ab") as f:
            f.write((self.COMPRESSED if compressed else b"") + self.REQUEST)


def gemini(sent: dict[str, Any], transcript: Transcript) -> dict[str, Any]:
    return {**sent, "transcript_path": str(transcript.path)}


def test_gemini_precompress_before_every_request_is_not_a_compression(rig: Rig, mode: str) -> None:
    """Gemini CLI 0.61 runs PreCompress before every model request: neither a prompt nor a
    tool call repeats an unchanged location for it, and a tool call tells a change."""
    agent = Agent(rig, "a")
    t = Transcript(rig)
    assert agent.hook("gemini", gemini(start("gemini", "s1"), t)) is not None
    for _ in range(3):
        assert agent.hook("gemini", gemini(prompt("gemini", "s1"), t)) is None
        t.request(agent)
        assert agent.hook("gemini", gemini(after_tool("gemini", "s1", "ls"), t)) is None
        t.request(agent)
    rig.tmux.run("break-pane", "-d", "-s", agent.pane)
    t.request(agent)
    moved = agent.hook("gemini", gemini(after_tool("gemini", "s1"), t))
    assert moved is not None and moved.startswith("tmux location (turn 3):\n")
    t.request(agent)
    assert agent.hook("gemini", gemini(prompt("gemini", "s1"), t)) is None


def test_gemini_tells_again_after_a_real_compression(rig: Rig, mode: str) -> None:
    agent = Agent(rig, "a")
    t = Transcript(rig)
    assert agent.hook("gemini", gemini(start("gemini", "s1"), t)) is not None
    assert agent.hook("gemini", gemini(prompt("gemini", "s1"), t)) is None
    t.request(agent, compressed=True)
    again = agent.hook("gemini", gemini(after_tool("gemini", "s1", "ls"), t))
    assert again is not None and again.startswith("tmux location (turn 1):\n")
    t.request(agent)
    assert agent.hook("gemini", gemini(prompt("gemini", "s1"), t)) is None
    # A compression on the last request of a run is read at the next prompt.
    t.request(agent, compressed=True)
    assert agent.hook("gemini", gemini(prompt("gemini", "s1"), t)) is not None
    # A manual /compress with no transcript to read forgets at once.
    manual = event("gemini", "PreCompress", "s1", trigger="manual", transcript_path="")
    assert agent.hook("gemini", manual) is None
    assert agent.hook("gemini", gemini(prompt("gemini", "s1"), t)) is not None


def test_no_tool_injection_before_the_model_was_told(rig: Rig, mode: str) -> None:
    agent = Agent(rig, "a")
    assert agent.hook("claude", after_tool("claude", "s1")) is None
    assert agent.hook("claude", start("claude", "s1")) is not None
    assert agent.hook("claude", after_tool("claude", "s1")) is None  # told at the start


def test_two_sessions_in_one_pane_keep_separate_schedules(rig: Rig, mode: str) -> None:
    agent = Agent(rig, "a")
    assert agent.hook("claude", prompt("claude", "A")) is not None
    assert agent.hook("claude", prompt("claude", "A")) is None
    b = agent.hook("claude", prompt("claude", "B"))
    assert b is not None and b.startswith("tmux location (turn 1):")
    rig.tmux.run("split-window", "-d", "-t", agent.pane, "cat")
    a = agent.hook("claude", prompt("claude", "A"))
    assert a is not None and a.startswith("tmux location (turn 3):")
    b = agent.hook("claude", prompt("claude", "B"))
    assert b is not None and b.startswith("tmux location (turn 2):")
    # The same id in another harness is another session.
    assert agent.hook("codex", prompt("codex", "A")) is not None


def test_the_floor_suppresses(rig: Rig, mode: str) -> None:
    agent = Agent(rig, "a")
    floor = ("--min-interval-ms", "3600000")
    assert agent.hook("claude", prompt("claude", "s1"), *floor) is not None
    rig.tmux.run("split-window", "-d", "-t", agent.pane, "cat")
    assert agent.hook("claude", prompt("claude", "s1"), *floor) is None
    assert agent.hook("claude", after_tool("claude", "s1"), *floor) is None
    # Without the floor the change is told, as turn 3.
    told = agent.hook("claude", prompt("claude", "s1"))
    assert told is not None and told.startswith("tmux location (turn 3):")
    # A bad floor is ignored at run time.
    rig.tmux.run("split-window", "-d", "-t", agent.pane, "cat")
    assert agent.hook("claude", prompt("claude", "s1"), "--min-interval-ms", "-5") is not None


def test_a_hook_in_a_new_session_is_placed_by_its_ancestor(rig: Rig, mode: str) -> None:
    agent = Agent(rig, "a")
    told = agent.hook("codex", prompt("codex", "s1"), setsid=True)
    assert told is not None and f" {agent.pane}\n" in told


# ----------------------------------------------------------------------------------------------
# Below Codex's shared app-server: the session's own pane, or nothing.

# A process whose command line is that of Codex's shared app-server (``codex app-server
# --listen unix://``): in a new session, with no tty, it runs the hook as its child.
SHARED_SERVER = (
    "import subprocess, sys\nsys.exit(subprocess.call(sys.argv[sys.argv.index('--') + 1 :]))\n"
)


def shared_launcher(rig: Rig, log: Path) -> list[str]:
    server = rig.root / "app_server.py"
    server.write_text(SHARED_SERVER)
    return [
        "env",
        f"TMUXLOCD_CONTEXT_LOG={log}",
        "setsid",
        "-w",
        sys.executable,
        str(server),
        "app-server",
        "--listen",
        "unix://",
        "--",
        SCRIPT,
        "context",
    ]


def in_window(rig: Rig, command: str) -> str:
    return rig.tmux.run("new-window", "-d", "-P", "-F", "#{pane_id}", command).strip()


def codex_prompt(session: str, transcript: Path) -> dict[str, Any]:
    return prompt("codex", session) | {"transcript_path": str(transcript)}


def test_below_the_shared_app_server_the_writers_pane_or_nothing(rig: Rig, mode: str) -> None:
    first = Agent(rig, "first")  # the pane of the TUI that started the shared server
    log = rig.root / "context.log"
    launcher = shared_launcher(rig, log)
    rollout = rig.root / "rollout-s2.jsonl"
    rollout.write_bytes(b"")
    # Nobody writes the session's transcript: nothing, never the first TUI's pane.
    assert first.hook("codex", codex_prompt("s2", rollout), launcher=launcher) is None
    assert "no process has the session's transcript open for writing" in log.read_text()
    # One that only reads it, in another pane, is no witness.
    in_window(rig, f"exec sleep 600 <{shlex.quote(str(rollout))}")
    assert first.hook("codex", codex_prompt("s2", rollout), launcher=launcher) is None
    # The session's writer, in its own pane: that pane, and how it was found.
    second = in_window(rig, f"exec 3>>{shlex.quote(str(rollout))}; exec sleep 600")
    poll(lambda: len(transcript_writers(str(rollout))) == 1, 10.0, "the writer")
    told = first.hook("codex", codex_prompt("s2", rollout), launcher=launcher)
    assert told is not None and f" {second}\n" in told and f" {first.pane}\n" not in told
    assert told.endswith("verified_by transcript\n")
    # A second writer in a third pane: it cannot be told apart, so nothing new is said.
    rig.tmux.run("split-window", "-d", "-t", second, "cat")  # the told location changes
    in_window(rig, f"exec 3>>{shlex.quote(str(rollout))}; exec sleep 600")
    poll(lambda: len(transcript_writers(str(rollout))) == 2, 10.0, "two writers")
    assert first.hook("codex", codex_prompt("s2", rollout), launcher=launcher) is None
    assert "processes on 2 ttys have the transcript open for writing" in log.read_text()


def test_a_wrong_location_told_earlier_is_corrected(rig: Rig, mode: str) -> None:
    first = Agent(rig, "first")
    rollout = rig.root / "rollout-s3.jsonl"
    rollout.write_bytes(b"")
    # As an older tmuxlocd did below the shared server: the first TUI's pane.
    wrong = first.hook("codex", codex_prompt("s3", rollout), setsid=True)
    assert wrong is not None and f" {first.pane}\n" in wrong
    second = in_window(rig, f"exec 3>>{shlex.quote(str(rollout))}; exec sleep 600")
    poll(lambda: len(transcript_writers(str(rollout))) == 1, 10.0, "the writer")
    launcher = shared_launcher(rig, rig.root / "context.log")
    told = first.hook("codex", codex_prompt("s3", rollout), launcher=launcher)
    assert told is not None and f" {second}\n" in told and "(turn 2)" in told


# ----------------------------------------------------------------------------------------------
# Nothing a harness would reject, whatever happens.


@pytest.mark.parametrize(
    "garbage",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"hook_event_name": "UserPromptSubmit"}',
        b'{"hook_event_name": "Stop", "session_id": "s1"}',
        b'{"session_id": 3}',
        b"\xff\xfe{",
        b"[" * 100_000,
    ],
)
def test_garbage_stdin(rig: Rig, daemon: Daemon, garbage: bytes) -> None:
    agent = Agent(rig, "a")
    assert agent.hook("claude", garbage) is None
    assert agent.hook("gemini", garbage) is None


def test_unknown_harness_and_bad_arguments(rig: Rig, daemon: Daemon) -> None:
    agent = Agent(rig, "a")
    assert agent.hook("vim", prompt("claude", "s1")) is None


def run_outside(rig: Rig, harness: str, sent: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The hook from the test process, in a new session: no tty, no ancestor in a pane."""
    return subprocess.run(
        [SCRIPT, "context", harness],
        input=json.dumps(sent),
        capture_output=True,
        text=True,
        env=rig.env(),
        timeout=20,
        start_new_session=True,
        check=False,
    )


@pytest.mark.parametrize("harness", HARNESSES)
def test_not_in_a_pane(rig: Rig, mode: str, harness: str) -> None:
    for sent in (start(harness, "s1"), prompt(harness, "s1"), after_tool(harness, "s1")):
        proc = run_outside(rig, harness, sent)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_a_dead_daemon(rig: Rig) -> None:
    d = Daemon(rig).wait_ready()
    agent = Agent(rig, "a")
    assert agent.hook("claude", prompt("claude", "s1")) is not None
    d.proc.kill()  # no clean stop: the socket file stays, nobody answers
    d.proc.wait()
    assert os.path.exists(rig.daemon_socket)
    assert agent.hook("claude", prompt("claude", "s1")) is None  # computed directly, unchanged
    rig.tmux.run("split-window", "-d", "-t", agent.pane, "cat")
    assert agent.hook("claude", after_tool("claude", "s1")) is not None


def test_state_files_are_private_and_small(rig: Rig, daemon: Daemon) -> None:
    agent = Agent(rig, "a")
    agent.hook("claude", prompt("claude", "s1"))
    directory = Path(rig.daemon_socket).parent / "context"
    assert directory.stat().st_mode & 0o777 == 0o700
    files = sorted(directory.iterdir())
    assert [f.name for f in files] == ["claude-s1", "claude-s1.lock"]
    for f in files:
        assert f.stat().st_mode & 0o777 == 0o600
    assert files[0].stat().st_size < 400


def test_an_unusable_state_directory_injects_every_prompt(rig: Rig, daemon: Daemon) -> None:
    directory = Path(rig.daemon_socket).parent / "context"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)  # not private: refused
    agent = Agent(rig, "a")
    assert agent.hook("claude", prompt("claude", "s1")) is not None
    assert agent.hook("claude", prompt("claude", "s1")) is not None
    assert agent.hook("claude", after_tool("claude", "s1")) is None
    assert list(directory.iterdir()) == []
