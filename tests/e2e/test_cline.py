"""Cline CLI (pinned) in a pane of a private tmux server against the chat-completions stub,
with the plugin ``tmuxlocd install cline`` wrote (chat_harnesses).  Each test adds a row to
the report (``$TMUXLOCD_E2E_REPORT``), the plugin's hook runs timed.

Most run one task per prompt (``cline "<prompt>"``); a resumed task (``--id``) and several
prompts of one task run in its TUI, typed into with send-keys.  Each session runs in its own
CLI (``CLINE_SESSION_BACKEND_MODE=local``) but in the test of its hub."""

from __future__ import annotations

from typing import Any

from tests.e2e.chat_harnesses import (
    Cline,
    agent_working_then_gone,
    killed_agent_goes,
    neighbour,
    only_block,
    stub,
    tool_call_splits_the_pane,
    unchanged_tool_call,
)
from tests.e2e.panes import HarnessRig, report
from tests.e2e.stub_base import Recorded, Text, Turn, location_blocks, new_blocks
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
    seen: list[str] = []

    def comm_of_agent() -> None:
        (agent,) = hrig.agents()
        with open(f"/proc/{agent['pid']}/comm") as f:
            seen.append(f.read().strip())

    agent_working_then_gone(cline, comm_of_agent)
    # The agent's process is cline's binary, not the node child it runs its plugins in.
    assert seen == [".cline"], seen
    events = [h.event for h in hrig.hook_runs()]
    assert events == ["UserPromptSubmit", "Stop"], events
    cline.record("agent_states", [], states_seen=["working", "idle", "gone"])


def test_killed_agent_goes(hrig: HarnessRig, stub: ChatStub) -> None:
    took = killed_agent_goes(Cline(hrig, stub))
    report({"harness": "cline", "kill": "one task", "gone_ms": round(took * 1000, 1)})


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
    hub_env = {**cline.env(), "CLINE_SESSION_BACKEND_MODE": "auto"}  # its own hub port
    try:
        run = hrig.run_in_pane(first, cline.argv("from the first pane", again=False), hub_env)
        assert run.rc == 0, run.err[-2000:]
        poll(lambda: bool(cline.hubs()), 30, "the hub the first task started")
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
        cline.end_hubs()

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


def type_in(hrig: HarnessRig, pane: str, text: str) -> None:
    """Cline's TUI takes typed keys one at a time, each once the last one shows (keys sent
    together never showed in its prompt), and may lose a key: sent again until it shows."""
    for i, ch in enumerate(text):
        # tmux's capture drops trailing blanks: a space shows with the key after it.
        shown = ("❯ " + text[: i + 1]).rstrip()

        def typed(shown: str = shown) -> bool:
            return shown in hrig.screen(pane)

        for _ in range(5):
            hrig.send_keys(pane, "-l", ch)
            try:
                poll(typed, 2, f"{shown!r} typed", interval=0.02)
                break
            except AssertionError:
                continue
        else:
            raise AssertionError(f"{shown!r} never showed:\n{hrig.screen(pane)}")
    hrig.send_keys(pane, "Enter")


def test_tui_unchanged_prompt_adds_nothing_a_split_once(hrig: HarnessRig, stub: ChatStub) -> None:
    """Cline's TUI, one task, three prompts: the first tells the location (turn 1); the
    second, unchanged, adds nothing; after a split from outside the third adds one block
    naming the new neighbour.  The agent is working while the model answers, idle after
    each turn, and gone once the TUI quits."""
    cline = Cline(hrig, stub)
    hrig.start_daemon()
    cline.setup()
    pane = hrig.first_pane
    replies = iter(range(1, 10))
    seen: list[str] = []

    def decide(request: Recorded) -> Turn:
        seen.extend(a["state"] for a in hrig.agents())
        return Text(f"reply-{next(replies)}")

    stub.decide = decide
    tag = hrig.start_in_pane(pane, [cline.binary(), "-i"], cline.env(), interactive=True)
    hrig.wait_screen(pane, "Auto-approve", 60)

    def turn(text: str, reply: str) -> list[Recorded]:
        before = len(stub.model_requests())
        type_in(hrig, pane, text)
        hrig.wait_screen(pane, reply)
        poll(lambda: [a["state"] for a in hrig.agents()] == ["idle"], 20, f"idle after {text}")
        return stub.model_requests()[before:]

    first = turn("first prompt", "reply-1")
    block = only_block(first[0].body, pane, hrig.diagnostics())
    assert block.turn == 1
    second = turn("second prompt", "reply-2")
    assert new_blocks(first[-1].body, second[0].body) == [], hrig.diagnostics()
    new = hrig.split(pane)
    third = turn("third prompt", "reply-3")
    added = new_blocks(second[-1].body, third[0].body)
    assert len(added) == 1 and added[0].turn == 3, f"{added}\n{hrig.diagnostics()}"
    assert neighbour(added[0], "right") == new, added[0].text
    assert seen == ["working"] * 3, seen
    for _ in range(4):
        hrig.send_keys(pane, "C-c")
        try:
            hrig.wait(tag, 5)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError(f"the TUI did not quit:\n{hrig.screen(pane)}")
    poll(lambda: hrig.agents() == [], 20, "no agent after the TUI quit", interval=0.05)
    cline.record(
        "interactive_prompts",
        first + second + third,
        states_seen=["working", "idle", "working", "idle", "working", "idle", "gone"],
    )


def test_resumed_task_holds_its_copy(hrig: HarnessRig, stub: ChatStub) -> None:
    """A task, then the same task resumed in the TUI (``cline --id``, the only way Cline
    resumes one): the resumed prompt's request holds the first prompt's copy, replayed, and
    adds nothing (the location is unchanged)."""
    cline = Cline(hrig, stub)
    hrig.start_daemon()
    cline.setup()
    pane = hrig.first_pane
    _, first = cline.prompt("first prompt")
    only_block(first[0].body, pane, hrig.diagnostics())
    stub.decide = lambda request: Text("reply-resumed")
    argv = [cline.binary(), "--id", cline.last_session()]
    tag = hrig.start_in_pane(pane, argv, cline.env(), interactive=True)
    hrig.wait_screen(pane, "Auto-approve", 60)
    before = len(stub.model_requests())
    type_in(hrig, pane, "second prompt")
    hrig.wait_screen(pane, "reply-resumed")
    second = stub.model_requests()[before:]
    assert second, hrig.diagnostics()
    for q in second:
        assert "first prompt" in str(q.body), "not the resumed task's request"
        only_block(q.body, pane, hrig.diagnostics())
    assert new_blocks(first[-1].body, second[0].body) == [], hrig.diagnostics()
    for _ in range(4):
        hrig.send_keys(pane, "C-c")
        try:
            hrig.wait(tag, 5)
            break
        except AssertionError:
            continue
    else:
        raise AssertionError(f"the TUI did not quit:\n{hrig.screen(pane)}")
    cline.record("first_prompt_then_resume", first + second)
