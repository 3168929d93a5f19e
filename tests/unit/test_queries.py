"""The query layer, without tmux or aiohttp: identity decisions (every case of spec §2) and the
pane, neighbour, listing and tree queries over a view built from replies captured from real
tmux (tests/data/mirror)."""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core.answers import DirectionNeighbors, PaneNeighbors
from tmuxlocd.core.caller import NO_UP, SHARED_ANCESTOR, Up
from tmuxlocd.core.mirror import Dirty, ServerMirror, run_reread
from tmuxlocd.core.model import ServerState
from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.core.protocol import Reply
from tmuxlocd.core.queries import (
    CallerFacts,
    Choose,
    QueryError,
    Selection,
    StaticView,
    decide_self,
    everyone,
    find_pane,
    may_be_stale,
    neighbors,
    scope_selection,
    select,
    tree,
)
from tmuxlocd.core.shared import Shared
from tmuxlocd.daemon.api.context import Rereads

DATA = Path(__file__).resolve().parent.parent / "data" / "mirror"


def captured(name: str = "3.3a", socket_path: str = "/tmp/tmux-0/a") -> ServerState:
    data = json.loads((DATA / f"{name}.json").read_text())["before"]
    mirror = ServerMirror(socket_path)
    mirror.version = name
    mirror.pid = 100
    run_reread(
        mirror.reread(Dirty(full=True)),
        [
            [
                Reply(number=1, time=0, flags=1, ok=True, lines=tuple(data[key]))
                for key in ("list_sessions", "list_windows", "list_panes")
            ]
        ],
    )
    return mirror.state()


def devices(*states: ServerState) -> dict[str, int]:
    """A fake device number per pane tty (unique per server and tty)."""
    out: dict[str, int] = {}
    for n, state in enumerate(states):
        for pane in state.panes.values():
            out[f"{state.socket_path}:{pane.tty}"] = 34816 + 100 * n + int(pane.id[1:])
    return out


class Rig:
    def __init__(self, *states: ServerState) -> None:
        self.devices = devices(*states)
        # the view stats a pane's tty path; one path per server here
        by_path = {tty.split(":", 1)[1]: dev for tty, dev in self.devices.items()}
        self.view = StaticView(states, by_path.get)
        self.walked = 0
        self.lineaged = 0

    def dev(self, pane: str, server: str = "/tmp/tmux-0/a") -> int:
        loc = self.view.locations_of(server)[pane]
        return self.devices[f"{server}:{loc.pane.tty}"]

    def session_of(self, dev: int) -> int:
        """The session id of a process started in the live pane on device ``dev`` (tmux's
        child calls setsid(): its pid), else 0."""
        for loc in self.view.panes_by_rdev(dev) if dev > 0 else ():
            if not loc.pane.dead:
                return loc.pane.pid
        return 0

    def facts(
        self,
        tty_nr: int,
        ancestor: int = 0,
        env_pane: str | None = None,
        *,
        session: int | None = None,
        lineage: Collection[int] = (),
        shared: Shared | None = None,
    ) -> CallerFacts:
        def walk() -> Up:
            self.walked += 1
            if ancestor > 0:
                return Up(ancestor, self.session_of(ancestor), 4000)
            return Up(ancestor) if ancestor else NO_UP

        def up() -> Collection[int]:
            self.lineaged += 1
            return lineage

        return CallerFacts(
            pid=4242,
            tty_nr=tty_nr,
            env_pane=env_pane,
            ancestor=walk,
            tty_path=lambda: "/dev/pts/77",
            session=self.session_of(tty_nr) if session is None else session,
            lineage=up,
            shared=shared,
        )


# ------------------------------------------------------------------------------ identity

# What the walk up finds: no pane, or a server of several sessions before any pane.
_UP = {"none": 0, "shared": SHARED_ANCESTOR}


def test_a_caller_on_a_pane_tty_is_in_that_pane_and_is_not_walked_up() -> None:
    rig = Rig(captured())
    answer = decide_self(rig.view, rig.facts(rig.dev("%1"), env_pane="%3"))
    assert answer.inside_tmux and answer.verified_by == "tty" and answer.reason is None
    assert answer.location is not None and answer.location.pane.id == "%1"
    assert answer.caller.tty == answer.location.pane.tty
    assert answer.caller.env_pane == "%3"  # reported, never believed
    assert answer.caller.ancestor_pane == "%1"
    assert rig.walked == 0 and rig.lineaged == 0  # proven by its session: nothing else read


@pytest.mark.parametrize(
    ("tty", "ancestor", "accept", "inside", "verified", "reason", "ancestor_pane"),
    [
        # no controlling tty, no ancestor in a pane
        ("none", "none", False, False, None, "no_controlling_tty", None),
        # no tty (setsid child), its parent in %2: a hint, unless accepted
        ("none", "%2", False, False, None, "no_controlling_tty", "%2"),
        ("none", "%2", True, True, "ancestor", None, "%2"),
        # a tty that is no pane's (script, ssh -t), with a pane further up
        ("other", "%0", False, False, None, "tty_not_a_pane", "%0"),
        ("other", "%0", True, True, "ancestor", None, "%0"),
        ("other", "none", True, False, None, "tty_not_a_pane", None),
        # the walk met a server of several sessions (Codex's app-server) before any pane
        ("none", "shared", False, False, None, "shared_ancestor", None),
        ("none", "shared", True, False, None, "shared_ancestor", None),
        ("other", "shared", True, False, None, "tty_not_a_pane", None),
    ],
)
def test_identity_cases(
    tty: str,
    ancestor: str,
    accept: bool,
    inside: bool,
    verified: str | None,
    reason: str | None,
    ancestor_pane: str | None,
) -> None:
    rig = Rig(captured())
    tty_nr = 0 if tty == "none" else 99999
    up = _UP[ancestor] if ancestor in _UP else rig.dev(ancestor)
    answer = decide_self(rig.view, rig.facts(tty_nr, up, env_pane="%3"), accept_ancestor=accept)
    assert (answer.inside_tmux, answer.verified_by, answer.reason) == (inside, verified, reason)
    # below a server of several sessions, TMUX_PANE names whoever started it: left out
    assert answer.caller.env_pane == (None if ancestor == "shared" else "%3")
    assert answer.caller.ancestor_pane == ancestor_pane
    assert answer.caller.tty == (None if tty == "none" else "/dev/pts/77")
    if inside:
        assert answer.location is not None and answer.location.pane.id == ancestor_pane
    else:
        assert answer.location is None


def altered(state: ServerState, **panes: dict[str, object]) -> ServerState:
    """``state`` with some of its panes' fields changed (``P1={"dead": True}`` for %1)."""
    changed = dict(state.panes)
    for key, fields in panes.items():
        pane_id = "%" + key[1:]
        changed[pane_id] = msgspec.structs.replace(changed[pane_id], **fields)
    return msgspec.structs.replace(state, panes=changed, by_window=None)


# The case that was answered wrongly: remain-on-exit keeps the dead %1 naming its pty,
# which the kernel gave to the next pane, %3 (here: %3 is made to name %1's tty).
def reused(*, dead: bool = True) -> tuple[Rig, int]:
    base = captured()
    state = altered(base, P1={"dead": dead}, P3={"tty": base.panes["%1"].tty, "pid": 31000})
    rig = Rig(state)
    return rig, rig.dev("%1")


def test_a_reused_tty_names_the_live_pane_whose_process_leads_the_callers_session() -> None:
    rig, dev = reused()
    assert {loc.pane.id for loc in rig.view.panes_by_rdev(dev)} == {"%1", "%3"}
    answer = decide_self(rig.view, rig.facts(dev, session=31000))
    assert answer.verified_by == "tty"
    assert answer.location is not None and answer.location.pane.id == "%3"
    assert answer.caller.ancestor_pane == "%3"


def test_a_dead_panes_tty_on_a_process_in_no_pane_is_no_pane() -> None:
    # Under script, or a pty.fork() child outside tmux: the pty number a dead pane still
    # names, a session that is no live pane's, and no ancestor in a pane.
    rig, dev = reused()
    answer = decide_self(rig.view, rig.facts(dev, session=55555))
    assert (answer.inside_tmux, answer.verified_by, answer.location) == (False, None, None)
    assert answer.reason == "tty_reused"
    assert answer.hint is not None and "%1 (dead)" in answer.hint
    assert answer.caller.ancestor_pane is None
    assert may_be_stale(rig.view, answer)  # a pane the model has not seen yet may own it
    # ... with accept=ancestor too: nothing above it is in a pane.
    assert (
        decide_self(rig.view, rig.facts(dev, session=55555), accept_ancestor=True).location is None
    )


def test_a_dead_panes_tty_under_script_in_a_live_pane_names_the_pane_above() -> None:
    # script's pty reuses the dead pane's number; script itself runs in %2.
    rig, dev = reused()
    answer = decide_self(rig.view, rig.facts(dev, rig.dev("%2"), session=55555))
    assert answer.reason == "tty_reused" and answer.caller.ancestor_pane == "%2"
    accepted = decide_self(
        rig.view, rig.facts(dev, rig.dev("%2"), session=55555), accept_ancestor=True
    )
    assert accepted.verified_by == "ancestor"
    assert accepted.location is not None and accepted.location.pane.id == "%2"


def test_a_live_pane_is_proven_by_an_ancestor_when_the_session_is_another() -> None:
    rig = Rig(captured())
    dev, pid = rig.dev("%1"), rig.session_of(rig.dev("%1"))
    # A process of %1 that left its session (setsid) and took the pty back as its own.
    answer = decide_self(rig.view, rig.facts(dev, session=777, lineage=(776, pid, 1)))
    assert answer.verified_by == "tty" and answer.location is not None
    assert answer.location.pane.id == "%1"
    stranger = decide_self(rig.view, rig.facts(dev, session=777, lineage=(776, 1)))
    assert (stranger.location, stranger.reason) == (None, "tty_reused")
    assert stranger.hint is not None and f"process {pid}" in stranger.hint


def test_a_dead_pane_alone_never_proves_its_tty() -> None:
    base = captured()
    rig = Rig(altered(base, P1={"dead": True}))
    dev, pid = rig.dev("%1"), base.panes["%1"].pid
    # Even the dead pane's own number as the session (a pid reused since) proves nothing.
    answer = decide_self(rig.view, rig.facts(dev, session=pid, lineage=(pid,)))
    assert (answer.location, answer.reason) == (None, "tty_reused")


def test_an_ssh_connection_master_is_told_nothing_with_the_fix() -> None:
    rig = Rig(captured())
    master = Shared("ssh_master", 4242, ("/tmp/cm-abc",))
    answer = decide_self(rig.view, rig.facts(rig.dev("%1"), env_pane="%1", shared=master))
    assert (answer.inside_tmux, answer.location, answer.reason) == (
        False,
        None,
        "shared_ssh_master",
    )
    assert answer.hint is not None and "-o ControlPath=none" in answer.hint
    assert "/tmp/cm-abc" in answer.hint
    assert answer.caller.ancestor_pane is None and answer.caller.env_pane is None
    assert decide_self(rig.view, rig.facts(0, shared=master), accept_ancestor=True).location is None


_PIDS = [101, 102, 103, 104]


@given(
    ttys=st.lists(st.sampled_from(["a", "b", "c"]), min_size=4, max_size=4),
    pids=st.permutations(_PIDS),
    dead=st.lists(st.booleans(), min_size=4, max_size=4),
    caller_tty=st.sampled_from(["a", "b", "c", "d"]),
    session=st.sampled_from([*_PIDS, 999]),
    lineage=st.sets(st.sampled_from([*_PIDS, 998])),
    accept=st.booleans(),
)
def test_no_answer_names_a_pane_that_is_not_proven(
    ttys: list[str],
    pids: list[int],
    dead: list[bool],
    caller_tty: str,
    session: int,
    lineage: set[int],
    accept: bool,
) -> None:
    """Whatever the panes' ttys (shared, reused), deaths and processes: a pane named with
    ``verified_by: tty`` is live, on the caller's tty, and its process leads the caller's
    session or is an ancestor; and a caller whose session leads a live pane on its tty is
    told that pane."""
    base = captured()
    ids = sorted(base.panes, key=lambda i: int(i[1:]))
    state = altered(
        base,
        **{
            "P" + i[1:]: {"tty": f"/dev/pts/{t}", "pid": p, "dead": d}
            for i, t, p, d in zip(ids, ttys, pids, dead, strict=True)
        },
    )
    dev = {f"/dev/pts/{name}": 34816 + n for n, name in enumerate("abcd")}
    view = StaticView([state], dev.get)
    facts = CallerFacts(
        pid=4242,
        tty_nr=dev[f"/dev/pts/{caller_tty}"],
        env_pane=None,
        ancestor=lambda: NO_UP,
        tty_path=lambda: f"/dev/pts/{caller_tty}",
        session=session,
        lineage=lambda: lineage,
    )
    answer = decide_self(view, facts, accept_ancestor=accept)
    live_on_tty = [
        state.panes[i] for i, t, d in zip(ids, ttys, dead, strict=True) if t == caller_tty and not d
    ]
    leader = [p for p in live_on_tty if p.pid == session]
    if answer.verified_by == "tty":
        assert answer.location is not None
        pane = state.panes[answer.location.pane.id]
        assert not pane.dead and pane.tty == f"/dev/pts/{caller_tty}"
        assert pane.pid == session or pane.pid in lineage
    else:
        assert not leader
        assert answer.location is None  # no ancestor here: nothing to accept either
        on_tty = any(t == caller_tty for t in ttys)
        assert answer.reason == ("tty_reused" if on_tty else "tty_not_a_pane")
    if leader:
        assert answer.location is not None and answer.location.pane.id == leader[0].id


@pytest.mark.parametrize(
    ("tty", "ancestor", "env_pane", "accept", "stale"),
    [
        ("%1", "none", None, False, False),  # proven by its tty: never re-read
        ("%1", "none", "%3", False, False),  # ... whatever its environment says
        ("other", "none", "%3", False, True),  # a tty no pane has (a respawned pane's)
        ("other", "none", None, False, True),
        ("none", "none", "%3", False, False),  # no tty: a re-read cannot place it
        ("none", "%2", "%3", True, False),  # placed by its parent's tty
        ("other", "%0", "%0", True, True),  # placed by an ancestor, but TMUX_PANE's tty differs
        ("other", "%0", None, True, False),  # placed by an ancestor, no hint against it
        ("other", "%0", "%404", True, False),  # a hint naming no pane says nothing
    ],
)
def test_may_be_stale(
    tty: str, ancestor: str, env_pane: str | None, accept: bool, stale: bool
) -> None:
    rig = Rig(captured())
    tty_nr = {"none": 0, "other": 99999}[tty] if tty in ("none", "other") else rig.dev(tty)
    up = _UP[ancestor] if ancestor in _UP else rig.dev(ancestor)
    answer = decide_self(rig.view, rig.facts(tty_nr, up, env_pane), accept_ancestor=accept)
    assert may_be_stale(rig.view, answer) is stale


def test_rereads_once_per_tty_and_version() -> None:
    rereads = Rereads()
    assert rereads.claim(34817, 5) and not rereads.claim(34817, 5)
    assert rereads.claim(34818, 5)  # another caller's tty
    assert rereads.claim(34817, 6) and not rereads.claim(34817, 6)  # the model moved on
    for tty in range(Rereads.LIMIT):  # bounded memory: past the limit it starts again
        rereads.claim(tty, 7)
    assert len(rereads._done) <= Rereads.LIMIT


def test_no_server_running() -> None:
    view = StaticView([], lambda path: None)
    answer = decide_self(view, Rig().facts(34816))
    assert (answer.inside_tmux, answer.reason) == (False, "no_server")


# ------------------------------------------------------------------------------ panes


def test_find_pane_on_one_or_several_servers() -> None:
    a, b = captured(socket_path="/tmp/tmux-0/a"), captured("3.6b", socket_path="/tmp/tmux-0/b")
    rig = Rig(a, b)
    with pytest.raises(QueryError) as amb:
        find_pane(rig.view, "%1")
    assert amb.value.code == "ambiguous" and amb.value.servers == ("/tmp/tmux-0/a", "/tmp/tmux-0/b")
    assert find_pane(rig.view, "%1", "/tmp/tmux-0/b").server.socket_path == "/tmp/tmux-0/b"
    with pytest.raises(QueryError) as missing:
        find_pane(rig.view, "%99")
    assert missing.value.code == "not_found"


def test_neighbors_from_the_layout() -> None:
    rig = Rig(captured())
    left = find_pane(rig.view, "%0")  # work:0 is split left | right
    answer = neighbors(rig.view, left)
    assert isinstance(answer, PaneNeighbors)
    assert [e.id for e in answer.right] == ["%1"] and answer.left == answer.above == ()
    (entry,) = answer.right
    assert entry.shared == 48
    below = neighbors(rig.view, left, "below")
    assert isinstance(below, DirectionNeighbors) and below.panes == ()


def test_selections_and_scopes() -> None:
    rig = Rig(captured())
    everything = select(rig.view, Selection())
    assert [loc.pane.id for loc in everything] == ["%0", "%1", "%2", "%3"]
    me = find_pane(rig.view, "%0")
    assert [loc.pane.id for loc in select(rig.view, scope_selection(me, "window"))] == ["%0", "%1"]
    # session $0 "work": its own windows; the other session links work:0 in, so from
    # there the window's panes belong too
    work = select(rig.view, scope_selection(me, "session"))
    assert {loc.pane.id for loc in work} == {"%0", "%1", "%2"}
    other = find_pane(rig.view, "%3")
    assert {loc.pane.id for loc in select(rig.view, scope_selection(other, "session"))} == {
        "%0",
        "%1",
        "%3",
    }
    assert len(select(rig.view, scope_selection(me, "server"))) == 4


def test_tree_lists_a_linked_window_under_each_session() -> None:
    rig = Rig(captured())
    (server,) = tree(rig.view).servers
    by_name = {s.name: s for s in server.sessions}
    assert [w.index for w in by_name["other"].windows] == [0, 5]
    assert [w.name for w in by_name["work"].windows] == ["cat", "logs"]
    linked = by_name["other"].windows[1]
    assert linked.id == "@0" and [p.id for p in linked.panes] == ["%0", "%1"]
    assert tree(rig.view, "/elsewhere").servers == ()


def _client(rig: Rig, pane: str, pid: int = 0) -> ProcStat:
    dev = rig.dev(pane)
    session = rig.session_of(dev)
    return ProcStat(pid or session + 1, session, dev, 500, session=session)


def _below_a_shared_server(
    rig: Rig, clients: list[ProcStat] | None, choose: Choose = everyone
) -> CallerFacts:
    return CallerFacts(
        pid=4242,
        tty_nr=0,
        env_pane="%0",
        ancestor=lambda: Up(SHARED_ANCESTOR, pid=900),
        tty_path=lambda: None,
        clients=lambda server: clients if server == 900 else None,
        choose=choose,
    )


def test_the_one_client_of_a_shared_server_places_its_sessions() -> None:
    rig = Rig(captured())
    tui = _client(rig, "%2")
    facts = _below_a_shared_server(rig, [tui])
    answer = decide_self(rig.view, facts, accept_ancestor=True)
    assert (answer.verified_by, answer.reason) == ("client", None)
    assert answer.location is not None and answer.location.pane.id == "%2"
    assert answer.caller.client == tui.pid and answer.caller.env_pane is None
    hint_only = decide_self(rig.view, facts)
    assert (hint_only.location, hint_only.reason) == (None, "no_controlling_tty")
    assert hint_only.caller.ancestor_pane == "%2"


@pytest.mark.parametrize(
    "case", ["two panes", "one in no pane", "none", "unreadable", "not chosen", "dead pane"]
)
def test_a_shared_server_without_one_client_in_one_pane_places_nobody(case: str) -> None:
    base = captured()
    rig = Rig(altered(base, P1={"dead": True}) if case == "dead pane" else base)
    clients: list[ProcStat] | None = {
        "two panes": [_client(rig, "%2"), _client(rig, "%3")],
        "one in no pane": [_client(rig, "%2"), ProcStat(77, 1, 0, 1, session=77)],
        "none": [],
        "unreadable": None,
        "not chosen": [_client(rig, "%2")],
        "dead pane": [ProcStat(78, 1, rig.dev("%1"), 1, session=base.panes["%1"].pid)],
    }[case]
    choose: Choose = (lambda cs, sole: []) if case == "not chosen" else everyone
    answer = decide_self(
        rig.view, _below_a_shared_server(rig, clients, choose), accept_ancestor=True
    )
    assert (answer.location, answer.reason) == (None, "shared_ancestor")
    assert answer.caller.ancestor_pane is None and answer.caller.client is None
    assert answer.hint is not None and "pid 900" in answer.hint


def test_two_processes_of_one_client_in_one_pane_are_one_client() -> None:
    rig = Rig(captured())
    older, child = _client(rig, "%2", 601), _client(rig, "%2", 602)
    answer = decide_self(
        rig.view, _below_a_shared_server(rig, [child, older]), accept_ancestor=True
    )
    assert answer.location is not None and answer.location.pane.id == "%2"
    assert answer.caller.client == 601  # the older one: the TUI, not what it started
