"""Floating panes (tmux 3.7+) against real tmux: the events a floating pane brings, the
neighbours of the tiled panes around it, and (next-3.8) panes that float and tile again.

Every change is awaited on the change stream (no ``/v1/sync`` barrier before it), so these
also show the change arrives by the daemon's ordinary paths, not only by a re-read.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import shutil
import struct
import subprocess
import termios
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest

from tests.api.apitest import StreamReader
from tests.integration.test_api_live import Live
from tests.tmuxbin import version_of
from tests.tmuxtest import TMUX, poll

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        TMUX is None or version_of(TMUX) < (3, 7), reason="floating panes came with tmux 3.7"
    ),
]
NEXT = TMUX is not None and version_of(TMUX) >= (3, 8)

Event = dict[str, Any]


class Floating:
    """A live rig with one window of two tiled panes (%0 left, %1 right) and a stream."""

    def __init__(self, live: Live, reader: StreamReader) -> None:
        self.live = live
        self.reader = reader

    async def until(self, match: Callable[[Event], bool], what: str) -> list[Event]:
        """The events up to and including the first that matches (5 s a read)."""
        seen: list[Event] = []
        async with asyncio.timeout(15):
            while True:
                event = await self.reader.event(timeout=15)
                seen.append(event)
                if match(event):
                    return seen
        raise AssertionError(what)  # pragma: no cover (the timeout raises first)

    async def pane(self, pane: str) -> Event:
        return dict(await self.live.get(f"/v1/panes/{pane[1:]}"))

    async def neighbours(self, pane: str) -> Event:
        return dict((await self.pane(pane))["neighbors"])


def about(pane: str, kind: str, check: Callable[[Event], bool] = lambda _: True) -> Any:
    """An event of ``kind`` about ``pane`` whose Location (``last`` for pane.removed) passes."""

    def match(ev: Event) -> bool:
        loc = ev.get("location") or ev.get("last")
        return (
            ev.get("type") == kind and loc is not None and loc["pane"]["id"] == pane and check(loc)
        )

    return match


@pytest.fixture
async def rig() -> AsyncIterator[Floating]:
    live = Live()
    live.srv.start("main", width=80, height=24)
    live.srv.run("split-window", "-h", "-t", "main:0", "cat")
    try:
        await live.start_daemon()
        await live.sync()
        async with live.client.get("http://localhost/v1/events?format=ndjson") as resp:
            reader = StreamReader(resp)
            assert (await reader.event())["type"] == "snapshot"
            yield Floating(live, reader)
    finally:
        with contextlib.suppress(Exception):
            await live.stop_daemon()
        live.srv.kill()
        shutil.rmtree(live.dir, ignore_errors=True)


async def test_a_floating_pane_changes_no_tiled_pane(rig: Floating) -> None:
    before = await rig.neighbours("%0")
    assert before["right"] == ["%1"]
    new = await rig.live.tmux("new-pane", "-t", "%0", "-P", "-F", "#{pane_id}", "cat")
    events = await rig.until(about(new, "pane.added"), "the floating pane's pane.added")
    # Only the new pane and focus: no tiled pane's neighbours change.
    assert not [e for e in events if "neighbors" in e.get("changed", [])]
    added = events[-1]["location"]
    assert added["pane"]["floating"] is True
    assert set(added["pane"]["covers"]) <= {"%0", "%1"} and added["pane"]["covers"]
    assert added["neighbors"] == {"above": [], "below": [], "left": [], "right": []}
    assert await rig.neighbours("%0") == before
    assert "floating" not in (await rig.pane("%0"))["pane"]
    # A second one, off the window's top left corner (negative offsets).
    other = await rig.live.tmux(
        "new-pane", "-t", "%0", "-X", "-5", "-Y", "-3", "-x", "20", "-y", "5",
        "-P", "-F", "#{pane_id}", "cat",
    )  # fmt: skip
    located = (await rig.until(about(other, "pane.added"), "the second floating pane"))[-1]
    assert located["location"]["pane"]["floating"] is True
    assert located["location"]["pane"]["left"] < 0 and located["location"]["pane"]["top"] < 0
    assert await rig.neighbours("%0") == before
    text = await rig.live.client.get(f"http://localhost/v1/panes/{new[1:]}?format=text&neighbors=1")
    body = (await text.text()).splitlines()
    assert body[1].endswith(f"{new} (floating)")
    assert body[3].startswith("neighbors: floating, covers %")
    # Its window zoomed on a tiled pane: the floating panes stay what they are.
    await rig.live.tmux("resize-pane", "-Z", "-t", "%0")
    await rig.until(about("%0", "pane.changed", lambda loc: loc["window"]["zoomed"]), "zoom")
    assert (await rig.pane(new))["pane"]["floating"] is True
    assert await rig.neighbours("%0") == before
    # Killed: the tiled panes are as they were.
    await rig.live.tmux("resize-pane", "-Z", "-t", "%0")
    await rig.live.tmux("kill-pane", "-t", new)
    await rig.until(about(new, "pane.removed"), "the floating pane's pane.removed")
    assert await rig.neighbours("%0") == before


@pytest.mark.skipif(not NEXT, reason="break-pane -W, join-pane of a floating pane: next-3.8")
async def test_a_pane_that_floats_and_tiles_again(rig: Floating) -> None:
    await rig.live.tmux("break-pane", "-W", "-s", "%1", "-x", "20", "-y", "6")
    await rig.until(
        about("%1", "pane.changed", lambda loc: loc["pane"].get("floating", False)),
        "%1 floating",
    )
    assert (await rig.neighbours("%0"))["right"] == []
    assert (await rig.pane("%1"))["pane"]["covers"] == ["%0"]
    # Moved and resized by command: the floating pane's own event; %0 only sees the layout.
    await rig.live.tmux("move-pane", "-t", "%1", "-X", "10", "-Y", "5")
    moved = await rig.until(about("%1", "pane.changed"), "the moved pane")
    # The tiled pane's Location holds the window's layout string, nothing else changes.
    assert all(
        e["changed"] == ["window.layout"] for e in moved if e["location"]["pane"]["id"] != "%1"
    )
    await rig.live.tmux("resize-pane", "-t", "%1", "-x", "30", "-y", "8")
    resized = await rig.until(
        about("%1", "pane.changed", lambda loc: loc["pane"]["width"] == 28), "the resized pane"
    )
    assert all(
        e["changed"] == ["window.layout"] for e in resized if e["location"]["pane"]["id"] != "%1"
    )
    # Tiled again: %0 has it on its right once more.
    await rig.live.tmux("join-pane", "-h", "-s", "%1", "-t", "%0")
    await rig.until(
        about("%0", "pane.changed", lambda loc: loc["neighbors"]["right"] == ["%1"]),
        "%1 tiled again beside %0",
    )
    tiled = await rig.pane("%1")
    assert "floating" not in tiled["pane"] and tiled["neighbors"]["left"] == ["%0"]
    # A modal pane floats too.
    modal = await rig.live.tmux(
        "new-pane", "-O", "-t", "%0", "-x", "30", "-y", "6", "-P", "-F", "#{pane_id}", "cat"
    )
    added = await rig.until(about(modal, "pane.added"), "the modal pane")
    assert added[-1]["location"]["pane"]["floating"] is True
    assert (await rig.neighbours("%0"))["right"] == ["%1"]


async def test_a_floating_pane_dragged_with_the_mouse(rig: Floating) -> None:
    """tmux announces a floating pane moved with the mouse to nobody (no %layout-change):
    the safety net's digest holds every layout, so the move still arrives, unasked."""
    live = rig.live
    await live.tmux("set-option", "-g", "mouse", "on")
    new = await live.tmux(
        "new-pane", "-t", "%0", "-X", "10", "-Y", "5", "-x", "30", "-y", "6",
        "-P", "-F", "#{pane_id}", "cat",
    )  # fmt: skip
    added = (await rig.until(about(new, "pane.added"), "the floating pane"))[-1]["location"]
    left, top = added["pane"]["left"], added["pane"]["top"]
    with terminal(live) as write:
        # Press on the pane's top border, drag 8 cells right and 4 down, release (SGR mouse).
        x, y = left + 5 + 1, top - 1 + 1  # 1-based terminal cells
        write(f"\033[<0;{x};{y}M")
        write(f"\033[<32;{x + 4};{y + 2}M")
        write(f"\033[<32;{x + 8};{y + 4}M")
        write(f"\033[<0;{x + 8};{y + 4}m")
        moved = await rig.until(
            about(new, "pane.changed", lambda loc: loc["pane"]["left"] != left),
            "the dragged pane's new place",
        )
    where = moved[-1]["location"]["pane"]
    assert (where["left"], where["top"]) == (left + 8, top + 4)
    assert where["floating"] is True
    assert (await rig.neighbours("%0"))["right"] == ["%1"]


@contextlib.contextmanager
def terminal(live: Live) -> Iterator[Callable[[str], None]]:
    """A terminal client (a pty of its own, 80x24) attached to ``main``: what it writes is
    what a person's terminal sends tmux."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    proc = subprocess.Popen(
        live.srv.argv("attach-session", "-t", "main"),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**env, "TERM": "xterm-256color"},
        start_new_session=True,
    )
    os.close(slave)
    stop = threading.Event()

    def drain() -> None:  # a terminal that is never read would stall tmux's writes to it
        while not stop.is_set():
            try:
                if not os.read(master, 65536):
                    return
            except OSError:
                return

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        poll(lambda: "0" in live.srv.run("list-clients", "-F", "#{client_control_mode}"), 10,
             "the terminal client")  # fmt: skip

        def write(text: str) -> None:
            os.write(master, text.encode())

        yield write
    finally:
        stop.set()
        proc.kill()
        proc.wait(10)
        os.close(master)
        reader.join(5)
