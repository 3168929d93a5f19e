"""The daemon side of agents (``tmuxlocd.daemon.agent_registry``) without tmux: the walk to the
harness process, the saved file, and the pidfd that ends an agent with its process."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from tmuxlocd.core.agents import Agent, Proc
from tmuxlocd.core.events import AgentStateChanged
from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.daemon.agent_registry import (
    AgentRegistry,
    decode_saved,
    encode_saved,
    harness_process,
)
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.host.identity import read_stat

PANE_TTY = 34816
SERVER = 10

# pid -> (ppid, tty, comm): tmux server 10, the pane's shell 20, the harness 30, the shell
# the harness runs hooks with 40, the hook 50.
TREE = {
    10: (1, 0, "tmux: server"),
    20: (10, PANE_TTY, "bash"),
    30: (20, PANE_TTY, "claude"),
    40: (30, PANE_TTY, "sh"),
    50: (40, PANE_TTY, "python3"),
}


def walk(
    tree: dict[int, tuple[int, int, str]], caller: int, shared: frozenset[int] = frozenset()
) -> int:
    def stat_of(pid: int) -> ProcStat | None:
        row = tree.get(pid)
        return None if row is None else ProcStat(pid, row[0], row[1], pid * 7)

    found = harness_process(
        caller, PANE_TTY, SERVER, stat_of, lambda p: tree[p][2], lambda p: p in shared
    )
    return 0 if found is None else found.pid


def test_the_harness_is_the_nearest_ancestor_in_the_pane_that_is_no_shell() -> None:
    assert walk(TREE, 50) == 30


def test_only_shells_up_to_the_server_is_none() -> None:
    tree = {k: v for k, v in TREE.items() if k != 30} | {40: (20, PANE_TTY, "sh")}
    assert walk(tree, 50) == 0


def test_a_hook_without_a_tty_still_finds_its_harness() -> None:
    tree = dict(TREE) | {40: (30, 0, "sh"), 50: (40, 0, "python3")}  # setsid'd hook
    assert walk(tree, 50) == 30


def test_a_process_serving_several_sessions_ends_the_walk() -> None:
    tree = dict(TREE) | {40: (30, 0, "codex"), 50: (40, 0, "python3")}
    assert walk(tree, 50, shared=frozenset({40})) == 0


def test_a_harness_helper_process_is_passed_over() -> None:
    """Cline CLI runs its plugins (and so the hook) in a ``node`` child on its tty: the
    harness is the process above it."""
    tree = dict(TREE) | {40: (30, PANE_TTY, "node"), 50: (40, 0, "python3")}
    assert walk(tree, 50) == 40  # any harness: the node process is the harness

    def stat_of(pid: int) -> ProcStat | None:
        row = tree.get(pid)
        return None if row is None else ProcStat(pid, row[0], row[1], pid * 7)

    found = harness_process(
        50,
        PANE_TTY,
        SERVER,
        stat_of,
        lambda p: tree[p][2],
        lambda p: False,
        helpers=frozenset({"node"}),
    )
    assert found is not None and found.pid == 30


def test_a_process_on_another_tty_is_not_the_harness() -> None:
    tree = dict(TREE) | {30: (20, PANE_TTY + 1, "ssh")}
    assert walk(tree, 50) == 0


def test_the_saved_file_round_trips_and_refuses_garbage() -> None:
    found = [Agent("claude", "s", "/sock", "%3", Proc(5, 9), "waiting", "permission", 1.5)]
    assert decode_saved(encode_saved(found)) == found
    assert decode_saved(b"not json") == []
    odd = encode_saved([Agent("claude", "s", "/sock", "%3", Proc(5, 9), "bogus", "", 1.0)])
    assert decode_saved(odd) == []


@pytest.mark.parametrize("same_start", [True, False])
async def test_a_pidfd_ends_the_agent_with_its_process(same_start: bool) -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; sys.stdin.read()", stdin=asyncio.subprocess.PIPE
    )
    try:
        stat = read_stat(child.pid)
        assert stat is not None
        hub = Hub()
        registry = AgentRegistry(hub)
        start = stat.starttime if same_start else stat.starttime + 1
        # A reused pid (another start time) is never watched.
        assert registry._watch(Proc(child.pid, start)) is same_start
        if not same_start:
            return
        registry.agents.load(
            [Agent("codex", "s", "/sock", "%1", Proc(child.pid, start), "idle", "", 0.0)]
        )
        with hub.subscribe(lambda event: isinstance(event, AgentStateChanged)) as sub:
            assert child.stdin is not None
            child.stdin.close()
            await child.wait()
            async with asyncio.timeout(10):
                await sub.wait()
            [item] = sub.drain()
        assert isinstance(item.event, AgentStateChanged)
        assert (item.event.agent.state, item.event.before) == ("gone", "idle")
        assert len(registry.agents) == 0
        await registry.close()
    finally:
        if child.returncode is None:
            child.kill()
            await child.wait()


async def test_changes_are_saved_together_and_at_once_on_close(tmp_path: Path) -> None:
    from tests.tmuxtest import wait_until
    from tmuxlocd.core.agents import Report

    path = tmp_path / "agents.json"
    registry = AgentRegistry(Hub(), path=str(path))
    proc = Proc(123, 4)

    def report(state: str, session: str) -> None:
        changes = registry.agents.apply(
            Report("claude", session, "x", state), "/sock", "%1", proc, 1.0
        )
        registry._changed(changes)

    report("working", "a")
    report("waiting", "a")
    assert not path.exists()  # not per report
    await wait_until(path.exists, 5, "the agents file")
    [saved] = decode_saved(path.read_bytes())
    assert (saved.session_id, saved.state) == ("a", "waiting")
    report("idle", "a")
    await registry.close()  # a stopping daemon saves what is pending at once
    assert [a.state for a in decode_saved(path.read_bytes())] == ["idle"]
