"""A tty is not a pane: a dead pane (``remain-on-exit on``) keeps naming the pty that the
kernel gives to the next pane, or to a process in no pane at all.  Built on a real tmux: the
dead pane and the new pane (or a pty outside tmux) really share a pty number, and the
answers come from the daemon and from ``tmuxlocd where`` without one (spec §2).

The kernel gives the lowest free pty number, so the new pty takes the dead pane's number
unless another process (another test lane) takes it first: each case retries a bounded
number of times until the numbers agree, and fails if they never do.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import shlex
import shutil
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.integration.test_api_live import Live, live_rig
from tests.tmuxtest import TMUX, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None or shutil.which("curl") is None, reason="needs tmux and curl"),
]

ATTEMPTS = 20
CLI = [sys.executable, "-m", "tmuxlocd"]


@pytest.fixture
async def live() -> AsyncIterator[Live]:
    async with live_rig("remain-on-exit", "on") as rig:
        yield rig


async def dead_pane(live: Live) -> tuple[str, str]:
    """A window whose command ended at once, kept by remain-on-exit: (pane id, its tty),
    once tmux shows it dead (its pty closed, the number free)."""
    out = await live.tmux("new-window", "-d", "-P", "-F", "#{pane_id} #{pane_tty}", "true")
    pane, tty = out.split()

    async def dead() -> bool:
        return await live.tmux("display", "-p", "-t", pane, "#{pane_dead}") == "1"

    await wait_until(dead, 15, what=f"{pane} dead")
    return pane, tty


async def test_a_new_pane_on_a_dead_panes_pty_is_told_its_own_pane(live: Live) -> None:
    """The QA case: ``new-window -d true`` dies; ``new-window -n fresh`` gets its pty; from
    fresh, the daemon, ``/v1/panes/self`` and ``where`` without a daemon name fresh."""
    out_self, out_panes, out_where = (live.dir / n for n in ("self", "panes", "where"))
    answer_files = (out_self, out_panes, out_where)
    no_daemon = shlex.join(
        ["env", f"TMUXLOCD_SOCKET={live.dir}/none.sock", *CLI, "where", "--json"]
    )
    for attempt in range(ATTEMPTS):
        dead, dead_tty = await dead_pane(live)
        channel = f"go{attempt}"
        command = "; ".join(
            [
                shlex.join([*live.srv.argv("wait-for", channel)]),
                f"{live.curl('/v1/self?fresh=1')} >{out_self}",
                f"{live.curl('/v1/panes/self')} >{out_panes}",
                f"{no_daemon} >{out_where} 2>/dev/null",
                "sleep 600",
            ]
        )
        out = await live.tmux(
            "new-window", "-d", "-n", "fresh", "-P", "-F", "#{pane_id} #{pane_tty}", command
        )
        fresh, fresh_tty = out.split()
        if fresh_tty == dead_tty:
            break
        await live.tmux("wait-for", "-S", channel)  # let it go; try again
        await live.tmux("kill-window", "-t", fresh)
    else:
        pytest.fail(f"no new pane got a dead pane's pty in {ATTEMPTS} tries")
    await live.tmux("wait-for", "-S", channel)
    answers: list[dict[str, Any]] = [await live.answer(path) for path in answer_files]
    self_answer, panes_answer, where_answer = answers
    for answer in (self_answer, where_answer):
        assert answer["verified_by"] == "tty", answer
        assert answer["location"]["pane"]["id"] == fresh, (dead, answer)
        assert answer["caller"]["ancestor_pane"] == fresh
        assert answer["caller"]["tty"] == dead_tty
    assert panes_answer["pane"]["id"] == fresh, panes_answer


async def test_a_pty_outside_tmux_on_a_dead_panes_number_is_in_no_pane(live: Live) -> None:
    """A ``pty.fork()`` child outside tmux (no TMUX variables) whose pty number a dead pane
    still names: in no pane (``tty_reused``), and no ancestor pane either."""
    out = live.dir / "outside.json"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    argv = ["sh", "-c", f"{live.curl('/v1/self?fresh=1&accept=ancestor')} >{out}"]
    for _ in range(ATTEMPTS):
        dead, dead_tty = await dead_pane(live)
        pid, fd = pty.fork()
        if pid == 0:  # the child: its controlling tty is the new pty
            try:
                if os.ttyname(0) == dead_tty:
                    os.execvpe(argv[0], argv, env)
            finally:
                os._exit(1)
        try:
            _, status = await asyncio.to_thread(os.waitpid, pid, 0)
        finally:
            os.close(fd)
        if os.waitstatus_to_exitcode(status) == 0:
            break
        await live.tmux("kill-window", "-t", dead)
    else:
        pytest.fail(f"no pty outside tmux got a dead pane's number in {ATTEMPTS} tries")
    answer = json.loads(out.read_text())
    assert (answer["inside_tmux"], answer["verified_by"], answer["location"]) == (
        False,
        None,
        None,
    )
    assert answer["reason"] == "tty_reused" and dead in answer["hint"]
    assert answer["caller"]["tty"] == dead_tty
    assert answer["caller"]["ancestor_pane"] is None
