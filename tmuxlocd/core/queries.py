"""Queries over a read-only view of the model: self, a pane, neighbours, panes, the tree.

One implementation for every path that answers them: the daemon's API (over the hub), the
no-daemon ``tmuxlocd where`` (over a one-shot tmux read) and the MCP server's fallback.
Pure: the view is given (``Hub`` is one; ``StaticView`` wraps a one-shot read), and so are
the caller's facts; nothing here reads /proc or talks to tmux.

``decide_self`` is the identity rule of the spec (§2): the caller's controlling tty is a
pane's tty (``verified_by: tty``); else, when asked, the nearest ancestor with a tty is
(``ancestor``); ``TMUX_PANE`` is only ever reported, as a hint.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

import msgspec

from tmuxlocd.core.answers import (
    Caller,
    DirectionNeighbors,
    NeighborEntry,
    PaneNeighbors,
    Reason,
    SelfAnswer,
    Tree,
    TreeServer,
    TreeSession,
    TreeWindow,
)
from tmuxlocd.core.caller import NO_UP, SHARED_ANCESTOR, Up
from tmuxlocd.core.errors import LayoutError
from tmuxlocd.core.layout import Direction, neighbors_of_layout
from tmuxlocd.core.location import Location, PaneRef, build_locations
from tmuxlocd.core.model import ServerState, id_number
from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.core.shared import Shared

Scope = Literal["window", "session", "server", "all"]


class View(Protocol):
    """What a query reads: every server's state and Locations, and panes by tty device."""

    def server_states(self) -> Iterable[ServerState]: ...

    def locations_of(self, socket_path: str) -> Mapping[str, Location]: ...

    def all_locations(self) -> Iterator[Location]: ...

    def panes_by_rdev(self, rdev: int) -> list[Location]: ...

    def any_running(self) -> bool: ...


class QueryError(Exception):
    """A query that cannot be answered: ``code`` as in the spec's error codes."""

    def __init__(
        self,
        code: Literal["not_found", "ambiguous", "not_in_a_pane"],
        message: str,
        servers: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.servers = servers


class TtyIndex:
    """The panes of a model by their tty's device number: what ``View.panes_by_rdev`` answers
    for the daemon's hub and for a view read once alike.  Built on the first question after a
    change (``clear``); it keeps (server, pane id) pairs, so that a pane's Location may be
    replaced without a rebuild while its tty stays.  ``rdev_of`` gives a tty path's device
    number (``os.stat(...).st_rdev``), or None when it cannot be read."""

    __slots__ = ("_rdev_of", "_table")

    def __init__(self, rdev_of: Callable[[str], int | None]) -> None:
        self._rdev_of = rdev_of
        self._table: dict[int, list[tuple[str, str]]] | None = None

    def clear(self) -> None:
        self._table = None

    def panes(
        self,
        rdev: int,
        servers: Iterable[str],
        locations_of: Callable[[str], Mapping[str, Location]],
    ) -> list[Location]:
        """The panes on device ``rdev`` (normally zero or one) of the ``servers`` (socket
        paths) whose Locations ``locations_of`` gives by pane id."""
        if rdev == 0:
            return []
        if self._table is None:
            table: dict[int, list[tuple[str, str]]] = {}
            for socket_path in servers:
                for pane_id, loc in locations_of(socket_path).items():
                    dev = self._rdev_of(loc.pane.tty)
                    if dev is not None:
                        table.setdefault(dev, []).append((socket_path, pane_id))
            self._table = table
        out: list[Location] = []
        for socket_path, pane_id in self._table.get(rdev, ()):
            found = locations_of(socket_path).get(pane_id)
            if found is not None:
                out.append(found)
        return out


class StaticView:
    """A view over states read once (the no-daemon paths).  ``rdev_of`` gives a tty path's
    device number (``os.stat(...).st_rdev``), or None when it cannot be read."""

    def __init__(self, states: Iterable[ServerState], rdev_of: Callable[[str], int | None]) -> None:
        self._states = {s.socket_path: s for s in states}
        self._locations = {path: build_locations(s) for path, s in self._states.items()}
        self._ttys = TtyIndex(rdev_of)

    def server_states(self) -> Iterable[ServerState]:
        return self._states.values()

    def locations_of(self, socket_path: str) -> Mapping[str, Location]:
        return self._locations.get(socket_path, {})

    def all_locations(self) -> Iterator[Location]:
        for locations in self._locations.values():
            yield from sorted(locations.values(), key=lambda loc: id_number(loc.pane.id))

    def panes_by_rdev(self, rdev: int) -> list[Location]:
        return self._ttys.panes(rdev, self._locations, self.locations_of)

    def any_running(self) -> bool:
        return any(s.running for s in self._states.values())


# ----------------------------------------------------------------------------------------------
# Who is asking.


def _no_lineage() -> Collection[int]:
    return ()


def no_clients(server: int) -> Sequence[ProcStat] | None:
    """No shared server's clients are looked at (a caller with no session to bind)."""
    return None


# Which of a shared server's connected clients may place the caller, given them and the
# pid of the one client in one pane among them (0: none): the daemon's session bindings
# (tmuxlocd.core.shared.choose_bound).
Choose = Callable[[Sequence[ProcStat], int], Sequence[ProcStat]]


def everyone(clients: Sequence[ProcStat], sole: int) -> Sequence[ProcStat]:
    return clients


@dataclass(frozen=True)
class CallerFacts:
    """What the kernel says of a caller, read by the shell (identity.py reads /proc).

    The walk up and the caller's tty path are asked for only when needed: on the hot path
    (a caller in a pane, proven by its session) neither is read."""

    pid: int
    tty_nr: int  # the controlling tty's device number, 0 for none
    env_pane: str | None  # its TMUX_PANE when it looks like a pane id: a hint, never trusted
    # The nearest proper ancestor with a tty other than tty_nr (``caller.nearest_up``):
    # NO_UP for none, tty_nr SHARED_ANCESTOR when the walk met a server of several sessions
    # first (``caller.serves_sessions``).
    ancestor: Callable[[], Up]
    tty_path: Callable[[], str | None]  # a path of tty_nr when it is no pane's
    session: int = 0  # the caller's session id (stat field 6)
    # The pids of the caller's proper ancestors (``caller.ancestors``): the second proof
    # that a tty's pane is the caller's, read only when its session is not that pane's.
    lineage: Callable[[], Collection[int]] = field(default=_no_lineage)
    # The caller itself speaks for several panes (an ssh connection master): no tty of its
    # proves whose request this is (tmuxlocd.host.shared).
    shared: Shared | None = None
    # The processes connected to the server of several sessions the walk met (its pid):
    # what the kernel pairs with its accepted sockets (tmuxlocd.host.shared.clients_of);
    # None when that cannot be read.
    clients: Callable[[int], Sequence[ProcStat] | None] = field(default=no_clients)
    choose: Choose = field(default=everyone)


def owners(
    panes: Sequence[Location], session: int, lineage: Callable[[], Collection[int]]
) -> list[Location]:
    """Of ``panes`` (those whose ``pane_tty`` is a process's controlling tty), the ones the
    process is proven to be in (spec §2): a live pane whose process is the process's session
    leader, or failing that one of its ancestors.

    A tty alone proves nothing: a dead pane (``remain-on-exit``) keeps naming the pty that
    the kernel may since have given to a new pane, or to a process in no pane at all.  tmux
    forks a pane's process, which calls setsid() and opens the pty, so whatever runs in a
    live pane is in the session numbered ``pane_pid``, or (having left it) below it."""
    live = [loc for loc in panes if not loc.pane.dead]
    proven = [loc for loc in live if loc.pane.pid == session]
    if proven or not live:
        return proven
    up = lineage()
    return [loc for loc in live if loc.pane.pid in up]


def decide_self(view: View, facts: CallerFacts, *, accept_ancestor: bool = False) -> SelfAnswer:
    """Where the caller is, by the tty rule (spec §2), with its hints."""
    if facts.shared is not None:
        return _shared_caller(view, facts, facts.shared)
    on_tty = view.panes_by_rdev(facts.tty_nr)
    here = owners(on_tty, facts.session, facts.lineage) if on_tty else on_tty
    # A caller in a pane is not walked up: its nearest ancestor with a tty is, but for the
    # rarest of process trees, the shell of that same pane, which ancestor_pane then says.
    up = NO_UP if here else facts.ancestor()
    by_client = False
    client = 0
    if here:
        ancestor = here
    elif up.tty_nr > 0:
        ancestor = owners(view.panes_by_rdev(up.tty_nr), up.session, facts.lineage)
    elif up.tty_nr == SHARED_ANCESTOR and facts.tty_nr == 0:
        clients = facts.clients(up.pid) or ()
        sole = sole_client(view, clients)[1] if clients else 0
        ancestor, client = sole_client(view, facts.choose(clients, sole))
        by_client = bool(ancestor)
    else:
        ancestor = []
    if facts.tty_nr == 0:
        tty = None
    elif on_tty:
        tty = on_tty[0].pane.tty
    else:
        tty = facts.tty_path()
    caller = Caller(
        pid=facts.pid,
        tty=tty,
        # Below a server of several sessions, TMUX_PANE is that of whoever started it.
        env_pane=None if up.tty_nr == SHARED_ANCESTOR and not here else facts.env_pane,
        ancestor_pane=ancestor[0].pane.id if ancestor else None,
        client=client or None,
    )
    if here:
        return SelfAnswer(
            inside_tmux=True, verified_by="tty", reason=None, caller=caller, location=here[0]
        )
    if accept_ancestor and ancestor:
        return SelfAnswer(
            inside_tmux=True,
            verified_by="client" if by_client else "ancestor",
            reason=None,
            caller=caller,
            location=ancestor[0],
        )
    reason: Reason
    hint = None
    if facts.tty_nr == 0:
        shared_unplaced = up.tty_nr == SHARED_ANCESTOR and not by_client
        reason = "shared_ancestor" if shared_unplaced else "no_controlling_tty"
        if shared_unplaced:
            hint = (
                f"below pid {up.pid}, a server of the sessions of several panes (Codex's "
                "shared app-server, Cline's hub) with no one client in a pane: which pane "
                "this session is in cannot be told"
            )
    elif not view.any_running():
        reason = "no_server"
    elif on_tty:
        reason = "tty_reused"
        hint = _reused_hint(on_tty, facts.session)
    else:
        reason = "tty_not_a_pane"
    return SelfAnswer(
        inside_tmux=False, verified_by=None, reason=reason, hint=hint, caller=caller, location=None
    )


def sole_client(view: View, clients: Sequence[ProcStat] | None) -> tuple[list[Location], int]:
    """The pane of a shared server's one client (spec §2), and that client's pid: every
    process connected to it (``clients``) is proven in one and the same live pane
    (``owners``, by its tty and session); else nothing: no client, a client in no pane (a
    script, an editor), or clients in several panes, whose sessions' hooks all run below
    the one server.  Of several processes of one client (threads are not processes, but a
    child may inherit the connection), the oldest is named."""
    if not clients:
        return [], 0
    found: dict[str, Location] = {}
    for c in clients:
        on_tty = view.panes_by_rdev(c.tty_nr) if c.tty_nr else []
        placed = owners(on_tty, c.session, _no_lineage)
        if len(placed) != 1:
            return [], 0
        found[placed[0].server.socket_path + placed[0].pane.id] = placed[0]
    if len(found) != 1:
        return [], 0
    first = min(clients, key=lambda c: (c.starttime, c.pid))
    return list(found.values()), first.pid


def _reused_hint(on_tty: Sequence[Location], session: int) -> str:
    panes = ", ".join(
        f"{loc.pane.id} ({'dead' if loc.pane.dead else f'process {loc.pane.pid}'})"
        for loc in on_tty
    )
    return (
        f"{on_tty[0].pane.tty} is named by pane {panes}, but the caller's session "
        f"({session}) is no such pane's process nor below it: the pty is another's now"
    )


def _shared_caller(view: View, facts: CallerFacts, shared: Shared) -> SelfAnswer:
    """The answer to a process that speaks for several panes: in none, and why."""
    on_tty = view.panes_by_rdev(facts.tty_nr) if facts.tty_nr else []
    caller = Caller(
        pid=facts.pid,
        tty=on_tty[0].pane.tty if on_tty else (facts.tty_path() if facts.tty_nr else None),
        env_pane=None,  # whoever started the master's, not the session's this request is for
        ancestor_pane=None,
    )
    return SelfAnswer(
        inside_tmux=False,
        verified_by=None,
        reason="shared_ssh_master",
        hint=shared.hint(),
        caller=caller,
        location=None,
    )


def may_be_stale(view: View, answer: SelfAnswer) -> bool:
    """Whether a fresh read of tmux could change ``answer`` (spec §12, "never 'not in a pane'
    from a stale picture").

    tmux tells nobody of ``respawn-pane``, which gives the pane a new tty: a process it starts
    and that asks at once has a tty no pane has in the model.  So: a caller with a tty that
    no pane of a running server has, or whose ``TMUX_PANE`` names a pane whose tty is not the
    caller's, is answered from a re-read.  A caller proven by its tty never is.
    """
    if answer.verified_by == "tty":
        return False
    if answer.reason in ("tty_not_a_pane", "tty_reused"):
        return True
    caller = answer.caller
    if caller.env_pane is None or caller.tty is None:
        return False
    named = (
        view.locations_of(state.socket_path).get(caller.env_pane) for state in view.server_states()
    )
    return any(loc is not None and loc.pane.tty != caller.tty for loc in named)


# ----------------------------------------------------------------------------------------------
# Panes.


def find_pane(view: View, pane_id: str, server: str | None = None) -> Location:
    """The pane ``%N`` (on ``server`` when given); ``not_found`` or ``ambiguous``."""
    found = [
        loc
        for state in view.server_states()
        if server is None or state.socket_path == server
        if (loc := view.locations_of(state.socket_path).get(pane_id)) is not None
    ]
    if not found:
        raise QueryError("not_found", f"no pane {pane_id}")
    if len(found) > 1:
        paths = tuple(sorted(loc.server.socket_path for loc in found))
        raise QueryError(
            "ambiguous",
            f"pane {pane_id} exists on several servers ({', '.join(paths)}); add ?server=",
            paths,
        )
    return found[0]


def pane_order(loc: Location) -> tuple[str, int, int, int]:
    """The order of every listing: server, session id, window index, pane index."""
    return (loc.server.socket_path, id_number(loc.session.id), loc.window.index, loc.pane.index)


class Selection(msgspec.Struct, frozen=True, kw_only=True):
    """Which panes a request selected: every given filter must match."""

    server: str | None = None
    pane: str | None = None
    window: str | None = None
    session: str | None = None

    @property
    def scoped(self) -> bool:
        return self.window is not None or self.session is not None

    def matches(self, loc: Location) -> bool:
        if self.server is not None and loc.server.socket_path != self.server:
            return False
        if self.pane is not None and loc.pane.id != self.pane:
            return False
        if self.window is not None and loc.window.id != self.window:
            return False
        return self.session is None or (
            loc.session.id == self.session
            or any(link.session_id == self.session for link in loc.links)
        )


def scope_selection(me: Location, scope: Scope) -> Selection:
    """The panes around ``me``: its window, its session (with the windows linked into it),
    its server, or every server."""
    server = me.server.socket_path
    if scope == "window":
        return Selection(server=server, window=me.window.id)
    if scope == "session":
        return Selection(server=server, session=me.session.id)
    if scope == "server":
        return Selection(server=server)
    return Selection()


def select(view: View, selection: Selection) -> list[Location]:
    return sorted(filter(selection.matches, view.all_locations()), key=pane_order)


def neighbors(
    view: View, loc: Location, direction: Direction | None = None
) -> PaneNeighbors | DirectionNeighbors:
    """The panes sharing each edge of ``loc``, largest shared length first, from its
    window's full layout."""
    try:
        table = neighbors_of_layout(loc.window.layout).get(id_number(loc.pane.id), {})
    except LayoutError:
        table = {}
    panes = view.locations_of(loc.server.socket_path)

    def entries(d: Direction) -> tuple[NeighborEntry, ...]:
        out = []
        for n in table.get(d, ()):
            other = panes.get(f"%{n.pane}")
            if other is not None:
                out.append(NeighborEntry(id=other.pane.id, index=other.pane.index, shared=n.shared))
        return tuple(out)

    if direction is not None:
        return DirectionNeighbors(pane=loc.pane.id, direction=direction, panes=entries(direction))
    return PaneNeighbors(
        pane=loc.pane.id,
        above=entries("above"),
        below=entries("below"),
        left=entries("left"),
        right=entries("right"),
    )


def tree(view: View, only: str | None = None) -> Tree:
    """Every server, session, window (under each session it is linked into) and pane."""
    servers: list[TreeServer] = []
    for state in sorted(view.server_states(), key=lambda s: s.socket_path):
        if only is not None and state.socket_path != only:
            continue
        # Each pane as its Location has it (one PaneRef builder: dead, floating and the rest
        # are the same in /v1/tree as in /v1/panes); a pane of a window no session links has
        # none, and no place in the tree either.
        locations = view.locations_of(state.socket_path)
        panes_of: dict[str, list[PaneRef]] = {}
        for p in sorted(state.panes.values(), key=lambda p: p.index):
            loc = locations.get(p.id)
            if loc is not None:
                panes_of.setdefault(p.window_id, []).append(loc.pane)
        windows_of: dict[str, list[TreeWindow]] = {}
        for link in state.winlinks:  # sorted by session id, then index
            window = state.windows.get(link.window_id)
            if window is None:
                continue
            windows_of.setdefault(link.session_id, []).append(
                TreeWindow(
                    id=window.id,
                    index=link.index,
                    name=window.name,
                    active=link.active,
                    zoomed=window.zoomed,
                    layout=window.layout,
                    panes=tuple(panes_of.get(window.id, ())),
                )
            )
        sessions = [
            TreeSession(id=s.id, name=s.name, windows=tuple(windows_of.get(s.id, ())))
            for s in sorted(state.sessions.values(), key=lambda s: id_number(s.id))
        ]
        servers.append(
            TreeServer(
                socket_path=state.socket_path,
                pid=state.pid,
                running=state.running,
                sessions=tuple(sessions),
            )
        )
    return Tree(servers=tuple(servers))
