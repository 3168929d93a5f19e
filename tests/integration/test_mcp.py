"""``tmuxlocd mcp`` driven through the MCP SDK's own stdio client, next to a real daemon.

The MCP server's identity is its controlling tty, so the client runs inside a pane of a private
tmux server (``mcp_probe.py``, started with ``new-window``) and spawns the server as its child;
the probe writes what it saw to a JSON file that the test waits for.  The probe's pane is the
top-left pane of a 2x2 grid, built after the probe started and before it is let go.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import tmuxbin
from tests.tmuxbin import before_new_session
from tests.tmuxtest import TMUX, TmuxServer

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
    pytest.mark.timeout(120),
]

mcp = pytest.importorskip("mcp")

from tmuxlocd.clients.client import Client, DaemonUnavailable  # noqa: E402
from tmuxlocd.clients.mcp import LIVE_OFF, SELF_URI, WINDOW_URI  # noqa: E402

PYTHON = sys.executable
REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "tests" / "integration" / "mcp_probe.py"


def poll(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.01)


class World:
    """A private tmux server (in a private socket directory, the only one a scan can find) and
    a daemon watching it."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tlm-", dir="/tmp"))
        sockdir = self.root / f"tmux-{os.getuid()}"
        sockdir.mkdir(mode=0o700)
        self.tmux = TmuxServer(sockdir)
        self.daemon_socket = str(self.root / "d.sock")
        self.daemon: subprocess.Popen[bytes] | None = None
        self.runs = 0

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        env.update(
            TMUXLOCD_SOCKET=self.daemon_socket,
            TMUX_TMPDIR=str(self.root),
            XDG_CONFIG_HOME=str(self.root / "config"),
            PYTHONPATH=str(REPO),
        )
        return env

    def start(self) -> None:
        subprocess.run(
            self.tmux.argv(
                *before_new_session(), "new-session", "-d", "-s", "main", "-x", "160", "-y", "48"
            ),
            env=self.env(),
            check=True,
            timeout=20,
        )
        self.tmux.record_pid()
        self.tmux.run("set-option", "-g", "automatic-rename", "off")
        self.tmux.run("set-window-option", "-g", "automatic-rename", "off")
        self.tmux.run("set-option", "-g", "default-shell", "/bin/sh")
        self.tmux.run("new-session", "-d", "-s", "other", "-x", "160", "-y", "48", "cat")
        log = open(self.root / "daemon.log", "wb")  # noqa: SIM115 - kept for the daemon's life
        self.daemon = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "tmuxlocd",
                "serve",
                "-S",
                self.tmux.socket_path,
                "--listen",
                f"unix:{self.daemon_socket}",
            ],
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=REPO,
        )
        log.close()
        poll(self.healthy, 20, "the daemon")

    def healthy(self) -> bool:
        assert self.daemon is not None
        if self.daemon.poll() is not None:
            raise AssertionError("the daemon exited:\n" + self.daemon_log())
        try:
            with Client(self.daemon_socket, timeout=2) as client:
                return client.health().status == "ok"
        except DaemonUnavailable:
            return False

    def daemon_log(self) -> str:
        return (self.root / "daemon.log").read_text(errors="replace")

    def sync(self) -> None:
        with Client(self.daemon_socket) as client:
            client.sync()

    def stop(self) -> None:
        if self.daemon is not None and self.daemon.poll() is None:
            self.daemon.send_signal(signal.SIGTERM)
            try:
                self.daemon.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.daemon.kill()
                self.daemon.wait()
        self.tmux.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def pane_count(self) -> int:
        return len(self.tmux.run("list-panes", "-a", "-F", "#{pane_id}").split())

    def probe(
        self, scenario: str = "basic", spawn: str = "tty", *, daemon: str | None = None
    ) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
        """Run the probe in the top-left pane of a new 2x2 window: what it saw with each way
        of spawning the server, and the grid (me, below, right, below_right)."""
        self.runs += 1
        tag = f"p{self.runs}"
        out, err, go = (self.root / f"{tag}.{x}" for x in ("json", "err", "go"))
        other = self.tmux.display("other:", "#{pane_id}")
        argv = [
            PYTHON,
            str(PROBE),
            "--out",
            str(out),
            "--daemon",
            daemon or self.daemon_socket,
            "--tmux",
            self.tmux.socket_path,
            "--scenario",
            scenario,
            "--spawn",
            spawn,
            "--go",
            str(go),
            "--other",
            other,
        ]
        command = " ".join(shlex.quote(a) for a in argv) + f" 2>>{shlex.quote(str(err))}"
        new = ("-d", "-P", "-F", "#{pane_id}")
        grid = {"me": self.tmux.run("new-window", *new, "-t", "main:", "-n", tag, command).strip()}
        grid["below"] = self.tmux.run("split-window", "-v", *new, "-t", grid["me"], "cat").strip()
        grid["right"] = self.tmux.run("split-window", "-h", *new, "-t", grid["me"], "cat").strip()
        grid["below_right"] = self.tmux.run(
            "split-window", "-h", *new, "-t", grid["below"], "cat"
        ).strip()
        # The daemon has the grid (POST /v1/sync is a barrier) before the probe is let go.
        self.sync()
        tmp = go.with_suffix(".tmp")
        tmp.write_text(json.dumps(grid))
        tmp.rename(go)
        poll(out.exists, 60, f"the probe's result ({err})")
        result: dict[str, Any] = json.loads(out.read_text())
        if "error" in result:
            logs = "".join(
                f"\n{path.name}:\n" + path.read_text(errors="replace")
                for path in sorted(self.root.glob(f"{tag}.err*"))
            )
            raise AssertionError("the probe failed:\n" + result["error"] + logs)
        assert result["pane"] == grid["me"]
        return result["runs"], grid


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    w = World()
    try:
        w.start()
        yield w
    finally:
        w.stop()


Run = dict[str, Any]
Grid = dict[str, str]


@pytest.fixture(scope="module")
def basic(world: World) -> tuple[Run, Grid]:
    """One run of the basic scenario with the agent's tty, on a server of 100 panes (the
    token-cost figures use it too)."""
    _top_up(world, 96)  # the probe's own window brings 4 more
    runs, grid = world.probe("basic", "tty")
    return runs["tty"], grid


def answer(run: Run, key: str) -> str:
    return str(run["answers"][key]["text"][0])


def names_pane(text: str, pane: str) -> bool:
    """The second line of a text form names ``pane`` as the pane."""
    return text.split("\n")[1].endswith(f" {pane}")


# ----------------------------------------------------------------------------------------------


def test_tools_resources_and_instructions(basic: tuple[Run, Grid]) -> None:
    run, _ = basic
    assert [t["name"] for t in run["tools"]] == [
        "where_am_i",
        "find_adjacent_panes",
        "list_panes",
        "list_agents",
        "wait_for_pane",
    ]
    for tool in run["tools"]:
        assert tool["annotations"]["readOnlyHint"] is True
        assert tool["annotations"]["openWorldHint"] is False
        # A wait's answer depends on when it is asked: not idempotent; the others are.
        assert tool["annotations"]["idempotentHint"] is (tool["name"] != "wait_for_pane")
        assert tool["annotations"]["destructiveHint"] is False
    where_tool = run["tools"][0]
    assert "FIRST" in where_tool["description"] and "the pane below" in where_tool["description"]
    assert "whoami" in where_tool["description"]
    assert run["tools"][1]["input_schema"]["required"] == ["direction"]
    assert run["tools"][2]["input_schema"]["properties"]["scope"]["enum"] == [
        "window",
        "session",
        "server",
    ]
    assert {r["uri"]: r["mime"] for r in run["resources"]} == {
        SELF_URI: "text/plain",
        WINDOW_URI: "application/json",
    }
    assert run["subscribe_capability"] is True
    instructions = run["instructions"]
    assert "Resolve self first" in instructions
    assert "Never list the whole server" in instructions
    assert "ask the user" in instructions


def test_where_am_i_with_the_agents_tty(world: World, basic: tuple[Run, Grid]) -> None:
    run, grid = basic
    where = answer(run, "where")
    index = world.tmux.display(grid["me"], "#{pane_index}")
    assert f", pane {index} {grid['me']}\n" in where
    assert (
        f"neighbors: above none; below {grid['below']}; left none; right {grid['right']}\n" in where
    )
    assert "verified_by tty" in where and "live updates on" in where
    below = json.loads(answer(run, "below"))
    assert below["pane"] == grid["me"] and below["direction"] == "below"
    assert [p["id"] for p in below["panes"]] == [grid["below"]]
    right = json.loads(answer(run, "right"))
    assert [p["id"] for p in right["panes"]] == [grid["right"]]
    window = json.loads(answer(run, "window"))
    assert {p["id"] for p in window["panes"]} == set(grid.values())
    assert window["total"] == 4
    session = json.loads(answer(run, "session"))
    assert set(grid.values()) < {p["id"] for p in session["panes"]}
    assert run["answers"]["bad"]["is_error"] is True
    # The resources: the text form (with its neighbours line) and the window's summary.
    assert run["read_self"].startswith("tmux location:\nsession main, window ")
    assert where.startswith(run["read_self"])
    assert json.loads(run["read_window"]) == window


def test_subscriptions_follow_the_daemons_stream(world: World) -> None:
    runs, grid = world.probe("subscribe", "tty")
    run = runs["tty"]
    notes = run["notes"]
    by_phase: dict[str, list[int]] = {SELF_URI: [], WINDOW_URI: []}
    for note in notes:
        by_phase[note["uri"]].append(note["phase"])
    # Phase 1 split a pane of another session: nothing.  2 split this window: one each.
    # 3 renamed this window: the text only.  4 selected another pane of this window: one each.
    assert by_phase[SELF_URI] == [2, 3, 4], notes
    assert by_phase[WINDOW_URI] == [2, 4], notes
    assert '"renamed"' in run["reads"]["3"]
    assert "pane active=0" in run["reads"]["4"]
    window = json.loads(run["reads"]["4w"])
    assert window["total"] == 5
    assert {p["id"]: p["active"] for p in window["panes"]}[grid["below"]] is True


def test_wait_for_pane(world: World) -> None:
    """wait_for_pane through the SDK: met (busy; idle when the command ends), timeout, gone,
    and a bad ``until`` as a tool error."""
    runs, _ = world.probe("wait", "tty")
    answers = runs["tty"]["answers"]
    pane = answers["pane"]

    def body(key: str) -> dict[str, Any]:
        assert answers[key]["is_error"] is False, answers[key]
        parsed: dict[str, Any] = json.loads(answers[key]["text"][0])
        return parsed

    busy = body("busy")
    assert (busy["outcome"], busy["met"], busy["until"]) == ("busy", True, "busy")
    assert busy["activity"]["command"] == "cat" and busy["location"]["pane"]["id"] == pane
    timeout = body("timeout")
    assert (timeout["outcome"], timeout["met"]) == ("timeout", False)
    assert timeout["waited_ms"] >= 200 and timeout["activity"]["busy"] is True
    idle = body("idle")
    assert (idle["outcome"], idle["met"], idle["until"]) == ("idle", True, "idle")
    assert idle["before"]["busy"] is True and idle["activity"]["busy"] is False
    gone = body("gone")
    assert (gone["outcome"], gone["met"], gone["location"]) == ("gone", False, None)
    assert gone["reason"]
    bad = answers["bad"]
    assert bad["is_error"] is True and "until must be one of" in bad["text"][0], bad


def test_no_controlling_tty_and_the_2026_protocol(world: World) -> None:
    # The SDK's stdio client starts the server in a new session, with no controlling tty: the
    # server asks as the pane of its nearest ancestor with a tty.  This run also speaks the
    # 2026 protocol, whose subscriptions are subscriptions/listen streams.
    runs, grid = world.probe("listen", "setsid")
    run = runs["setsid"]
    where = run["where"][0]
    assert names_pane(where, grid["me"]), where
    assert "verified_by ancestor" in where
    assert [p["id"] for p in json.loads(run["below"][0])["panes"]] == [grid["below"]]
    phases = {(e["uri"], e["phase"]) for e in run["events"]}
    assert phases == {(SELF_URI, 2), (WINDOW_URI, 2)}, run["events"]


def test_below_a_shared_server_where_am_i_cannot_tell(world: World) -> None:
    # Codex starts every thread's MCP server under its shared app-server, with the TMUX_PANE
    # of the TUI that started that server: never that pane, with or without a daemon.
    for daemon in (None, str(world.root / "absent.sock")):
        runs, grid = world.probe("basic", "shared", daemon=daemon)
        where = answer(runs["shared"], "where")
        assert where.startswith("cannot tell which tmux pane this is (reason: shared_ancestor)")
        assert "daemon_auto_start = false" in where
        assert not any(names_pane(where, pane) for pane in grid.values()), where
        assert grid["me"] not in where


def test_no_daemon_answers_directly_and_says_live_updates_are_off(world: World) -> None:
    runs, grid = world.probe("basic", "tty,setsid", daemon=str(world.root / "absent.sock"))
    for spawn, proof in (("tty", "verified_by tty"), ("setsid", "verified_by ancestor")):
        run = runs[spawn]
        where = answer(run, "where")
        assert names_pane(where, grid["me"]), where
        assert proof in where
        assert where.endswith(LIVE_OFF + "\n")
        below = run["answers"]["below"]["text"]
        assert [p["id"] for p in json.loads(below[0])["panes"]] == [grid["below"]]
        assert below[1] == LIVE_OFF
        window = json.loads(answer(run, "window"))
        assert {p["id"] for p in window["panes"]} == set(grid.values())
        assert run["read_self"].startswith("tmux location:\n")


# ----------------------------------------------------------------------------------------------
# What a model reads: each answer for a 4-pane window, next to unscoped listings of a server of
# 100 panes.


def _top_up(world: World, total: int) -> None:
    """Add panes (4 to a window, in a session of their own) until the server has ``total``."""
    have = world.pane_count()
    if have >= total:
        return
    if not _has_bulk(world):
        world.tmux.run("new-session", "-d", "-s", "bulk", "-x", "160", "-y", "48", "cat")
        have += 1
    commands: list[str] = []
    n = world.tmux.run("list-windows", "-t", "bulk", "-F", "x").count("x")
    while have < total:
        take = min(4, total - have)
        name = f"b{n}"
        commands += ["new-window", "-d", "-t", "bulk:", "-n", name, "cat", ";"]
        for _ in range(take - 1):
            commands += ["split-window", "-d", "-t", f"bulk:{name}", "cat", ";"]
        commands += ["select-layout", "-t", f"bulk:{name}", "tiled", ";"]
        have += take
        n += 1
    if commands:
        world.tmux.run(*commands[:-1])


def _has_bulk(world: World) -> bool:
    return "bulk" in world.tmux.run("list-sessions", "-F", "#{session_name}").split()


# tmux 3.2a segfaults on `list-panes -a -F '#{client_activity}'` (or `client_created`) from
# a command-line client while any client is attached (the daemon's control client is): those
# two are left out of the listing there, as a user of 3.2a would have to.
_CRASHING_FORMATS = (
    frozenset({"client_activity", "client_created"})
    if tmuxbin.version_of(TMUX) < (3, 3)
    else frozenset()
)


def _all_fields_listing(world: World, prefix: str = "") -> bytes:
    """``list-panes -a`` with every format a pane has (as ``display-message -a`` lists them;
    only those starting with ``prefix``), as JSON: what a model reads when it asks tmux for
    everything."""
    names = [
        line.split("=", 1)[0]
        for line in world.tmux.run("display-message", "-a", "-p", "-t", "main:").splitlines()
        if "=" in line
        and line.startswith(prefix)
        and line.split("=", 1)[0] not in _CRASHING_FORMATS
    ]
    sep = "\t"  # tmux 3.4+ escapes other control characters in command output
    out = world.tmux.run("list-panes", "-a", "-F", sep.join(f"#{{{n}}}" for n in names))
    rows = [dict(zip(names, line.split(sep), strict=False)) for line in out.splitlines()]
    return json.dumps(rows).encode()


def test_token_cost(world: World, basic: tuple[Run, Grid]) -> None:
    result, _ = basic
    panes = json.loads(answer(result, "server_full"))["total"]
    assert panes == 100
    _top_up(world, 100)  # the probe's pane closed when it ended
    sizes = {
        "where_am_i": len(answer(result, "where").encode()),
        'find_adjacent_panes("below")': len(answer(result, "below").encode()),
        "list_panes() (window, summary)": len(answer(result, "window").encode()),
        'list_panes("session")': len(answer(result, "session").encode()),
        "resource tmux://self": len(result["read_self"].encode()),
        "resource tmux://self/window": len(result["read_window"].encode()),
        f'list_panes("server", "full") at {panes} panes': len(
            answer(result, "server_full").encode()
        ),
        f"tmux list-panes -a, pane_* formats, JSON, at {panes} panes": len(  # tmux: a label
            _all_fields_listing(world, "pane_")
        ),
        f"tmux list-panes -a, all formats, JSON, at {panes} panes": len(  # tmux: a label
            _all_fields_listing(world)
        ),
    }
    width = max(map(len, sizes))
    print("\nbytes a model reads:")
    for what, size in sizes.items():
        print(f"  {what:<{width}}  {size:>7,}")
    assert sizes["resource tmux://self"] <= 300  # SPEC §9 B6 (with its neighbours line)
    assert sizes["resource tmux://self/window"] <= 1536
    assert sizes["where_am_i"] <= 400
