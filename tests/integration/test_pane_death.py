"""A pane's death under ``remain-on-exit on``, on real tmux: seen by the daemon at once, with
its exit status, in every answer that shows the pane -- without anyone asking for a sync.

Each test waits on a condition with a deadline far below the safety net's worst case and
the old model's 45 s and more; nothing here sleeps, and no time is asserted (the timings
are bench.pane_death's).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import pytest

from tests.daemontest import Daemon, Rig, private_rig, running_daemon
from tests.tmuxbin import version_of
from tests.tmuxtest import TMUX, wait_until

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]

# How long a death may take to show here.  Well under the safety net's period plus a re-read
# on a loaded machine; the old daemon showed none of these within 45 s.
DEADLINE_S = 5.0


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with private_rig(start=True) as rig:
        rig.tmux.run("new-session", "-d", "-s", "other", "-x", "80", "-y", "24")
        rig.tmux.run("set-option", "-g", "remain-on-exit", "on")
        yield rig


@pytest.fixture(scope="module")
def daemon(rig: Rig) -> Iterator[Daemon]:
    with running_daemon(rig) as d:
        yield d


@pytest.fixture
async def http(daemon: Daemon) -> AsyncIterator[aiohttp.ClientSession]:
    conn = aiohttp.UnixConnector(path=daemon.socket, limit=0)
    async with aiohttp.ClientSession(connector=conn, base_url="http://localhost") as session:
        yield session


def new_pane(rig: Rig, session: str, command: str) -> str:
    return rig.tmux.run(
        "new-window", "-d", "-t", f"{session}:", "-P", "-F", "#{pane_id}", command
    ).strip()


async def pane_json(http: aiohttp.ClientSession, pane: str) -> dict[str, Any] | None:
    async with http.get(f"/v1/panes/{pane.lstrip('%')}") as resp:
        if resp.status == 404:
            return None
        assert resp.status == 200, await resp.text()
        body = await resp.json()
        assert isinstance(body, dict)
        return body


async def known(http: aiohttp.ClientSession, pane: str) -> dict[str, Any]:
    """The pane's Location once the daemon has it (its window's announcement, no sync)."""
    found: dict[str, Any] = {}

    async def there() -> bool:
        body = await pane_json(http, pane)
        if body is not None:
            found.update(body)
        return body is not None

    await wait_until(there, DEADLINE_S, f"the daemon to know {pane}")
    return found


async def dead(http: aiohttp.ClientSession, pane: str, **want: object) -> dict[str, Any]:
    """The pane's Location once the daemon shows it dead with ``want`` (no sync asked)."""
    seen: dict[str, Any] = {}

    async def shown() -> bool:
        body = await pane_json(http, pane)
        seen.clear()
        if body is not None:
            seen.update(body)
        p = body["pane"] if body is not None else {}
        return bool(p.get("dead")) and all(p.get(k) == v for k, v in want.items())

    try:
        await wait_until(shown, DEADLINE_S, f"{pane} dead with {want}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last seen: {seen.get('pane')}") from None
    return seen


def signals_known(rig: Rig) -> bool:
    """tmux 3.3 and later have ``pane_dead_signal``; 3.2 has no word for a signal death."""
    return version_of(TMUX) >= (3, 3)


@pytest.mark.parametrize("session", ["main", "other"])
async def test_exit_status_seen_without_sync(
    rig: Rig, daemon: Daemon, http: aiohttp.ClientSession, session: str
) -> None:
    """``exit 3`` in a pane of the observer's session and of another: the daemon shows the pane
    dead with exit_status 3 in GET /v1/panes/{pane} and in the tree, with no sync asked."""
    pane = new_pane(rig, session, "read x; exit 3")
    try:
        before = await known(http, pane)
        assert "dead" not in before["pane"] and "exit_status" not in before["pane"], before
        rig.tmux.run("send-keys", "-t", pane, "Enter")
        loc = await dead(http, pane, exit_status=3)
        assert loc["pane"].get("exit_signal") is None, loc
        async with http.get("/v1/tree") as resp:
            tree = await resp.text()
        assert '"exit_status":3' in tree.replace(" ", ""), tree[:2000]
    finally:
        rig.tmux.run("kill-pane", "-t", pane)


async def test_signal_death_seen_without_sync(
    rig: Rig, daemon: Daemon, http: aiohttp.ClientSession
) -> None:
    """A pane's process killed by SIGTERM: dead, exit_signal 15 and exit_status null (tmux
    3.2, which has no word for the signal: both null)."""
    pane = new_pane(rig, "other", "exec sleep 1000")
    try:
        await known(http, pane)
        pid = int(rig.tmux.display(pane, "#{pane_pid}"))
        os.kill(pid, 15)
        want: dict[str, object] = {"exit_signal": 15} if signals_known(rig) else {}
        loc = await dead(http, pane, **want)
        assert loc["pane"].get("exit_status") is None, loc
        if not signals_known(rig):
            assert loc["pane"].get("exit_signal") is None, loc
    finally:
        rig.tmux.run("kill-pane", "-t", pane)


async def test_stream_tells_death(rig: Rig, daemon: Daemon, http: aiohttp.ClientSession) -> None:
    """A subscriber hears the death as a pane.changed event whose Location carries the status."""
    pane = new_pane(rig, "other", "read x; exit 7")
    try:
        await known(http, pane)
        async with http.get(
            "/v1/events", params={"pane": pane, "format": "ndjson"}, timeout=None
        ) as resp:
            assert resp.status == 200, await resp.text()
            rig.tmux.run("send-keys", "-t", pane, "Enter")

            async def told() -> dict[str, Any]:
                import json

                async for raw in resp.content:
                    line = raw.decode().strip()
                    if not line:
                        continue
                    event = json.loads(line)
                    loc = event.get("location") or {}
                    p = loc.get("pane") or {}
                    if p.get("dead") and p.get("exit_status") == 7:
                        assert isinstance(event, dict)
                        return event
                raise AssertionError("the stream ended")

            event = await asyncio.wait_for(told(), DEADLINE_S)
        assert event["type"] == "pane.changed", event
        assert "pane.dead" in event["changed"], event
    finally:
        rig.tmux.run("kill-pane", "-t", pane)


@pytest.mark.parametrize("when", ["before", "after"])
async def test_wait_exit_status_of_short_command(
    rig: Rig, daemon: Daemon, http: aiohttp.ClientSession, when: str
) -> None:
    """``sh -c 'sleep 0.5; exit 3'``: wait?until=exit answers exit_status 3, whether the wait
    starts while the command runs or only after tmux has reaped it (the model may not show
    the death yet: the pane's process is gone, and no pidfd can be had on it)."""
    pane = new_pane(rig, "other", "sh -c 'sleep 0.5; exit 3'")
    try:
        await known(http, pane)
        if when == "after":
            await wait_until(
                lambda: rig.tmux.display(pane, "#{pane_dead}") == "1",
                DEADLINE_S,
                f"tmux to show {pane} dead",
            )
        async with http.get(
            f"/v1/panes/{pane.lstrip('%')}/wait", params={"until": "exit", "timeout_s": "10"}
        ) as resp:
            assert resp.status == 200, await resp.text()
            answer = await resp.json()
        assert answer["outcome"] == "exit" and answer["met"], answer
        assert answer["activity"]["exit_status"] == 3, answer
        assert answer["location"]["pane"]["exit_status"] == 3, answer
    finally:
        rig.tmux.run("kill-pane", "-t", pane)
