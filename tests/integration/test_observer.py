"""The observer against real tmux: every location-changing command, in the attached session
and in another one, leaves the hub's model equal to what tmux itself reports, with no
explicit re-sync (notifications, hooks and the digest must bring it), and the events a
subscriber got, replayed onto its first snapshot, give the same state.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from tests.tmuxbin import accepted_names, stored_session_name
from tests.tmuxtest import TMUX, TmuxServer, wait_until
from tmuxlocd.core.events import Event, apply, event_type, pane_key
from tmuxlocd.core.location import Location
from tmuxlocd.core.names import output_escapes_dollars, undo_output_dollars, unvis
from tmuxlocd.daemon.config import Config
from tmuxlocd.daemon.hub import Hub, Subscriber
from tmuxlocd.daemon.observer import HOOK_INDEX, Watcher
from tmuxlocd.host.sockets import resolve_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]

TMUX_VERSION = (
    subprocess.run([TMUX, "-V"], capture_output=True, text=True, check=False).stdout
    if TMUX is not None
    else ""
)
_VERSION_MATCH = re.search(r"(\d+)\.(\d+)", TMUX_VERSION)
VERSION = (int(_VERSION_MATCH[1]), int(_VERSION_MATCH[2])) if _VERSION_MATCH else (0, 0)
# tmux 3.4 writes a backslash before `$` in all command output, the CLI's included.
DOLLARS = output_escapes_dollars(TMUX_VERSION)


def names_of(out: str) -> str:
    return undo_output_dollars(out) if DOLLARS else out


def truth(srv: TmuxServer) -> dict[str, tuple[object, ...]]:
    """What tmux itself says, shaped like the fields of a Location we check."""
    sessions = dict(
        line.split("\t", 1)
        for line in names_of(
            srv.run("list-sessions", "-F", "#{session_id}\t#{session_name}")
        ).splitlines()
    )
    home: dict[str, tuple[int, str, int, bool]] = {}
    links: dict[str, list[tuple[int, str, int]]] = {}
    names: dict[str, str] = {}
    for line in names_of(
        srv.run(
            "list-windows",
            "-a",
            "-F",
            "#{session_id}\t#{window_id}\t#{window_index}\t#{window_active}\t#{window_zoomed_flag}"
            "\t#{window_layout}\t#{window_name}",
        )
    ).splitlines():
        sid, wid, index, active, _zoomed, _layout, name = line.split("\t")
        key = (int(sid[1:]), sid, int(index), active == "1")
        if wid not in home or key < home[wid]:
            home[wid] = key
        links.setdefault(wid, []).append((int(sid[1:]), sid, int(index)))
        names[wid] = name
    out: dict[str, tuple[object, ...]] = {}
    for line in srv.run(
        "list-panes",
        "-a",
        "-F",
        "#{pane_id}\t#{window_id}\t#{pane_index}\t#{pane_active}\t#{pane_tty}\t#{pane_pid}"
        "\t#{pane_left}\t#{pane_top}\t#{pane_width}\t#{pane_height}\t#{window_layout}",
    ).splitlines():
        pid, wid, index, active, tty, ppid, left, top, width, height, layout = line.split("\t")
        _, sid, windex, wactive = home[wid]
        out[pid] = (
            sid,
            unvis(sessions[sid]),
            wid,
            windex,
            wactive,
            unvis(names[wid]),
            layout,
            int(index),
            active == "1",
            tty,
            int(ppid),
            int(left),
            int(top),
            int(width),
            int(height),
            tuple((sid, i) for _, sid, i in sorted(links[wid])[1:]),
        )
    return out


def seen(locations: dict[str, Location]) -> dict[str, tuple[object, ...]]:
    out: dict[str, tuple[object, ...]] = {}
    for loc in locations.values():
        s, w, p = loc.session, loc.window, loc.pane
        out[p.id] = (
            s.id,
            s.name,
            w.id,
            w.index,
            w.active,
            w.name,
            w.layout,
            p.index,
            p.active,
            p.tty,
            p.pid,
            p.left,
            p.top,
            p.width,
            p.height,
            tuple((link.session_id, link.window_index) for link in loc.links),
        )
    return out


@dataclass
class Rig:
    srv: TmuxServer
    hub: Hub
    watcher: Watcher
    sub: Subscriber
    replica: dict[str, Location] = field(default_factory=dict)
    events: list[Event] = field(default_factory=list)

    def entry_locations(self) -> dict[str, Location]:
        return self.hub.servers[self.srv.socket_path].locations

    def pump(self) -> None:
        for item in self.sub.drain():
            self.events.append(item.event)
            apply(self.replica, item.event)

    def converged(self) -> bool:
        self.pump()
        try:
            want = truth(self.srv)
        except RuntimeError:
            return False
        return seen(self.entry_locations()) == want

    async def settle(self, timeout: float = 8.0) -> None:
        """Wait (on the condition, no sleeping) until the model equals tmux's own view."""
        await wait_until(self.converged, timeout, what="model == tmux list-panes")
        self.pump()
        mine = {pane_key(self.srv.socket_path, k): v for k, v in self.entry_locations().items()}
        assert self.replica == mine, "events replayed onto the snapshot differ from the model"

    def types(self) -> list[str]:
        return [event_type(e) for e in self.events]

    def reset_events(self) -> None:
        self.pump()
        self.events.clear()


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    srv = TmuxServer()
    hub = Hub()
    watcher = Watcher(hub, Config(socket_path=(srv.socket_path,)))
    try:  # from here on, whatever fails, the server is killed
        srv.start("A")
        srv.run("new-session", "-d", "-s", "B", "-x", "160", "-y", "48")
        await watcher.start()
        await watcher.wait_synced(10)
        with hub.subscribe(lambda e: True) as sub:
            r = Rig(srv, hub, watcher, sub)
            apply(r.replica, hub.snapshot())
            await r.settle()
            r.reset_events()
            yield r
    finally:
        await watcher.stop()
        srv.kill()


def attached_session(srv: TmuxServer) -> str:
    rows = srv.run("list-clients", "-F", "#{client_control_mode} #{session_name}").split("\n")
    return next(r.split(" ")[1] for r in rows if r.startswith("1 "))


# Each operation: (name, function(srv, session) -> None, expected event types (subset)).
Op = Callable[[TmuxServer, str], object]  # what it returns is not used


def split(srv: TmuxServer, s: str) -> None:
    srv.run("split-window", "-t", f"{s}:0")


def split_d(srv: TmuxServer, s: str) -> None:
    srv.run("split-window", "-d", "-t", f"{s}:0")


def two_panes(srv: TmuxServer, s: str) -> None:
    srv.run("split-window", "-d", "-h", "-t", f"{s}:0")


def renumber_setup(srv: TmuxServer, s: str) -> None:
    srv.run("new-window", "-d", "-t", f"{s}:4")
    srv.run("new-window", "-d", "-t", f"{s}:8")
    srv.run("set-option", "-t", s, "renumber-windows", "on")


# Control characters where the tmux under test takes them in a name (before 3.7); the
# printable rest of the same text where it refuses them (tests.tmuxbin.refuses_name).
HOSTILE = next(
    iter(
        accepted_names(
            [
                "tab\there nl\nhere \"dq\" 'sq' $HOME ${x} 日本語 back\\slash",
                "\"dq\" 'sq' $HOME ${x} 日本語 back\\slash dot. colon: #[fg=red]",
            ]
        )
    )
)

OPS: list[tuple[str, Op | None, Op, set[str]]] = [
    ("split-window", None, split, {"pane.added", "pane.changed"}),
    ("split-window -d", None, split_d, {"pane.added"}),
    (
        "kill-pane",
        two_panes,
        lambda srv, s: srv.run("kill-pane", "-t", f"{s}:0.1"),
        {"pane.removed", "pane.changed"},
    ),
    (
        "select-pane",
        two_panes,
        lambda srv, s: srv.run("select-pane", "-t", f"{s}:0.1"),
        {"pane.changed"},
    ),
    (
        "resize-pane",
        two_panes,
        lambda srv, s: srv.run("resize-pane", "-t", f"{s}:0.0", "-x", "30"),
        {"pane.changed"},
    ),
    (
        "select-layout",
        two_panes,
        lambda srv, s: srv.run("select-layout", "-t", f"{s}:0", "even-vertical"),
        {"pane.changed"},
    ),
    (
        "swap-pane",
        two_panes,
        lambda srv, s: srv.run("swap-pane", "-s", f"{s}:0.0", "-t", f"{s}:0.1"),
        {"pane.changed"},
    ),
    (
        "break-pane",
        two_panes,
        lambda srv, s: srv.run("break-pane", "-d", "-s", f"{s}:0.1"),
        {"pane.changed"},
    ),
    (
        "join-pane across sessions",
        None,
        lambda srv, s: srv.run(
            "join-pane", "-d", "-s", f"{s}:0.0", "-t", f"{'B' if s == 'A' else 'A'}:0"
        ),
        {"pane.changed"},
    ),
    (
        "move-window",
        None,
        lambda srv, s: srv.run("move-window", "-s", f"{s}:0", "-t", f"{s}:5"),
        {"pane.changed"},
    ),
    (
        "swap-window",
        lambda srv, s: srv.run("new-window", "-d", "-t", f"{s}:1"),
        lambda srv, s: srv.run("swap-window", "-s", f"{s}:0", "-t", f"{s}:1"),
        {"pane.changed"},
    ),
    (
        "swap-window -d",
        lambda srv, s: srv.run("new-window", "-d", "-t", f"{s}:1"),
        lambda srv, s: srv.run("swap-window", "-d", "-s", f"{s}:0", "-t", f"{s}:1"),
        {"pane.changed"},
    ),
    (
        "rename-window",
        None,
        lambda srv, s: srv.run("rename-window", "-t", f"{s}:0", HOSTILE),
        {"pane.changed"},
    ),
    (
        "rename-session",
        None,
        lambda srv, s: srv.run("rename-session", "-t", s, HOSTILE),
        {"pane.changed"},
    ),
    (
        "new-window",
        None,
        lambda srv, s: srv.run("new-window", "-d", "-t", f"{s}:3"),
        {"pane.added"},
    ),
    (
        "kill-window",
        lambda srv, s: srv.run("new-window", "-d", "-t", f"{s}:3"),
        lambda srv, s: srv.run("kill-window", "-t", f"{s}:3"),
        {"pane.removed"},
    ),
    (
        "link-window",
        None,
        lambda srv, s: srv.run(
            "link-window", "-d", "-s", f"{s}:0", "-t", f"{'B' if s == 'A' else 'A'}:7"
        ),
        set(),
    ),
    (
        "respawn-pane -k",
        None,
        lambda srv, s: srv.run("respawn-pane", "-k", "-t", f"{s}:0.0"),
        {"pane.changed"},
    ),
    (
        "renumber-windows",
        renumber_setup,
        lambda srv, s: srv.run("kill-window", "-t", f"{s}:4"),
        {"pane.changed", "pane.removed"},
    ),
    (
        "zoom",
        two_panes,
        lambda srv, s: srv.run("resize-pane", "-Z", "-t", f"{s}:0.0"),
        {"pane.changed"},
    ),
]


@pytest.mark.parametrize("where", ["attached", "other"])
@pytest.mark.parametrize(("name", "setup", "op", "expected"), OPS, ids=[o[0] for o in OPS])
async def test_operation_reaches_model_and_events(
    rig: Rig,
    where: str,
    name: str,
    setup: Callable[[TmuxServer, str], None] | None,
    op: Op,
    expected: set[str],
) -> None:
    attached = attached_session(rig.srv)
    session = attached if where == "attached" else ("B" if attached == "A" else "A")
    if setup is not None:
        setup(rig.srv, session)
        await rig.settle()
        rig.reset_events()
    op(rig.srv, session)
    await rig.settle()
    got = set(rig.types())
    assert expected <= got, f"{name} in {where} session: expected {expected}, got {rig.types()}"
    if name == "rename-window":
        assert any(loc.window.name == HOSTILE for loc in rig.entry_locations().values())
    if name == "rename-session":
        assert any(
            loc.session.name == stored_session_name(HOSTILE)
            for loc in rig.entry_locations().values()
        )
    if name == "link-window":
        assert any(loc.links for loc in rig.entry_locations().values())


@pytest.mark.parametrize("where", ["attached", "other"])
async def test_splits_and_kills_need_no_query(rig: Rig, where: str) -> None:
    """The hook carries the window's panes (3.4+: a %message; 3.3 and older: rows its waiter
    prints, which the attached session's %layout-change waits for), so a split or a kill is
    applied with no `list-panes`.  An after-hook of the user's records each one the daemon
    sends."""
    attached = attached_session(rig.srv)
    other = attached if where == "attached" else ("B" if attached == "A" else "A")
    window = rig.srv.run("display-message", "-p", "-t", f"{other}:0", "#{window_id}").strip()
    mine = rig.watcher.observers[rig.srv.socket_path].mirror.client_name
    record = f"set-option -saF @test_listed '#{{?#{{==:#{{client_name}},{mine}}},x,}}'"
    rig.srv.run("set-hook", "-g", "after-list-panes", record)

    def panes() -> int:
        return sum(loc.window.id == window for loc in rig.entry_locations().values())

    changes = 6
    for step in range(changes):
        if step % 2 == 0:
            rig.srv.run("split-window", "-d", "-t", f"{other}:0")
        else:
            rig.srv.run("kill-pane", "-t", f"{other}:0.1")
        want = 2 if step % 2 == 0 else 1
        await wait_until(lambda n=want: panes() == n, 8, what=f"{want} panes in {window}")  # type: ignore[misc]
    listed = rig.srv.run("show-options", "-sqv", "@test_listed").strip()
    rig.srv.run("set-hook", "-gu", "after-list-panes")
    # The digest (once a second) may see a change before the hook's rows do, and have it
    # read: not every time.
    assert len(listed) < changes, f"{len(listed)} list-panes for {changes} changes"
    if VERSION < (3, 4):
        # The waiter consumed every row the hook left.
        assert rig.srv.run("show-options", "-sqv", "@tmuxlocd_layouts").strip() == ""
    await rig.settle()


async def test_unchanged_costs_nothing(rig: Rig) -> None:
    """A command that changes no location yields no event (here: a no-op select-pane)."""
    rig.srv.run("select-pane", "-t", "A:0.0")
    rig.srv.run("set-option", "-g", "status-left", "x")
    await rig.hub.sync()
    rig.pump()
    assert rig.events == []


async def test_kill_server_then_start_again(rig: Rig) -> None:
    rig.srv.run("kill-server")
    await wait_until(
        lambda: not rig.hub.servers[rig.srv.socket_path].state.running,
        10,
        what="server reported down",
    )
    rig.pump()
    assert "server.down" in rig.types()
    assert rig.entry_locations() == {}
    rig.reset_events()
    rig.srv.start("again")
    await wait_until(
        lambda: rig.hub.servers[rig.srv.socket_path].state.running, 10, what="server back up"
    )
    await rig.settle()
    assert rig.types()[0] == "server.up"
    assert "pane.added" in rig.types()


@pytest.mark.parametrize("detach_on_destroy", ["on", "off"])
async def test_attached_session_killed(rig: Rig, detach_on_destroy: str) -> None:
    attached = attached_session(rig.srv)
    rig.srv.run("set-option", "-g", "detach-on-destroy", detach_on_destroy)
    rig.srv.run("kill-session", "-t", attached)
    await rig.settle()
    assert "pane.removed" in rig.types()
    rig.reset_events()
    # still live afterwards: a split in the remaining session reaches us
    remaining = rig.srv.run("list-sessions", "-F", "#{session_name}").split()[0]
    rig.srv.run("split-window", "-d", "-t", f"{remaining}:0")
    await rig.settle()
    assert "pane.added" in rig.types()


async def test_observer_detached_from_outside(rig: Rig) -> None:
    client = next(
        line.split(" ")[1]
        for line in rig.srv.run(
            "list-clients", "-F", "#{client_control_mode} #{client_name}"
        ).splitlines()
        if line.startswith("1 ")
    )
    rig.srv.run("detach-client", "-t", client)
    await wait_until(
        lambda: (
            "1 " + client
            not in rig.srv.run("list-clients", "-F", "#{client_control_mode} #{client_name}")
        ),
        5,
        what="old client gone",
    )
    await wait_until(
        lambda: rig.hub.servers[rig.srv.socket_path].observer == "attached", 10, what="re-attached"
    )
    rig.srv.run("split-window", "-d", "-t", "A:0")
    await rig.settle()
    assert "server.down" not in rig.types()


async def test_observer_client_killed(rig: Rig) -> None:
    pid = int(
        next(
            line.split(" ")[1]
            for line in rig.srv.run(
                "list-clients", "-F", "#{client_control_mode} #{client_pid}"
            ).splitlines()
            if line.startswith("1 ")
        )
    )
    os.kill(pid, signal.SIGKILL)
    await wait_until(
        lambda: (
            f"1 {pid}"
            not in rig.srv.run("list-clients", "-F", "#{client_control_mode} #{client_pid}")
        ),
        5,
        what="killed client gone",
    )
    rig.srv.run("split-window", "-d", "-t", "B:0")
    await rig.settle()
    await wait_until(
        lambda: rig.hub.servers[rig.srv.socket_path].observer == "attached", 10, what="re-attached"
    )


async def test_two_servers_and_one_started_later() -> None:
    first, second = TmuxServer(), TmuxServer()
    first.start("one")
    hub = Hub()
    watcher = Watcher(hub, Config(socket_path=(first.socket_path, second.socket_path)))
    await watcher.start()
    try:
        await wait_until(lambda: bool(hub.servers[first.socket_path].locations), 10)
        assert not hub.servers[second.socket_path].state.running
        second.start("two")  # after the daemon
        await wait_until(
            lambda: bool(hub.servers[second.socket_path].locations), 10, what="late server attached"
        )
        first.run("split-window", "-d", "-t", "one:0")
        second.run("split-window", "-d", "-t", "two:0")
        await wait_until(
            lambda: (
                len(hub.servers[first.socket_path].locations) == 2
                and len(hub.servers[second.socket_path].locations) == 2
            ),
            10,
        )
        # pane ids repeat across servers; each server keeps its own
        assert "%0" in hub.servers[first.socket_path].locations
        assert "%0" in hub.servers[second.socket_path].locations
    finally:
        await watcher.stop()
        first.kill()
        second.kill()


async def test_discovers_servers_in_socket_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no -L/-S, every server in $TMUX_TMPDIR/tmux-<uid>/ is watched, even later ones."""
    import tempfile
    from pathlib import Path

    tmpdir = Path(tempfile.mkdtemp(prefix="tlx", dir="/tmp"))
    sockdir = tmpdir / f"tmux-{os.getuid()}"
    sockdir.mkdir(mode=0o700)
    monkeypatch.setenv("TMUX_TMPDIR", str(tmpdir))
    srv = TmuxServer(sockdir)
    hub = Hub()
    watcher = Watcher(hub, Config())
    await watcher.start()
    try:
        srv.start("late")
        await wait_until(
            lambda: srv.socket_path in hub.servers and bool(hub.servers[srv.socket_path].locations),
            10,
            what="server discovered",
        )
    finally:
        await watcher.stop()
        srv.kill()


async def test_a_symlinked_socket_directory_is_keyed_as_tmux_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tmux resolves ``$TMUX_TMPDIR`` (as ``/tmp`` on macOS, a link to ``/private/tmp``):
    the server is keyed by the path ``#{socket_path}`` and ``$TMUX`` say, so that a query or a
    hook naming it finds it."""
    import tempfile
    from pathlib import Path

    tmpdir = Path(tempfile.mkdtemp(prefix="tlx", dir="/tmp"))
    real = tmpdir / "real"
    sockdir = real / f"tmux-{os.getuid()}"
    sockdir.mkdir(parents=True, mode=0o700)
    (tmpdir / "link").symlink_to(real)
    monkeypatch.setenv("TMUX_TMPDIR", str(tmpdir / "link"))
    srv = TmuxServer(sockdir)
    hub = Hub()
    watcher = Watcher(hub, Config())
    await watcher.start()
    try:
        srv.start("s")
        said = srv.run("display-message", "-p", "#{socket_path}").strip()
        assert said == srv.socket_path
        await wait_until(
            lambda: bool(hub.servers.get(said) and hub.servers[said].locations),
            10,
            what="the server under tmux's own spelling of its path",
        )
        assert list(hub.servers) == [said]
        linked = str(tmpdir / "link" / f"tmux-{os.getuid()}" / srv.name)
        assert resolve_server(linked) == said
        assert [o.socket_path for o in watcher._select(linked)] == [said]
    finally:
        await watcher.stop()
        srv.kill()
        shutil.rmtree(tmpdir, ignore_errors=True)


async def test_no_side_effects() -> None:
    srv = TmuxServer()
    try:
        await _check_no_side_effects(srv)
    finally:
        srv.kill()  # whatever failed: never leave a tmux server behind


async def _check_no_side_effects(srv: TmuxServer) -> None:
    srv.start("A", width=100, height=30)
    srv.run("new-session", "-d", "-s", "B", "-x", "90", "-y", "20")
    srv.run("set-environment", "-t", "A", "SSH_AUTH_SOCK", "/user/agent.sock")
    srv.run("set-hook", "-g", "window-layout-changed[0]", "set -g @user_hook_ran 1")
    srv.run("set-hook", "-g", "session-renamed", "display-message hi")

    def facts() -> tuple[str, ...]:
        return (
            srv.run("list-windows", "-a", "-F", "#{window_id} #{window_width}x#{window_height}"),
            srv.run("show-environment", "-t", "A", "SSH_AUTH_SOCK"),
            srv.run("show-hooks", "-g"),
            srv.run("show-hooks", "-gw"),
            srv.run("list-panes", "-a", "-F", "#{pane_id} #{pane_in_mode}"),
            srv.run("capture-pane", "-p", "-t", "A:0.0"),
            srv.run("capture-pane", "-p", "-t", "B:0.0"),
        )

    before = facts()
    hub = Hub()
    watcher = Watcher(hub, Config(socket_path=(srv.socket_path,)))
    await watcher.start()
    try:
        await watcher.wait_synced(10)
        during = facts()
        assert during[:2] == before[:2], "window sizes or session environment changed"
        assert during[4:] == before[4:], "a pane received output or entered a mode"
        # our hooks sit at their private index, next to the user's
        assert f"[{HOOK_INDEX}]" in during[3]
        assert "window-layout-changed[0]" in during[3] and "@user_hook_ran" in during[3]
        clients = srv.run("list-clients", "-F", "#{client_control_mode}").split()
        assert clients == ["1"], "exactly one control client"
    finally:
        await watcher.stop()
    after = facts()
    assert after == before, "state differs after the daemon left (hooks not removed?)"


@pytest.mark.skipif(VERSION < (3, 4), reason="3.3 shows configuration errors in a pane")
async def test_config_errors_handed_to_the_observer_are_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """tmux 3.4+ keeps the errors of a configuration loaded by a detached start for the first
    client that attaches (3.3 puts them in a pane at once).  When the observer is that client
    the user never sees them, so they must at least reach the daemon's log."""
    srv = TmuxServer()
    conf = srv.dir / "bad.conf"
    conf.write_text("no-such-command-here\n")
    srv.run("-f", str(conf), "new-session", "-d", check=False)  # loads /dev/null, then this
    hub = Hub()
    watcher = Watcher(hub, Config(socket_path=(srv.socket_path,)))
    caplog.set_level("WARNING", logger="tmuxlocd.daemon.observer")
    await watcher.start()
    try:
        await watcher.wait_synced(10)
        await wait_until(
            lambda: "no-such-command-here" in caplog.text,
            5,
            what="the configuration error in the log",
        )
    finally:
        await watcher.stop()
        srv.kill()
