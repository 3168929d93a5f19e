"""A server of several sessions, in the process shape of Codex's shared app-server, built on a
real tmux (spec §2, ``verified_by: client``): a detached process with no tty whose command
line is an app-server's, listening on a Unix socket; clients in panes connected to it; and
the hooks it runs as its children, asking the daemon with their session.  No Codex needed,
so every tmux release runs it; tests/e2e runs the real Codex TUI.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.test_api_live import Live, live_rig
from tests.tmuxtest import TMUX, wait_until
from tmuxlocd.host.system import HOST

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None or shutil.which("curl") is None, reason="needs tmux, curl"),
]

# The server: accepts clients; a line "ask <session> <bind> <out>" from any of them runs a
# hook as its child, which asks the daemon as tmuxlocd context does.
SERVER = r"""
import os, socket, subprocess, sys, threading
path, daemon = sys.argv[4], sys.argv[5]
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(8)
print("ready", flush=True)
def serve(conn):
    for line in conn.makefile():
        _, session, bind, out = line.split()
        url = "http://localhost/v1/self?accept=ancestor"
        url += f"&session=codex:{session}" if session != "-" else ""
        url += "&bind=1" if bind == "1" else ""
        with open(out + ".tmp", "wb") as f:
            subprocess.run(["curl", "-s", "--unix-socket", daemon, url], stdout=f)
        os.rename(out + ".tmp", out)
while True:
    conn, _ = srv.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""

# A client (a TUI): connects, then passes on what is written to its FIFO.
CLIENT = r"""
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
while True:  # each writer closes the FIFO: open it again, and stay connected
    with open(sys.argv[2]) as fifo:
        for line in fifo:
            s.sendall(line.encode())
"""


class Shared:
    def __init__(self, live: Live) -> None:
        self.live = live
        self.sock = str(live.dir / "app.sock")
        self.n = 0
        script = live.dir / "server.py"
        script.write_text(SERVER)
        # Detached, no tty, as Codex's TUI starts its app-server; the words of its command
        # line are an app-server's (tmuxlocd.core.shared.serves_sessions).
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(script),
                "app-server",
                "--listen",
                "unix://",
                self.sock,
                live.socket,
            ],
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"

    async def client(self) -> tuple[str, Path]:
        """A client in a new window's pane: (pane id, the FIFO that speaks through it)."""
        self.n += 1
        fifo = self.live.dir / f"client{self.n}.fifo"
        os.mkfifo(fifo)
        script = self.live.dir / "client.py"
        script.write_text(CLIENT)
        pane, _ = await self.live.in_new_window(f"{sys.executable} {script} {self.sock} {fifo}")
        await wait_until(lambda: self._connected(pane), 15, what=f"the client in {pane} connected")
        return pane, fifo

    def _connected(self, pane: str) -> bool:
        # The kernel's pairing as Linux shows it (the test's own look, under either host).
        from tmuxlocd.host import linux_shared

        return bool(linux_shared.clients_of(self.proc.pid))

    async def ask(self, via: Path, session: str, *, bind: bool = False) -> dict[str, Any]:
        """The answer to a hook of ``session`` that the server runs, asked through a client."""
        self.n += 1
        out = self.live.dir / f"answer{self.n}.json"
        line = f"ask {session} {int(bind)} {out}\n"
        # Off the loop: the daemon under test answers on it (the client holds the FIFO open).
        await asyncio.to_thread(_write, via, line)
        await wait_until(out.exists, 15, what=f"the hook's answer for {session}")
        return dict(json.loads(out.read_text()))

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def _write(path: Path, line: str) -> None:
    with open(path, "w") as f:
        f.write(line)


@pytest.fixture
async def shared_rig() -> AsyncIterator[tuple[Live, Shared]]:
    async with live_rig() as live:
        server = Shared(live)
        try:
            yield live, server
        finally:
            server.close()


def placed(answer: dict[str, Any]) -> str | None:
    loc = answer["location"]
    return None if loc is None else str(loc["pane"]["id"])


async def test_a_session_is_placed_by_the_one_client_it_began_with(
    shared_rig: tuple[Live, Shared],
) -> None:
    live, server = shared_rig
    a, fifo_a = await server.client()
    first = await server.ask(fifo_a, "s1", bind=True)
    if HOST.name != "linux":
        # The portable host cannot tell a server's clients (no view of socket pairs): no
        # session is placed by one, the first included; never a pane it cannot prove.
        for answer in (first, await server.ask(fifo_a, "s1")):
            assert (placed(answer), answer["reason"]) == (None, "shared_ancestor"), answer
        return
    assert (first["verified_by"], placed(first)) == ("client", a), first
    assert first["caller"]["client"] is not None and first["caller"]["env_pane"] is None
    # A second client: a session that begins now cannot be told; the first keeps its pane.
    b, fifo_b = await server.client()
    second = await server.ask(fifo_b, "s2", bind=True)
    assert (placed(second), second["reason"]) == (None, "shared_ancestor"), second
    assert "pid" in second["hint"]
    again = await server.ask(fifo_b, "s1")  # whichever client relays it: s1 is a's
    assert placed(again) == a, again
    # The first client goes: its session is placed by nobody, not by the one left; the
    # session begun beside it stays unplaced too.
    pane_pid = int(await live.tmux("display", "-p", "-t", a, "#{pane_pid}"))
    os.kill(pane_pid, signal.SIGKILL)
    await wait_until(lambda: len(_clients(server)) == 1, 15, what="one client left")
    for session in ("s1", "s2"):
        answer = await server.ask(fifo_b, session)
        assert placed(answer) is None, (session, answer)
    # A session that begins now, beside the one client left, is its.
    fresh = await server.ask(fifo_b, "s3", bind=True)
    assert (fresh["verified_by"], placed(fresh)) == ("client", b), fresh


def _clients(server: Shared) -> list[int]:
    from tmuxlocd.host import linux_shared

    return linux_shared.clients_of(server.proc.pid) or []


async def test_without_a_session_nothing_is_placed_by_a_client(
    shared_rig: tuple[Live, Shared],
) -> None:
    """A hook below the server that names no session (an MCP server, say) is never placed
    by the server's one client: which session it is for cannot be known."""
    _, server = shared_rig
    _, fifo = await server.client()
    answer = await server.ask(fifo, "-")
    assert (placed(answer), answer["reason"]) == (None, "shared_ancestor"), answer
