"""Agent state from the harnesses' hook events, end to end (SPEC §13).

Each "harness" is a small process in a pane of a private tmux server
(``agent_harness.py``): it runs the installed hook command (``python -S .../context.py
<harness>``) as its child, with each event's JSON on stdin, as Claude Code, Codex and Gemini
CLI run their hooks.  A real daemon places each report by the kernel, finds that process,
holds a pidfd on it, and answers ``GET /v1/agents``, ``tmuxlocd agents`` and the waits.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemontest import PYTHON, REPO, Daemon, Rig, private_rig, run_cli
from tests.tmuxtest import TMUX, poll
from tmuxlocd.clients.install import this_hook
from tmuxlocd.clients.rawhttp import raw_request

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]

HARNESS = str(Path(__file__).with_name("agent_harness.py"))
PROMPT = {"claude": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
DONE = {"claude": "Stop", "codex": "Stop", "gemini": "AfterAgent"}


def payload(harness: str, name: str, session: str, **extra: Any) -> dict[str, Any]:
    """An event with the fields each harness's hooks reference gives it."""
    base: dict[str, Any] = {
        "session_id": session,
        "transcript_path": f"/tmp/transcripts/{session}.jsonl",
        "cwd": REPO,
        "hook_event_name": name,
    }
    if harness == "codex":
        base.update(model="gpt-5-codex", permission_mode="default", turn_id="t1")
    base.update(extra)
    return base


def permission(harness: str, session: str) -> dict[str, Any]:
    if harness == "gemini":
        return payload(
            harness,
            "Notification",
            session,
            notification_type="ToolPermission",
            message="Allow execution of: 'rm -rf build'?",
            details={"type": "exec", "title": "Confirm Shell Command", "command": "rm -rf build"},
        )
    return payload(
        harness,
        "PermissionRequest",
        session,
        tool_name="Bash",
        tool_input={"command": "rm -rf build"},
    )


class Harness:
    """The stand-in harness process in its own pane (a new window, or a split)."""

    def __init__(
        self,
        rig: Rig,
        harness: str,
        session: str,
        split: str | None = None,
        *,
        ignore_hup: bool = False,
    ) -> None:
        self.rig = rig
        self.harness = harness
        self.session = session
        self.dir = rig.root / f"h{time.monotonic_ns()}"
        self.dir.mkdir()
        os.mkfifo(self.dir / "jobs")
        argv = [PYTHON, HARNESS, str(self.dir), *this_hook(), harness]
        command = "exec " + " ".join(argv)
        if ignore_hup:
            # An ignored signal stays ignored across exec: the process outlives its pane.
            command = "trap '' HUP; " + command
        how = ["split-window", "-d", "-t", split] if split else ["new-window", "-d"]
        self.pane = rig.tmux.run(*how, "-P", "-F", "#{pane_id}", command).strip()
        pid_file = self.dir / "pid"
        poll(pid_file.exists, 20, f"the harness in {self.pane} to start")
        self.pid = int(pid_file.read_text())
        self.n = 0

    def send(self, event: dict[str, Any], env: dict[str, str] | None = None) -> str:
        """Hand the harness one event; returns once its hook has run (what it printed)."""
        self.n += 1
        job = {"n": self.n, "stdin": json.dumps(event), "env": env or {}}
        with open(self.dir / "jobs", "w") as fifo:
            fifo.write(json.dumps(job) + "\n")
        done = self.dir / f"{self.n}.done"
        poll(done.exists, 20, f"hook {self.n} in {self.pane}")
        result = json.loads(done.read_text())
        assert result["rc"] == 0
        out: str = result["out"]
        return out

    def event(self, name: str, **extra: Any) -> str:
        return self.send(payload(self.harness, name, self.session, **extra))

    def kill(self) -> None:
        """``kill -9``, and back once tmux has closed its pane: tmux 3.3a with a control
        client attached can crash when two panes of one window die at the same moment."""
        os.kill(self.pid, signal.SIGKILL)
        poll(
            lambda: (
                self.pane not in self.rig.tmux.run("list-panes", "-a", "-F", "#{pane_id}").split()
            ),
            10,
            f"pane {self.pane} to close",
        )


def agents(rig: Rig, query: str = "") -> list[dict[str, Any]]:
    resp = raw_request(rig.daemon_socket, "GET", "/v1/agents" + query, 5.0)
    assert resp is not None and resp.status == 200, resp and resp.body
    found: list[dict[str, Any]] = json.loads(resp.body)["agents"]
    return found


def agent_in(rig: Rig, pane: str) -> dict[str, Any] | None:
    here = [a for a in agents(rig) if a["pane"] == pane]
    assert len(here) <= 1, here
    return here[0] if here else None


def state_of(rig: Rig, pane: str) -> str | None:
    found = agent_in(rig, pane)
    return None if found is None else str(found["state"])


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with private_rig(start=True) as rig:
        yield rig


@pytest.fixture(scope="module")
def daemon(rig: Rig) -> Iterator[Daemon]:
    d = Daemon(rig).wait_ready()
    yield d
    assert d.stop() == 0, d.logs()


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini"])
def test_a_turn_working_waiting_idle_then_gone_on_kill(
    rig: Rig, daemon: Daemon, harness: str
) -> None:
    h = Harness(rig, harness, f"{harness}-turn")
    assert h.event("SessionStart", source="startup") != ""  # the context hook still tells
    found = agent_in(rig, h.pane)
    assert found is not None
    # The harness process is the one found, not the hook nor the shell between them.
    assert (found["harness"], found["state"], found["pid"]) == (harness, "idle", h.pid)
    assert found["location"]["pane"]["id"] == h.pane

    h.event(PROMPT[harness], prompt="hello")
    assert state_of(rig, h.pane) == "working"

    assert h.send(permission(harness, h.session)) == ""  # a state-only event prints nothing
    found = agent_in(rig, h.pane)
    assert found is not None and found["state"] == "waiting"
    tool = "exec" if harness == "gemini" else "Bash"
    assert found["reason"] == f"permission: {tool}"

    h.event(DONE[harness])
    found = agent_in(rig, h.pane)
    assert found is not None and found["state"] == "idle" and found["reason"] is None

    h.kill()
    poll(lambda: agent_in(rig, h.pane) is None, 10, "the killed harness's agent to go")


@pytest.mark.parametrize("harness", ["claude", "gemini"])
def test_an_approved_edit_ends_waiting_and_tells_no_location(
    rig: Rig, daemon: Daemon, harness: str
) -> None:
    h = Harness(rig, harness, f"{harness}-edit")
    h.event("SessionStart", source="startup")
    h.event(PROMPT[harness], prompt="fix it")
    tool, after = ("write_file", "AfterTool") if harness == "gemini" else ("Edit", "PostToolUse")
    if harness == "gemini":
        asked = payload(
            harness,
            "Notification",
            h.session,
            notification_type="ToolPermission",
            details={"type": "edit", "tool_name": tool},
        )
    else:
        asked = payload(harness, "PermissionRequest", h.session, tool_name=tool)
    h.send(asked)
    found = agent_in(rig, h.pane)
    assert found is not None and (found["state"], found["reason"]) == (
        "waiting",
        f"permission: {tool}",
    )
    # Approved: the edit's after-event (installed for this) says it works again, and,
    # another tool than the shell, tells no location.
    rig.tmux.run("split-window", "-d", "-t", h.pane)  # a change the shell's event would tell
    rig.sync()
    assert h.event(after, tool_name=tool) == ""
    assert state_of(rig, h.pane) == "working"
    h.kill()


def test_claude_notifications_and_session_end(rig: Rig, daemon: Daemon) -> None:
    h = Harness(rig, "claude", "notes")
    h.event("UserPromptSubmit", prompt="x")
    h.event("Notification", notification_type="elicitation_dialog", message="Pick one")
    found = agent_in(rig, h.pane)
    assert found is not None and (found["state"], found["reason"]) == ("waiting", "question")
    h.event("Notification", notification_type="idle_prompt", message="waiting for input")
    assert state_of(rig, h.pane) == "idle"
    h.event("SessionEnd", reason="prompt_input_exit")
    assert agent_in(rig, h.pane) is None
    # /clear: a new session of the same process, after the first ended.
    h2 = "after-clear"
    h.send(payload("claude", "SessionStart", h2, source="clear"))
    found = agent_in(rig, h.pane)
    assert found is not None and found["session_id"] == h2
    h.kill()
    poll(lambda: agent_in(rig, h.pane) is None, 10, "the agent to go")


def test_a_report_lands_in_the_callers_own_pane_whatever_it_says(rig: Rig, daemon: Daemon) -> None:
    other = Harness(rig, "codex", "other")
    other.event("SessionStart", source="startup")
    h = Harness(rig, "claude", "liar")
    # $TMUX_PANE and a payload field naming the other pane change nothing: the kernel says.
    h.send(
        payload("claude", "UserPromptSubmit", "liar", prompt="x", pane=other.pane),
        env={"TMUX_PANE": other.pane},
    )
    assert state_of(rig, h.pane) == "working"
    assert state_of(rig, other.pane) == "idle"
    for each in (h, other):
        each.kill()
    poll(lambda: not agents(rig), 10, "both agents to go")


def test_only_shells_between_the_hook_and_tmux_is_no_agent(rig: Rig, daemon: Daemon) -> None:
    """A hook run by hand from a pane's shell has no harness process: nothing is recorded,
    and the hook still exits 0 with nothing on stderr."""
    event = json.dumps(payload("claude", "UserPromptSubmit", "by-hand", prompt="x"))
    hook = " ".join(this_hook()) + " claude"
    done = rig.run_in_pane(f"echo '{event}' | {hook} >/dev/null")
    assert done.rc == 0 and done.err == ""
    assert agents(rig) == []
    status = raw_request(
        rig.daemon_socket,
        "POST",
        "/v1/agents/self?harness=claude&session_id=x&state=idle",
        5.0,
    )
    # The test process itself is in no pane.
    assert status is not None and status.status == 404


def test_two_agents_one_waiting_and_the_cli(rig: Rig, daemon: Daemon) -> None:
    a = Harness(rig, "claude", "two-a")
    b = Harness(rig, "codex", "two-b", split=a.pane)
    a.event("UserPromptSubmit", prompt="x")
    b.event("UserPromptSubmit", prompt="y")
    b.send(permission("codex", "two-b"))
    # The per-turn text names the neighbour that holds an agent, and which...
    told = json.loads(a.event("UserPromptSubmit", prompt="who is below me?"))
    assert f"{b.pane} (codex)" in told["hookSpecificOutput"]["additionalContext"]
    # ...not its state: the neighbour's next state changes nothing to tell.
    b.event("PostToolUse", tool_name="Bash", tool_input={"command": "true"})
    assert a.event("UserPromptSubmit", prompt="and now?") == ""
    b.send(permission("codex", "two-b"))
    done = run_cli(rig, "agents", "--state", "waiting")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{b.pane} codex waiting ")
    assert "permission: Bash" in lines[0]
    as_json = json.loads(run_cli(rig, "agents", "--json").stdout)
    assert {(x["pane"], x["state"]) for x in as_json["agents"]} == {
        (a.pane, "working"),
        (b.pane, "waiting"),
    }
    nxt = run_cli(rig, "agents", "--next", "waiting")
    assert (nxt.returncode, nxt.stdout.strip()) == (0, b.pane)
    assert run_cli(rig, "agents", "--next", "idle").returncode == 1
    assert run_cli(rig, "status-line").stdout == "1 waiting 1 working\n"
    # The wait: already waiting answers at once; idle comes with the turn's end.
    resp = raw_request(
        rig.daemon_socket, "GET", f"/v1/panes/{b.pane[1:]}/wait?until=agent-waiting", 5.0
    )
    assert resp is not None and json.loads(resp.body)["met"] is True
    waited: dict[str, Any] = {}

    def wait() -> None:
        got = raw_request(
            rig.daemon_socket,
            "GET",
            f"/v1/panes/{a.pane[1:]}/wait?until=agent-idle&timeout_s=20",
            25.0,
        )
        assert got is not None
        waited.update(json.loads(got.body))

    thread = threading.Thread(target=wait)
    thread.start()
    a.event("PostToolUse", tool_name="Bash", tool_input={"command": "true"})
    a.event("Stop")
    thread.join(30)
    assert waited["outcome"] == "agent-idle" and waited["met"] is True
    assert waited["agent"]["session_id"] == "two-a"
    for each in (a, b):
        each.kill()
    poll(lambda: not agents(rig), 10, "both agents to go")


def test_a_moved_pane_keeps_its_agent_and_a_resumed_session_moves(rig: Rig, daemon: Daemon) -> None:
    h = Harness(rig, "claude", "mover", split="main")  # a split: break-pane moves it
    h.event("SessionStart", source="startup")
    before = agent_in(rig, h.pane)
    assert before is not None
    rig.tmux.run("break-pane", "-d", "-s", h.pane)
    rig.sync()
    after = agent_in(rig, h.pane)
    assert (
        after is not None
        and after["location"]["window"]["id"] != (before["location"]["window"]["id"])
    )
    # The session resumed by another process in another pane: the agent moves there, and
    # the first process's end no longer ends it.
    again = Harness(rig, "claude", "mover")
    again.event("SessionStart", source="resume")
    found = [x for x in agents(rig) if x["session_id"] == "mover"]
    assert [(x["pane"], x["pid"]) for x in found] == [(again.pane, again.pid)]
    h.event("SessionEnd", reason="prompt_input_exit")  # the first one quits: not this one
    assert [x["pane"] for x in agents(rig)] == [again.pane]
    h.kill()
    rig.sync()
    assert [x["pane"] for x in agents(rig)] == [again.pane]
    again.kill()
    poll(lambda: not agents(rig), 10, "the agent to go")


def test_a_closed_pane_ends_its_agent_though_the_process_lives_on(rig: Rig, daemon: Daemon) -> None:
    # A harness that ignores SIGHUP survives ``kill-pane``: no pidfd tells of that, the
    # pane's removal does.
    h = Harness(rig, "codex", "orphan", split="main", ignore_hup=True)
    try:
        h.event("SessionStart", source="startup")
        h.event("UserPromptSubmit", prompt="hello")
        assert state_of(rig, h.pane) == "working"
        rig.tmux.run("kill-pane", "-t", h.pane)
        poll(lambda: agent_in(rig, h.pane) is None, 10, "the closed pane's agent to go")
        os.kill(h.pid, 0)  # still running: the pane went, not the process
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(h.pid, signal.SIGKILL)


def test_agent_state_events_only_when_asked(rig: Rig, daemon: Daemon) -> None:
    got: list[dict[str, Any]] = []
    plain: list[dict[str, Any]] = []
    ready = threading.Barrier(3, timeout=20)

    def read(types: str | None, into: list[dict[str, Any]]) -> None:
        from tmuxlocd.client import Client

        with Client(rig.daemon_socket) as client:
            stream = client.events(types=types, reconnect=False)
            for event in stream:
                if event.__struct_config__.tag == "snapshot":
                    ready.wait()
                    continue
                into.append({"type": event.__struct_config__.tag})
                if types and into[-1]["type"] == "agent.state" and len(into) >= 2:
                    return
                if not types and into and into[-1]["type"] == "pane.removed":
                    return

    readers = [
        threading.Thread(target=read, args=("agent.state", got)),
        threading.Thread(target=read, args=(None, plain)),
    ]
    for t in readers:
        t.start()
    ready.wait()
    h = Harness(rig, "gemini", "streamed")
    h.event("SessionStart", source="startup")
    h.event("BeforeAgent", prompt="x")
    readers[0].join(20)
    assert [e["type"] for e in got] == ["agent.state", "agent.state"]
    h.kill()  # its pane closes with it: pane.removed ends the plain reader
    poll(lambda: not agents(rig), 10, "the agent to go")
    readers[1].join(20)
    assert "agent.state" not in {e["type"] for e in plain}


def test_restart_keeps_live_agents_and_drops_dead_ones() -> None:
    with private_rig(start=True) as rig:
        restart(rig)


def restart(rig: Rig) -> None:
    first = Daemon(rig).wait_ready()
    try:
        live = Harness(rig, "claude", "survivor")
        live.event("UserPromptSubmit", prompt="x")
        dead = Harness(rig, "codex", "dies")
        dead.event("UserPromptSubmit", prompt="y")
    finally:
        assert first.stop() == 0, first.logs()
    dead.kill()  # while no daemon holds its pidfd (gone, or a zombie not yet reaped)
    second = Daemon(rig).wait_ready()
    try:
        expected = [(live.pane, "working", live.pid)]
        poll(
            lambda: [(a["pane"], a["state"], a["pid"]) for a in agents(rig)] == expected,
            10,
            "only the live agent taken back",
        )
        live.kill()
        poll(lambda: not agents(rig), 10, "the taken-back agent to go on kill")
    finally:
        assert second.stop() == 0, second.logs()


def test_pane_options() -> None:
    with private_rig(start=True) as rig:
        pane_options(rig)


def pane_options(rig: Rig) -> None:
    d = Daemon(rig, "--pane-options").wait_ready()
    try:
        h = Harness(rig, "claude", "optioned")

        def option() -> str:
            return rig.tmux.display(h.pane, "#{@tmuxlocd_agent}")

        h.send(permission("claude", "optioned"))
        poll(lambda: option() == "claude waiting", 10, "the pane option")
        h.event("Stop")
        poll(lambda: option() == "claude idle", 10, "the pane option to follow")
        h.kill()
        poll(lambda: option() == "", 10, "the pane option to be unset")
        stays = Harness(rig, "codex", "at-stop")
        stays.event("UserPromptSubmit", prompt="x")
        poll(
            lambda: rig.tmux.display(stays.pane, "#{@tmuxlocd_agent}") == "codex working",
            10,
            "the second pane's option",
        )
    finally:
        assert d.stop() == 0, d.logs()
    # A daemon that stops takes its options out of the panes.
    assert rig.tmux.display(stays.pane, "#{@tmuxlocd_agent}") == ""
    stays.kill()
