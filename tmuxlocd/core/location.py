"""Per-pane Location (SPEC §3), built from a ServerState; and its three-line text form (§4).

Pure.  Locations are rebuilt per *window*: a window's Locations depend only on the window,
its panes, its winlinks and the names of the sessions that link it, so ``LocationBuilder``
keeps them keyed by exactly those inputs and recomputes a window only when one of them
changed.  At 1,000 panes a split then costs one window's worth of work, not the server's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

import msgspec

from tmuxlocd.core.errors import LayoutError
from tmuxlocd.core.layout import DIRECTIONS, Box, box_adjacency, tiled_boxes
from tmuxlocd.core.model import Pane, ServerState, Session, Window, Winlink, group_panes, id_number


class ServerRef(msgspec.Struct, frozen=True, kw_only=True):
    socket_path: str
    pid: int | None


class SessionRef(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str


class WindowRef(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    index: int
    name: str
    active: bool
    zoomed: bool
    layout: str


class PaneRef(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    id: str
    index: int
    active: bool
    tty: str
    pid: int
    left: int
    top: int
    width: int
    height: int
    # Pane activity (spec "Pane activity").  Left out of the JSON at their defaults, so a
    # Location of a live pane is what it was before they existed.  ``dead``, ``exit_status``
    # and ``exit_signal`` come from tmux's rows, in every Location; ``command`` and ``busy``
    # are filled only in answers about activity (waits, pane.activity events, the tree,
    # list_panes): the hub's Locations keep their defaults, so change detection, ETags and
    # the text form never see a command start or end.
    command: str = ""
    busy: bool | None = None
    dead: bool = False
    exit_status: int | None = None
    exit_signal: int | None = None
    # A floating pane (tmux 3.7+): it has no neighbours, and ``covers`` lists the tiled panes
    # it lies over, most covered first.  Left out for a tiled pane, like the fields above.
    floating: bool = False
    covers: tuple[str, ...] = ()


class Neighbors(msgspec.Struct, frozen=True, kw_only=True):
    above: tuple[str, ...] = ()
    below: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    right: tuple[str, ...] = ()


class Link(msgspec.Struct, frozen=True, kw_only=True):
    session_id: str
    session_name: str
    window_index: int


class Location(msgspec.Struct, frozen=True, kw_only=True):
    server: ServerRef
    session: SessionRef
    window: WindowRef
    pane: PaneRef
    neighbors: Neighbors
    links: tuple[Link, ...] = ()


NO_NEIGHBORS = Neighbors()


class LayoutFacts(msgspec.Struct, frozen=True):
    """What a window's layout says of its panes: the tiled panes' neighbours (a floating pane
    is in no list) and each floating pane's ``covers``."""

    neighbors: dict[str, Neighbors]
    floating: dict[str, tuple[str, ...]]


@lru_cache(maxsize=1024)
def layout_facts(layout: str) -> LayoutFacts | None:
    """``LayoutFacts`` from the full layout as tmux wrote it (``tiled_boxes``: the panes read
    off its leaves, no tree built unless a pane floats); None for a string that is not a
    layout.

    Cached by layout string (failures too), since a window is rebuilt for reasons that
    leave its layout alone (a rename, a focus change); callers must not modify the result.
    A new layout (every split and kill) makes the table anew: from the sorted adjacency
    straight to ids, field by field (keyword dicts and Neighbor structs per pane were most
    of its cost).
    """
    try:
        tiled, floating = tiled_boxes(layout)
    except LayoutError:
        return None
    out: dict[str, Neighbors] = {}
    for number, (above, below, left, right) in box_adjacency(tiled).items():
        out[f"%{number}"] = Neighbors(
            above=tuple([f"%{n}" for _, n in above]) if above else (),
            below=tuple([f"%{n}" for _, n in below]) if below else (),
            left=tuple([f"%{n}" for _, n in left]) if left else (),
            right=tuple([f"%{n}" for _, n in right]) if right else (),
        )
    return LayoutFacts(out, {f"%{box[0]}": covered(box, tiled) for box in floating})


def covered(box: Box, tiled: list[Box]) -> tuple[str, ...]:
    """The tiled panes ``box`` overlaps, by the cells it covers of each (most first, then by
    pane number)."""
    _, left, top, right, bottom = box
    found = []
    for pane, tl, tt, tr, tb in tiled:
        area = max(0, min(right, tr) - max(left, tl)) * max(0, min(bottom, tb) - max(top, tt))
        if area > 0:
            found.append((-area, pane))
    return tuple(f"%{pane}" for _, pane in sorted(found))


def pane_neighbors(layout: str) -> dict[str, Neighbors]:
    """Pane id -> Neighbors of the tiled panes (``layout_facts``); none for a string that is
    not a layout."""
    facts = layout_facts(layout)
    return {} if facts is None else facts.neighbors


def window_locations(
    server: ServerRef,
    window: Window,
    links: list[Winlink],
    sessions: Mapping[str, Session],
    panes: Iterable[Pane],
    refs: dict[str, tuple[Pane, PaneRef]] | None = None,
) -> dict[str, Location]:
    """The Locations of one window's panes.

    ``links`` must be sorted by session id: the first is the window's home (SPEC §3: the
    linking session with the lowest id, stable whichever session a user types in).
    ``refs`` (pane id -> the Pane and the PaneRef made of it) is read and kept up to date:
    a pane whose row is the same object as last time keeps its PaneRef, which a diff then
    passes over by identity (a split rebuilds every pane of its window, and changes two).
    """
    if not links:
        return {}
    home = links[0]
    home_session = sessions.get(home.session_id)
    session = SessionRef(id=home.session_id, name=home_session.name if home_session else "")
    wref = WindowRef(
        id=window.id,
        index=home.index,
        name=window.name,
        active=home.active,
        zoomed=window.zoomed,
        layout=window.layout,
    )
    others = tuple(
        Link(
            session_id=link.session_id,
            session_name=s.name if (s := sessions.get(link.session_id)) else "",
            window_index=link.index,
        )
        for link in links[1:]
    )
    facts = layout_facts(window.layout)
    table = facts.neighbors if facts is not None else {}
    floats = facts.floating if facts is not None else {}
    out: dict[str, Location] = {}
    for pane in panes:
        kept = refs.get(pane.id) if refs is not None else None
        covers = floats.get(pane.id)
        # A pane's row alone does not say whether it floats, nor what it covers: the layout
        # does (a tiled pane split under a floating one changes the latter's ``covers``).
        if (
            kept is not None
            and kept[0] is pane
            and kept[1].floating is (covers is not None)
            and kept[1].covers == (covers or ())
        ):
            ref = kept[1]
        else:
            ref = PaneRef(
                id=pane.id,
                index=pane.index,
                active=pane.active,
                tty=pane.tty,
                pid=pane.pid,
                left=pane.left,
                top=pane.top,
                width=pane.width,
                height=pane.height,
                dead=pane.dead,
                exit_status=pane.exit_status,
                exit_signal=pane.exit_signal,
                floating=covers is not None,
                covers=covers or (),
            )
            if refs is not None:
                refs[pane.id] = (pane, ref)
        out[pane.id] = Location(
            server=server,
            session=session,
            window=wref,
            pane=ref,
            neighbors=table.get(pane.id, NO_NEIGHBORS),
            links=others,
        )
    return out


_WindowKey = tuple[
    ServerRef, Window, tuple[Winlink, ...], tuple[Session | None, ...], tuple[Pane, ...]
]


class LocationBuilder:
    """Keeps every Location of a server, recomputing only the windows whose inputs changed.

    ``locations`` is updated in place; ``build`` returns the before and after of exactly the
    panes that belong (or belonged) to a recomputed window, which is all a diff needs.  The
    work per update is one look at each window (its panes come grouped from the mirror, the
    same tuple while they are unchanged) plus the changed windows: at 1,000 panes a split
    costs one window, not the server.
    """

    def __init__(self) -> None:
        self._cache: dict[str, tuple[_WindowKey, dict[str, Location]]] = {}
        self.locations: dict[str, Location] = {}
        # Window id -> its layout string, for the windows whose layout could not be read
        # (their panes have no neighbours): the shell says so, since tmux never writes one.
        self.unreadable: dict[str, str] = {}
        # Kept from one build to the next, so that what did not change is the same object
        # (window_locations' ``refs``; the server's ref while its pid stays).
        self._refs: dict[str, tuple[Pane, PaneRef]] = {}
        self._server: ServerRef | None = None
        # The last state's winlinks (the mirror's own tuple, replaced only when the windows
        # are re-read) and sessions, and the links grouped by window made of them.
        self._winlinks: tuple[Winlink, ...] | None = None
        self._sessions: Mapping[str, Session] = {}
        self._links_of: dict[str, list[Winlink]] = {}

    def build(self, state: ServerState) -> tuple[dict[str, Location], dict[str, Location]]:
        """Bring ``locations`` up to ``state``; return (old, new) of the recomputed panes."""
        server = self._server
        if server is None or server.socket_path != state.socket_path or server.pid != state.pid:
            server = self._server = ServerRef(socket_path=state.socket_path, pid=state.pid)
        sessions = state.sessions
        # A split or a kill leaves the links and sessions as they were: then a window whose
        # own row and panes' tuple are the very objects of its cached key is unchanged, seen
        # without making its key (at 1,000 panes, most of a split's look at every window).
        # The sessions compare equal at the cost of an identity check per session.
        same_links = state.winlinks is self._winlinks and sessions == self._sessions
        if same_links:
            links_of = self._links_of
        else:
            links_of = {}
            for link in state.winlinks:  # sorted by session id, then index
                links_of.setdefault(link.window_id, []).append(link)
            # A copy: a caller's dict changed in place must not compare equal to itself.
            self._winlinks, self._sessions, self._links_of = (
                state.winlinks,
                dict(sessions),
                links_of,
            )
        panes_of = state.by_window if state.by_window is not None else group_panes(state.panes)
        old: dict[str, Location] = {}
        new: dict[str, Location] = {}
        cache: dict[str, tuple[_WindowKey, dict[str, Location]]] = {}
        for wid, window in state.windows.items():
            # The panes' tuple is the mirror's own: the same object while the window's
            # panes are unchanged, which the key comparison sees without looking inside.
            panes = panes_of.get(wid, ())
            hit = self._cache.get(wid)
            if same_links and hit is not None:
                kept = hit[0]
                if kept[0] is server and kept[1] is window and kept[4] is panes:
                    cache[wid] = hit
                    continue
            links = links_of.get(wid, [])
            key: _WindowKey = (
                server,
                window,
                tuple(links),
                tuple(sessions.get(link.session_id) for link in links),
                panes,
            )
            if hit is not None and hit[0] == key:
                # Equal but made anew (a re-read parses every window again): the new objects
                # are kept, so that the next build passes this window over by identity.
                cache[wid] = (key, hit[1])
                continue
            locs = window_locations(server, window, links, sessions, panes, self._refs)
            if locs and layout_facts(window.layout) is None:
                self.unreadable[wid] = window.layout
            else:
                self.unreadable.pop(wid, None)
            if hit is not None:
                old.update(hit[1])
            new.update(locs)
            cache[wid] = (key, locs)
        for wid in self._cache.keys() - cache.keys():
            old.update(self._cache[wid][1])
            self.unreadable.pop(wid, None)
        for pane_id in old:
            self.locations.pop(pane_id, None)
            if pane_id not in new:
                self._refs.pop(pane_id, None)
        self.locations.update(new)
        self._cache = cache
        return old, new


def build_locations(state: ServerState) -> dict[str, Location]:
    """Every Location of a server, from scratch (pane id -> Location)."""
    builder = LocationBuilder()
    builder.build(state)
    return builder.locations


def sort_pane_ids(ids: Iterable[str]) -> list[str]:
    return sorted(ids, key=id_number)


# ----------------------------------------------------------------------------------------------
# Which fields changed between two Locations of the same pane (pane.changed's "changed").

_SECTIONS = ("server", "session", "window", "pane")


def changed_fields(
    old: Location, new: Location, shared: dict[tuple[int, int], list[str]] | None = None
) -> list[str]:
    """The names of what differs (``section.field``, ``neighbors``, ``links``).

    ``shared`` is for one diff's calls: the panes of a window share their server, session
    and window objects, so a changed layout is compared once for all of them, not per pane
    (the ids stay valid while the Locations being compared hold the objects)."""
    out: list[str] = []
    for section in _SECTIONS:
        a = getattr(old, section)
        b = getattr(new, section)
        if a is b:
            continue
        key = (id(a), id(b))
        names = shared.get(key) if shared is not None and section != "pane" else None
        if names is None:
            names = _differing(section, a, b)
            if shared is not None and section != "pane":
                shared[key] = names
        out += names
    if old.neighbors != new.neighbors:
        out.append("neighbors")
    if old.links != new.links:
        out.append("links")
    return out


def _differing(section: str, a: msgspec.Struct, b: msgspec.Struct) -> list[str]:
    if a == b:
        return []
    # Read as tuples: cheaper than a getattr per field.
    return [
        f"{section}.{field}"
        for field, x, y in zip(
            a.__struct_fields__, msgspec.structs.astuple(a), msgspec.structs.astuple(b), strict=True
        )
        if x != y
    ]


# ----------------------------------------------------------------------------------------------
# Text form (SPEC §4), byte for byte.

_json = msgspec.json.Encoder()


# msgspec escapes '"', '\' and the C0 controls only.  DEL and the C1 controls (U+0080-U+009F,
# U+0085 among them) are control characters too, and U+2028/U+2029 end a line for many
# readers (Python's str.splitlines, JavaScript): all are escaped, so that the text form is
# three lines however it is split.
_MORE_ESCAPES = re.compile("[\x7f-\x9f\u2028\u2029]")


def _json_string(value: str) -> str:
    # Non-ASCII stays UTF-8 (SPEC §4); the escapes above keep it on one line.
    text = _json.encode(value).decode("utf-8")
    return _MORE_ESCAPES.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


def _one_line(value: str) -> str:
    """A session name on one line: control characters escaped as in a JSON literal.

    SPEC §4 writes the session name bare; a name holding a newline would break the
    three-line form, so such characters (and only they) are escaped.
    """
    if value.isprintable():
        return value
    return _json_string(value)[1:-1]


def text_form(
    loc: Location,
    *,
    turn: int | None = None,
    with_neighbors: bool = False,
    agents: Mapping[str, str] | None = None,
) -> str:
    """The text form; ``agents`` (pane id -> harness) names the neighbours that hold a coding
    agent, ``right %4 (codex)``: which, not its state, so a state change changes no text."""
    head = "tmux location:" if turn is None else f"tmux location (turn {turn}):"
    w, p = loc.window, loc.pane
    lines = [
        head,
        (
            f"session {_one_line(loc.session.name)}, window {w.index} {_json_string(w.name)}, "
            f"pane {p.index} {p.id}{' (floating)' if p.floating else ''}"
        ),
        f"window active={int(w.active)}, pane active={int(p.active)}, layout {w.layout}",
    ]
    if with_neighbors and p.floating:
        # A floating pane has no edge neighbours; what it lies over is what "below" means.
        lines.append(f"neighbors: floating, covers {','.join(p.covers) or 'none'}")
    elif with_neighbors:
        named = agents or {}
        parts = []
        for d in DIRECTIONS:
            ids = getattr(loc.neighbors, d)
            parts.append(f"{d} {','.join(_with_agent(i, named) for i in ids) if ids else 'none'}")
        lines.append("neighbors: " + "; ".join(parts))
    return "".join(line + "\n" for line in lines)


def _with_agent(pane: str, agents: Mapping[str, str]) -> str:
    harness = agents.get(pane)
    return pane if harness is None else f"{pane} ({harness})"
