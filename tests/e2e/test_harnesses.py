"""What reaches the model, end to end: Claude Code and Gemini CLI (pinned, ``drivers.py``)
run in panes of a private tmux server with the hooks ``tmuxlocd install`` wrote, against a
stub model that records every request.  Each test asserts on the location blocks in the
recorded request bodies, and adds a row to the report (``$TMUXLOCD_E2E_REPORT``)."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.e2e import panes
from tests.e2e.drivers import DRIVERS, Driver
from tests.e2e.panes import HarnessRig, Run
from tests.e2e.stub_base import (
    Block,
    Decide,
    Recorded,
    StubServer,
    Text,
    Turn,
    always_text,
    location_blocks,
    location_bytes,
    mcp_names_pane,
    new_blocks,
    strings,
)
from tests.tmuxtest import poll
from tmuxlocd.clients.rawhttp import raw_request


@pytest.fixture(params=sorted(DRIVERS))
def driver(request: pytest.FixtureRequest) -> Driver:
    d = DRIVERS[request.param]()
    d.ensure()  # skips, with the reason, without npm or the registry
    return d


class World:
    """One test: the rig, the driver, the stub, and the requests of each run."""

    def __init__(self, hrig: HarnessRig, driver: Driver, scenario: str) -> None:
        self.hrig = hrig
        self.driver = driver
        self.scenario = scenario
        self.stub: StubServer = driver.stub(always_text)
        self.stub.start()
        self.runs: list[tuple[Run, list[Recorded]]] = []
        self.notes: dict[str, Any] = {}  # what else a test saw, for the report

    def script(self, decide: Decide) -> None:
        self.stub.decide = decide

    def prompt(
        self, text: str, *, pane: str | None = None, resume: str | None = None
    ) -> list[Recorded]:
        """One non-interactive run in ``pane`` (the first pane by default); the model
        requests it made."""
        before = len(self.stub.model_requests())
        run = self.hrig.run_in_pane(
            pane or self.hrig.first_pane,
            self.driver.argv(text, resume=resume),
            self.driver.env(self.hrig, self.stub),
        )
        return self._done(run, before)

    def prompt_outside(self, text: str, *, pty: bool = False) -> list[Recorded]:
        """A run in no pane: no tty at all, or (``pty``) a terminal of its own that is no
        pane's (``script`` allocates it), as in a terminal window beside tmux."""
        before = len(self.stub.model_requests())
        argv = self.driver.argv(text)
        if pty:
            argv = ["script", "-qec", shlex.join(argv), os.devnull]
        run = self.hrig.run_outside(argv, self.driver.env(self.hrig, self.stub))
        return self._done(run, before)

    def _done(self, run: Run, before: int) -> list[Recorded]:
        assert not self.stub.errors, self.stub.errors
        assert run.rc == 0, f"exit {run.rc}\n{run.out[-2000:]}\n{run.err[-4000:]}"
        requests = self.stub.model_requests()[before:]
        assert requests, f"no model request\n{run.err[-2000:]}"
        self.runs.append((run, requests))
        return requests

    def why(self) -> str:
        return self.hrig.diagnostics()

    def record(self) -> None:
        """One row of the report: the location bytes of each model request, and the hooks'
        times.  Called by a test as its last line: a failed test reports nothing."""
        requests = [q for _, qs in self.runs for q in qs]
        hooks = self.hrig.hook_runs()
        ms = [h.ms for h in hooks]
        prev: Any = None
        added = []
        for q in requests:
            added.append(sum(len(b.text.encode()) for b in new_blocks(prev, q.body)))
            prev = q.body
        panes.report(
            {
                "harness": self.driver.name,
                "package": self.driver.package,
                "version": self.driver.version,
                "scenario": self.scenario,
                "models": sorted(self.stub.models()),
                "requests": len(requests),
                "location_bytes": [location_bytes(q.body) for q in requests],
                "new_bytes": added,
                "hook_runs": len(hooks),
                "hook_events": sorted({h.event for h in hooks}),
                "hook_ms_median": round(statistics.median(ms), 1) if ms else None,
                "hook_ms_max": round(max(ms), 1) if ms else None,
                "hook_out_bytes": sum(h.out_bytes for h in hooks),
                **self.notes,
            }
        )

    def close(self) -> None:
        self.stub.stop()


@pytest.fixture
def world(hrig: HarnessRig, driver: Driver, request: pytest.FixtureRequest) -> Iterator[World]:
    driver.setup(hrig)
    scenario = request.node.originalname.removeprefix("test_")
    w = World(hrig, driver, scenario)
    try:
        yield w
    finally:
        w.close()


def blocks_for(body: Any, pane: str) -> list[Block]:
    return [b for b in location_blocks(body) if b.pane == pane]


def only_block(body: Any, pane: str, why: str) -> Block:
    blocks = location_blocks(body)
    assert len(blocks) == 1, f"{len(blocks)} location blocks: {blocks}\n{why}"
    assert blocks[0].pane == pane, f"{blocks[0].text}\n{why}"
    return blocks[0]


def neighbour(block: Block, direction: str) -> str:
    m = re.search(rf"{direction} ([^;]+)", block.neighbors)
    return m.group(1).strip() if m else ""


# ----------------------------------------------------------------------------------------------


def test_first_prompt_then_resume(world: World) -> None:
    """1 and 2: the location once on the first prompt; an unchanged resumed prompt adds
    nothing (its history holds one copy, however the harness replays it)."""
    world.hrig.start_daemon()
    pane = world.hrig.first_pane
    first = world.prompt("first prompt")
    block = only_block(first[0].body, pane, world.why())
    assert block.turn is None  # told with the session's start
    for q in first[1:]:
        only_block(q.body, pane, world.why())
    session = world.driver.last_session(world.hrig)
    second = world.prompt("second prompt", resume=session)
    for q in second:
        only_block(q.body, pane, world.why())
        assert "second prompt" in "".join(strings(q.body))  # the resumed run's own request
    third = world.prompt("third prompt", resume=session)
    for q in third:
        only_block(q.body, pane, world.why())
    # Each run's session start ran the hook: the resumed runs were told through it.
    starts = [h for h in world.hrig.hook_runs() if h.event == "SessionStart"]
    assert len(starts) == 3, world.why()
    world.record()


def test_interactive_prompts(world: World) -> None:
    """2 and 3 in one interactive session (the TUI, typed into with send-keys): a second,
    unchanged prompt adds nothing; after a split from outside the next prompt adds one block
    naming the new neighbour."""
    hrig, pane = world.hrig, world.hrig.first_pane
    hrig.start_daemon()
    world.driver.prepare_tui(hrig)
    replies = iter(range(1, 100))
    # Numbered replies for the chat's requests only: a side request (Gemini CLI's prompt
    # completion, which may ask while the prompt is typed and show its answer as ghost text)
    # must not take a number, or its answer on the screen passes for the turn's.
    world.script(
        lambda q: Text(f"reply-{next(replies)}" if world.stub.is_model_request(q) else "aside")
    )
    env = world.driver.env(hrig, world.stub)
    tag = hrig.start_in_pane(pane, world.driver.tui_argv(), env, interactive=True)
    poll(
        lambda: any(h.event == "SessionStart" for h in hrig.hook_runs()),
        60,
        "the TUI's session start",
    )

    def prompt(text: str, n: int) -> Recorded:
        hrig.send_keys(pane, "-l", text)
        hrig.wait_screen(pane, text)
        hrig.send_keys(pane, "Enter")  # apart from the text: else it may be taken as pasted
        hrig.wait_screen(pane, f"reply-{n}")  # answered, and the TUI idle again
        found = [q for q in world.stub.model_requests() if text in "".join(strings(q.body))]
        assert len(found) == 1, f"{len(found)} chat requests carry {text!r}\n{world.why()}"
        return found[0]

    first = prompt("first prompt", 1)
    only_block(first.body, pane, world.why())
    agent = idle_agent(world, pane)
    second = prompt("second prompt", 2)
    only_block(second.body, pane, world.why())
    assert new_blocks(first.body, second.body) == [], world.why()
    new = hrig.split(pane, "-h")
    hrig.rig.sync()
    third = prompt("third prompt", 3)
    added = new_blocks(second.body, third.body)
    assert len(added) == 1, f"{added}\n{world.why()}"
    assert added[0].pane == pane and added[0].turn is not None, added[0].text
    assert neighbour(added[0], "right") == new, f"{added[0].text}\n{world.why()}"
    again = idle_agent(world, pane)  # the same session's agent, idle again after its turn
    assert again["session_id"] == agent["session_id"] and again["pid"] == agent["pid"], again
    run = quit_tui(world, pane, tag)
    # Gone on quitting: the SessionEnd hook, or the daemon seeing the harness process exit.
    agents_poll(world, lambda found: not found, "the agent to go")
    world.notes["agent"] = f"idle after each turn as {agent['session_id']}; gone on quit"
    world.runs.append((run, [first, second, third]))
    world.record()


def agents_poll(
    world: World, ok: Callable[[list[dict[str, Any]]], bool], what: str, timeout: float = 30.0
) -> None:
    """Wait until the daemon's agents are ``ok``; else fail with them and the hooks' log."""
    try:
        poll(lambda: ok(world.hrig.agents()), timeout, what, interval=0.05)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {world.hrig.agents()}\n{world.why()}") from None


def idle_agent(world: World, pane: str) -> dict[str, Any]:
    """After a turn: the daemon lists exactly one agent, this harness's in ``pane``, ``idle``
    (the Stop / AfterAgent hook, which may end just after the reply is drawn), under the
    session id the harness gave its hooks."""
    hrig = world.hrig
    agents_poll(world, lambda found: [a["state"] for a in found] == ["idle"], "one idle agent")
    (agent,) = hrig.agents()
    sessions = {h.session for h in hrig.hook_runs() if h.session}
    assert len(sessions) == 1, f"{sessions}\n{world.why()}"
    assert agent["harness"] == world.driver.name, agent
    assert agent["pane"] == pane, agent
    assert agent["session_id"] == sessions.pop(), f"{agent}\n{world.why()}"
    return agent


def quit_tui(world: World, pane: str, tag: str) -> Run:
    """Type the TUI's quit command.  An Enter can land on the command's completion menu
    (which then completes instead of running it): Enter again until the program exits."""
    hrig = world.hrig
    hrig.send_keys(pane, "-l", world.driver.quit_command)
    hrig.wait_screen(pane, world.driver.quit_command)
    for _ in range(4):
        hrig.send_keys(pane, "Enter")
        try:
            return hrig.wait(tag, 15)
        except AssertionError:
            continue
    raise AssertionError(f"the TUI did not quit; its screen:\n{hrig.screen(pane)}")


def one_agent(world: World) -> dict[str, Any] | None:
    found = world.hrig.agents()
    return found[0] if len(found) == 1 else None


def test_permission_states(world: World) -> None:
    """SPEC §13 with the real TUI in its default permission mode: ``working`` while the model
    is asked, ``waiting`` with the tool while it asks to write a file, ``working`` again
    right after the approved write ran (the state-only after-tool hook, before the turn
    ends), ``idle`` after the turn, and gone at once when the process is killed."""
    hrig, pane, driver = world.hrig, world.hrig.first_pane, world.driver
    hrig.start_daemon()
    driver.prepare_tui(hrig)
    target = hrig.work / "approved.txt"
    seen: dict[str, tuple[str, float]] = {}

    def decide(request: Recorded) -> Turn:
        if driver.write_tool not in driver.tool_names(request.body):
            return Text("aside")  # a side request, not the chat's
        if driver.tool_results(request.body):
            seen.setdefault("after the tool", world.hrig.state_within("working"))
            return Text("the file is written")
        seen.setdefault("asking the model", world.hrig.state_within("working"))
        return driver.write_call(str(target), "approved\n")

    world.script(decide)
    env = driver.env(hrig, world.stub)
    tag = hrig.start_in_pane(pane, driver.asking_tui_argv(), env, interactive=True)
    poll(
        lambda: any(h.event == "SessionStart" for h in hrig.hook_runs()),
        60,
        "the TUI's session start",
    )
    hrig.send_keys(pane, "-l", "write the file")
    hrig.wait_screen(pane, "write the file")
    hrig.send_keys(pane, "Enter")
    hrig.wait_screen(pane, driver.asking_words)
    agents_poll(world, lambda f: [a["state"] for a in f] == ["waiting"], "the agent waiting")
    asking = one_agent(world)
    assert asking is not None and asking["pane"] == pane, asking
    assert asking["reason"] == driver.asking_reason, f"{asking}\n{world.why()}"
    if driver.name == "claude":
        # Its permission_prompt Notification (some seconds into the dialog) names no tool:
        # the reason keeps the one its PermissionRequest named.
        poll(
            lambda: any(h.event == "Notification" for h in hrig.hook_runs()),
            30,
            "Claude Code's permission notification",
        )
        still = one_agent(world)
        assert still is not None and still["state"] == "waiting", f"{still}\n{world.why()}"
        assert still["reason"] == asking["reason"], f"{still}\n{world.why()}"
    assert not target.exists()
    hrig.send_keys(pane, "Enter")  # the first choice: allow once
    hrig.wait_screen(pane, "the file is written")
    agent = idle_agent(world, pane)
    assert target.read_text() == "approved\n"
    assert seen["asking the model"][0] == "working", f"{seen}\n{world.why()}"
    assert seen["after the tool"][0] == "working", f"{seen}\n{world.why()}"
    events = [h.event for h in hrig.hook_runs()]
    ended, took = hrig.kill_agent_process(agent["pid"])
    hrig.wait(tag, 30)
    world.notes["agent"] = (
        f"waiting {asking['reason']!r}; working {seen['after the tool'][1] * 1000:.0f} ms into "
        f"the request after the tool; gone {took * 1000:.1f} ms after kill -9, "
        f"{(took - ended) * 1000:.1f} ms after its exit"
    )
    world.notes["agent_events"] = events
    print(world.notes)
    # The daemon's part (SPEC §13: the pidfd); the kernel's ending of the process is not.
    assert took - ended < 0.1, world.notes
    world.record()


def test_split_from_outside(world: World) -> None:
    """3: a split from outside, then a prompt: the new block names the new neighbour."""
    world.hrig.start_daemon()
    pane = world.hrig.first_pane
    first = world.prompt("before the split")
    before = only_block(first[-1].body, pane, world.why())
    assert neighbour(before, "right") == "none"
    new = world.hrig.split(pane, "-h")
    world.hrig.rig.sync()
    after = world.prompt("after the split", resume=world.driver.last_session(world.hrig))
    added = new_blocks(first[-1].body, after[0].body)
    assert len(added) == 1, f"{added}\n{world.why()}"
    assert added[0].pane == pane
    assert neighbour(added[0], "right") == new, f"{added[0].text}\n{world.why()}"
    latest = [b for b in location_blocks(after[0].body) if neighbour(b, "right") == new]
    assert len(latest) == 1, world.why()
    world.record()


def test_tool_call_splits_the_pane(world: World) -> None:
    """4: the model's shell call splits the pane; the next request carries the change (the
    after-tool hook)."""
    world.hrig.start_daemon()
    pane = world.hrig.first_pane
    split = world.hrig.tmux_argv("split-window", "-d", "-h", "-t", pane)
    world.script(world.driver.once_then_text(lambda _: world.driver.shell_call(split)))
    requests = world.prompt("split my pane")
    assert len(requests) >= 2, f"{len(requests)} requests\n{world.why()}"
    (new,) = set(world.hrig.panes()) - {pane}
    first = only_block(requests[0].body, pane, world.why())
    assert neighbour(first, "right") == "none"
    result = requests[1]
    assert world.driver.tool_results(result.body), "the second request has no tool result"
    added = new_blocks(requests[0].body, result.body)
    assert len(added) == 1, f"{added}\n{world.why()}"
    assert added[0].pane == pane
    assert neighbour(added[0], "right") == new, f"{added[0].text}\n{world.why()}"
    world.record()


@pytest.mark.parametrize("terminal", ["no tty", "foreign pty"])
def test_outside_a_pane(world: World, terminal: str) -> None:
    """5: in no pane (a new session with no tty, or on a pty of its own; no $TMUX) nothing is
    told, though the hooks ran."""
    if terminal == "foreign pty" and shutil.which("script") is None:
        pytest.skip("script (util-linux) is not installed")
    world.hrig.start_daemon()
    if terminal != "no tty":
        world.scenario += f", {terminal}"
    requests = world.prompt_outside("no pane here", pty=terminal == "foreign pty")
    for q in requests:
        assert location_blocks(q.body) == [], world.why()
    assert world.hrig.hook_runs(), "the hooks did not run at all"
    assert all(h.out_bytes == 0 for h in world.hrig.hook_runs()), world.why()
    world.record()


def test_daemon_down(world: World) -> None:
    """6: no daemon: the hook computes the location from tmux; the same as with one."""
    pane = world.hrig.first_pane
    world.hrig.split(pane, "-v")
    requests = world.prompt("no daemon")
    for q in requests:
        block = only_block(q.body, pane, world.why())
        assert neighbour(block, "below") != "none"
    world.record()


def test_two_sessions_two_panes(world: World) -> None:
    """7: two harness sessions at once in two panes: each model is told its own pane."""
    world.hrig.start_daemon()
    left = world.hrig.first_pane
    right = world.hrig.split(left, "-h")
    env = world.driver.env(world.hrig, world.stub)
    tags = {
        left: world.hrig.start_in_pane(left, world.driver.argv("prompt alpha"), env),
        right: world.hrig.start_in_pane(right, world.driver.argv("prompt beta"), env),
    }
    for tag in tags.values():
        run = world.hrig.wait(tag)
        assert run.rc == 0, run.err[-3000:]
    requests = world.stub.model_requests()
    world.runs.append((run, requests))
    seen = {left: 0, right: 0}
    for q in requests:
        text = "".join(strings(q.body))
        pane = left if "prompt alpha" in text else right if "prompt beta" in text else None
        if pane is None:
            continue  # a side request that carries neither prompt
        # Told its own pane; told again only when the text changed, and the one change two
        # sessions side by side can make is the other's agent appearing beside it (the
        # neighbour's harness is part of the text, spec §13): "right %1" then "right %1
        # (claude)", as the other session's first hook reports its agent.
        blocks = location_blocks(q.body)
        assert blocks, world.why()
        assert all(b.pane == pane for b in blocks), f"{blocks}\n{world.why()}"
        unannotated = {re.sub(r" \(\w+\)", "", b.neighbors) for b in blocks}
        assert len(blocks) <= 2 and len(unannotated) == 1, f"{blocks}\n{world.why()}"
        seen[pane] += 1
    assert all(seen.values()), f"requests per pane: {seen}"
    world.record()


def test_mcp_where_am_i(world: World) -> None:
    """8: the model calls the MCP server's where_am_i; its result names the pane."""
    world.hrig.start_daemon()
    pane = world.hrig.first_pane
    world.script(world.driver.mcp_decide())
    requests = world.prompt("where am I in tmux?")
    assert len(requests) >= 2, world.why()
    called = [n for q in requests for n in world.driver.tool_names(q.body) if "where_am_i" in n]
    assert called, f"where_am_i was never offered\n{world.why()}"
    world.notes["mcp_tool"] = called[0]
    results = world.driver.tool_results(requests[-1].body)
    assert results, "no tool result"
    answer = results[-1]
    # The tool's text form (tmuxlocd.core.location.text_form): "..., pane <index> <id>".
    assert mcp_names_pane(answer, pane), answer
    assert "not in a tmux pane" not in answer, answer
    world.record()


def test_a_permission_prompt_alerts_once(world: World) -> None:
    """Alerts (spec §14) with the real TUI: its permission dialog, waiting longer than the
    delay, is one desktop notification (a recording ``gdbus``) and one tmux message, none
    repeated while it waits (Claude Code's own ``permission_prompt`` notification comes some
    seconds in), closed when it is approved; the time from the dialog's hook to the alert."""
    from tests.integration.test_alerts_live import calls, methods, recorder

    hrig, pane, driver = world.hrig, world.hrig.first_pane, world.driver
    if driver.name != "claude":
        pytest.skip("shown with Claude Code; the others' waits are the same events")
    bin_dir = recorder(hrig.rig)
    delay = 1.0
    hrig.start_daemon(
        "--alerts",
        "--alert-delay",
        str(delay),
        "--alert-channel",
        "desktop",
        "--alert-channel",
        "tmux",
        path_first=str(bin_dir),
    )
    driver.prepare_tui(hrig)
    target = hrig.work / "alerted.txt"

    def decide(request: Recorded) -> Turn:
        if driver.write_tool not in driver.tool_names(request.body):
            return Text("aside")
        if driver.tool_results(request.body):
            return Text("the file is written")
        return driver.write_call(str(target), "approved\n")

    world.script(decide)
    env = driver.env(hrig, world.stub)
    tag = hrig.start_in_pane(pane, driver.asking_tui_argv(), env, interactive=True)
    poll(lambda: any(h.event == "SessionStart" for h in hrig.hook_runs()), 60, "session start")
    hrig.send_keys(pane, "-l", "write the file")
    hrig.wait_screen(pane, "write the file")
    hrig.send_keys(pane, "Enter")
    hrig.wait_screen(pane, driver.asking_words)
    agents_poll(world, lambda f: [a["state"] for a in f] == ["waiting"], "the agent waiting")
    asked = time.monotonic()  # within a poll of the dialog's hook
    poll(lambda: "Notify" in methods(bin_dir), 30, "the desktop notification", interval=0.02)
    alerted = time.monotonic() - asked
    # Claude Code's own permission_prompt Notification comes some seconds into the dialog:
    # the same wait, no second alert.
    poll(lambda: any(h.event == "Notification" for h in hrig.hook_runs()), 30, "its Notification")
    assert methods(bin_dir).count("Notify") == 1, calls(bin_dir)
    hrig.send_keys(pane, "Enter")  # allow once
    hrig.wait_screen(pane, "the file is written")
    poll(lambda: "CloseNotification" in methods(bin_dir), 15, "the notification closed")
    idle_agent(world, pane)
    assert methods(bin_dir).count("Notify") == 1, calls(bin_dir)
    health = json.loads(
        raw_request(hrig.rig.daemon_socket, "GET", "/v1/health", 5.0).body  # type: ignore[union-attr]
    )
    world.notes["alert"] = (
        f"one notification {alerted * 1000:.0f} ms after the agent was seen waiting "
        f"(delay {delay:g} s); channels {health['alerts']}"
    )
    print(world.notes)
    # Two C-c in a row can land as one (the second before the TUI armed its "again to
    # exit"): its quit command, as the other TUI tests end.
    quit_tui(world, pane, tag)
