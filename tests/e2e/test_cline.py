"""Cline CLI (pinned) in a pane of a private tmux server against the chat-completions stub,
with the plugin ``tmuxlocd install cline`` wrote (chat_harnesses).  Each test adds a row to
the report (``$TMUXLOCD_E2E_REPORT``), the plugin's hook runs timed.

Cline resumes a task (``--id``) only in its TUI; these run one task per prompt
(``cline "<prompt>"``), each session in its own CLI (``CLINE_SESSION_BACKEND_MODE=local``)
but in the test of its hub."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from tests.e2e.chat_harnesses import (
    Cline,
    agent_working_then_gone,
    killed_agent_goes,
    only_block,
    stub,
    tool_call_splits_the_pane,
    unchanged_tool_call,
)
from tests.e2e.panes import HarnessRig, report
from tests.e2e.stub_base import Recorded, Text, Turn, location_blocks
from tests.e2e.stub_chat import ChatStub
from tests.tmuxtest import poll

__all__ = ["stub"]  # the fixture


def test_first_prompt_then_unchanged_tool_call(hrig: HarnessRig, stub: ChatStub) -> None:
    """The first prompt tells the location once (turn 1, after the prompt); a shell call
    that changes nothing adds nothing to the request carrying its result."""
    cline = Cline(hrig, stub)
    requests = unchanged_tool_call(cline)
    block = only_block(requests[0].body, hrig.first_pane, hrig.diagnostics())
    assert block.turn == 1
    cline.record("first_prompt, unchanged_tool_call", requests)


def test_tool_call_splits_the_pane(hrig: HarnessRig, stub: ChatStub) -> None:
    cline = Cline(hrig, stub)
    cline.record("tool_call_splits_the_pane", tool_call_splits_the_pane(cline))


def test_agent_working_during_a_prompt_then_idle_and_gone(hrig: HarnessRig, stub: ChatStub) -> None:
    """SPEC §13: a task's agent is working in its pane while the model answers, its run's
    end (``afterRun``) makes it idle, and the process's exit leaves none."""
    cline = Cline(hrig, stub)
    agent_working_then_gone(cline)
    events = [h.event for h in hrig.hook_runs()]
    assert events == ["UserPromptSubmit", "Stop"], events
    cline.record("agent_states", [], states_seen=["working", "idle", "gone"])


def test_killed_agent_goes(hrig: HarnessRig, stub: ChatStub) -> None:
    took = killed_agent_goes(Cline(hrig, stub))
    report({"harness": "cline", "kill": "one task", "gone_ms": round(took * 1000, 1)})


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def hubs_of(home: Path) -> list[int]:
    """The pids of the Cline hubs started with this HOME (this test's, no one else's)."""
    found = []
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
        if b"--cline-hub-daemon" in args and f"HOME={home}".encode() in env:
            found.append(int(name))
    return found


def test_the_hub_runs_later_sessions_told_nothing_local_tells_each_its_pane(
    hrig: HarnessRig, stub: ChatStub
) -> None:
    """Cline's default backend: the first task runs in its CLI and starts the hub; a task
    from another pane then runs inside the hub (no tty, started with the first pane's
    environment), and is told nothing: never the first pane's location; no agent is kept
    for it.  With ``CLINE_SESSION_BACKEND_MODE=local`` the same pane's task is told its
    own pane."""
    cline = Cline(hrig, stub)
    hrig.start_daemon()
    cline.setup()
    first = hrig.first_pane
    second = hrig.split(first)
    hub_env = {**cline.env(), "CLINE_SESSION_BACKEND_MODE": "auto"}
    hub_env["CLINE_HUB_PORT"] = str(free_port())  # not the machine's one hub
    try:
        run = hrig.run_in_pane(first, cline.argv("from the first pane", again=False), hub_env)
        assert run.rc == 0, run.err[-2000:]
        poll(lambda: bool(hubs_of(hrig.home)), 30, "the hub the first task started")
        told = [q for q in stub.model_requests() if "from the first pane" in str(q.body)]
        only_block(told[0].body, first, hrig.diagnostics())

        seen: list[list[dict[str, Any]]] = []

        def decide(request: Recorded) -> Turn:
            seen.append(hrig.agents())  # what the daemon keeps while the hub's task runs
            return Text("done")

        stub.decide = decide
        before = len(hrig.hook_runs())
        run = hrig.run_in_pane(second, cline.argv("from the second pane", again=False), hub_env)
        assert run.rc == 0, run.err[-2000:]
        # The plugin ran in the hub and its hook answered nothing (not: it never ran).
        in_hub_hooks = hrig.hook_runs()[before:]
        assert "UserPromptSubmit" in [h.event for h in in_hub_hooks], hrig.diagnostics()
        assert all(h.out_bytes == 0 for h in in_hub_hooks), hrig.diagnostics()
        in_hub = [q for q in stub.model_requests() if "from the second pane" in str(q.body)]
        assert in_hub, hrig.diagnostics()
        for q in in_hub:
            assert location_blocks(q.body) == [], f"{location_blocks(q.body)}\n{hrig.diagnostics()}"
        assert seen and all(agents == [] for agents in seen), seen
        hub_requests = len(in_hub)
    finally:
        for pid in hubs_of(hrig.home):
            os.kill(pid, 15)
    poll(lambda: not hubs_of(hrig.home), 20, "the hub ended")

    local = cline.env()  # CLINE_SESSION_BACKEND_MODE=local
    run = hrig.run_in_pane(second, cline.argv("again from the second pane", again=False), local)
    assert run.rc == 0, run.err[-2000:]
    mine = [q for q in stub.model_requests() if "again from the second pane" in str(q.body)]
    only_block(mine[0].body, second, hrig.diagnostics())
    cline.record(
        "hub: second pane's task in the hub, then local",
        in_hub + mine,
        hub_requests=hub_requests,
    )
