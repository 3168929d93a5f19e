"""The in-memory picture of one tmux server, and how it is read from tmux's rows.

Pure: rows (strings) in, frozen msgspec Structs out.  The row recipe follows the measured
facts about tmux escaping: every row starts with a constant tag, fields are separated by TAB,
and only ids, numbers, flags, ttys and vis-encoded names (which never hold a raw control
character) are used, with the name last.  A row with the wrong tag or field count is a
protocol failure (``RowError``): the caller re-syncs rather than guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from itertools import groupby
from operator import attrgetter

import msgspec

from tmuxlocd.core.errors import RowError
from tmuxlocd.core.names import unvis

# ----------------------------------------------------------------------------------------------
# Row formats.  Real TAB characters go into the -F argument (protocol.command quotes them), so
# tmux's parser needs no escape processing.

SESSION_FORMAT = "\t".join(["S", "#{session_id}", "#{session_attached}", "#{session_name}"])

# In list-windows, #{pane_id} is the window's active pane.  #{window_layout} is the full
# (unzoomed) layout even while a pane is zoomed.
WINDOW_FORMAT = "\t".join(
    [
        "W",
        "#{session_id}",
        "#{window_id}",
        "#{window_index}",
        "#{window_active}",
        "#{window_zoomed_flag}",
        "#{pane_id}",
        "#{window_layout}",
        "#{window_name}",
    ]
)

_PANE_FIELDS = [
    "#{window_id}",
    "#{pane_id}",
    "#{pane_index}",
    "#{pane_active}",
    "#{pane_tty}",
    "#{pane_pid}",
    "#{pane_left}",
    "#{pane_top}",
    "#{pane_width}",
    "#{pane_height}",
    # "0" for a live pane; a dead one's "1:<status>:<signal>", each empty until tmux has
    # reaped its process (before 3.6 a lost SIGCHLD leaves a dead pane without them:
    # tmuxlocd.daemon.pane_exits); 3.2 has no pane_dead_signal (a signal death has neither).
    # One field, so a row is as long as before: ":" (never a "." or space, which the hook's
    # words are split by), and the conditional's commas are nested, not a loop's.
    "#{?pane_dead,1:#{pane_dead_status}:#{pane_dead_signal},0}",
]
# For `list-panes -a`: pane facts only (window facts come from list-windows, once per window,
# which is much cheaper than repeating the layout on every pane row).
PANE_FORMAT = "\t".join(["P", *_PANE_FIELDS])
# For `list-panes -t @W` (one dirty window): the window's own facts ride along, so one
# command re-reads a window whole.
PANE_WINDOW_FORMAT = "\t".join(
    ["Q", *_PANE_FIELDS, "#{window_zoomed_flag}", "#{window_layout}", "#{window_name}"]
)


# For the 3.4+ hook message (mirror.hook_command): a window's panes inside ``#{P:...}``, one
# word each.  Fields are joined by "." because a comma inside the loop would separate the
# active pane's alternative format; none of these fields can hold a "." or a space.
MESSAGE_PANE_FORMAT = "#{P: " + ".".join(_PANE_FIELDS[1:]) + "}"


class Session(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    attached: int


class Winlink(msgspec.Struct, frozen=True, kw_only=True):
    """A window's place in one session (a window linked into several has several)."""

    session_id: str
    window_id: str
    index: int
    active: bool


class Window(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    layout: str
    zoomed: bool
    active_pane: str | None = None


class Pane(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    window_id: str
    index: int
    active: bool
    tty: str
    pid: int
    left: int
    top: int
    width: int
    height: int
    dead: bool = False
    # A dead pane's exit status or the signal that ended it, once tmux knows them.
    exit_status: int | None = None
    exit_signal: int | None = None


def _int(value: str, what: str, row: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise RowError(f"{what} is not a number in row {row!r}") from None


def _fields(row: str, tag: str, count: int) -> list[str]:
    # The last field is the name, which may hold a raw TAB (see join_rows): it takes the rest.
    parts = row.split("\t", count - 1)
    if parts[0] != tag or len(parts) != count:
        raise RowError(f"expected a {tag!r} row of {count} fields, got {row!r}")
    return parts


def _check_id(value: str, sigil: str, row: str) -> str:
    if len(value) < 2 or value[0] != sigil or not value[1:].isdigit():
        raise RowError(f"bad id {value!r} in row {row!r}")
    return value


# A window name given with `new-window -n` or `new-session -n` is stored as given: only
# rename-window, break-pane -n and automatic names go through tmux's vis encoding (measured on
# 3.3a).  Such a name can hold any control character: a TAB (harmless, the name is the last
# field) or a LF, which splits its row in two.  A line that does not begin the way every row
# of its kind begins therefore continues the name of the row before it.
_ROW_START = {
    "W": re.compile(r"W\t\$[0-9]+\t@[0-9]+\t[0-9]+\t[01]\t[01]\t(?:%[0-9]+)?\t"),
    "Q": re.compile(r"Q\t@[0-9]+\t%[0-9]+\t"),
}
_RAW_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def join_rows(lines: Iterable[str], tag: str) -> list[str]:
    """Rows of kind ``tag`` ("W" or "Q") from reply lines, names split by a raw LF rejoined."""
    start = _ROW_START[tag]
    rows: list[str] = []
    for line in lines:
        if rows and start.match(line) is None:
            rows[-1] += "\n" + line
        else:
            rows.append(line)
    return rows


def decode_window_name(stored: str) -> str:
    """The name a user gave.  vis encoding never leaves a raw control character, so a name
    holding one was stored as given and is kept as it is; any other is vis-decoded."""
    if _RAW_CONTROL.search(stored) is not None:
        return stored
    return unvis(stored)


def parse_session_row(row: str) -> Session:
    _, sid, attached, name = _fields(row, "S", 4)
    return Session(
        id=_check_id(sid, "$", row), name=unvis(name), attached=_int(attached, "attached", row)
    )


def parse_window_row(row: str) -> tuple[Winlink, Window]:
    _, sid, wid, index, active, zoomed, pane, layout, name = _fields(row, "W", 9)
    _check_id(sid, "$", row)
    _check_id(wid, "@", row)
    link = Winlink(
        session_id=sid, window_id=wid, index=_int(index, "index", row), active=active == "1"
    )
    window = Window(
        id=wid,
        name=decode_window_name(name),
        layout=layout,
        zoomed=zoomed == "1",
        active_pane=_check_id(pane, "%", row) if pane else None,
    )
    return link, window


def _pane(parts: list[str], row: str) -> Pane:
    wid, pid_, index, active, tty, pid, left, top, width, height, dead = parts
    dead, _, ended = dead.partition(":")
    status, _, signal = ended.partition(":")
    return Pane(
        id=_check_id(pid_, "%", row),
        window_id=_check_id(wid, "@", row),
        index=_int(index, "pane_index", row),
        active=active == "1",
        tty=tty,
        pid=_int(pid, "pane_pid", row) if pid else 0,
        left=_int(left, "pane_left", row),
        top=_int(top, "pane_top", row),
        width=_int(width, "pane_width", row),
        height=_int(height, "pane_height", row),
        dead=dead == "1",
        exit_status=_int(status, "pane_dead_status", row) if status else None,
        # A number: tmux names a signal only where libc has sys_signame (not Linux).
        exit_signal=_int(signal, "pane_dead_signal", row) if signal else None,
    )


def parse_pane_row(row: str) -> Pane:
    return _pane(_fields(row, "P", 12)[1:], row)


def parse_message_pane(window_id: str, word: str) -> Pane:
    """One pane of a window from the word ``MESSAGE_PANE_FORMAT`` made of it."""
    parts = word.split(".")
    if len(parts) != len(_PANE_FIELDS) - 1:
        raise RowError(f"expected {len(_PANE_FIELDS) - 1} pane fields, got {word!r}")
    return _pane([window_id, *parts], word)


def parse_pane_window_row(row: str) -> tuple[Pane, Window]:
    parts = _fields(row, "Q", 15)
    pane = _pane(parts[1:12], row)
    zoomed, layout, name = parts[12:]
    active = pane.id if pane.active else None
    return pane, Window(
        id=pane.window_id,
        name=decode_window_name(name),
        layout=layout,
        zoomed=zoomed == "1",
        active_pane=active,
    )


def parse_window_query(rows: Iterable[str]) -> tuple[Window | None, tuple[Pane, ...]]:
    """Rows of ``list-panes -t @W -F PANE_WINDOW_FORMAT``: the window and its panes."""
    window: Window | None = None
    panes: list[Pane] = []
    for row in join_rows(rows, "Q"):
        pane, win = parse_pane_window_row(row)
        panes.append(pane)
        if window is None or win.active_pane is not None:
            window = win
    return window, tuple(panes)


class ServerState(msgspec.Struct, frozen=True, kw_only=True):
    """Everything the daemon knows about one tmux server at one instant."""

    socket_path: str
    pid: int | None = None
    running: bool = False
    sessions: dict[str, Session] = msgspec.field(default_factory=dict)
    winlinks: tuple[Winlink, ...] = ()
    windows: dict[str, Window] = msgspec.field(default_factory=dict)
    panes: dict[str, Pane] = msgspec.field(default_factory=dict)
    # ``panes`` grouped by window, in their order, when the maker keeps them so (the
    # mirror): a window unchanged since the last state has the very same tuple, so a
    # rebuild finds the changed windows without a pass over every pane.  None: grouped by
    # whoever needs it.  A copy with other ``panes`` must set this anew (or to None).
    by_window: dict[str, tuple[Pane, ...]] | None = None


_window_of = attrgetter("window_id")


def group_panes(panes: Mapping[str, Pane]) -> dict[str, tuple[Pane, ...]]:
    """``panes`` by window, in their order (``ServerState.by_window``).

    tmux lists a window's panes together, in index order: grouping runs (in C) is what
    makes this pass over every pane cheap.  A window whose panes are not one run is still
    grouped right, joined."""
    lists: dict[str, list[Pane]] = {}
    for wid, run in groupby(panes.values(), key=_window_of):
        have = lists.get(wid)
        if have is None:
            lists[wid] = list(run)
        else:
            have.extend(run)
    return {wid: tuple(run) for wid, run in lists.items()}


def state_from_rows(
    socket_path: str,
    pid: int | None,
    session_rows: Iterable[str],
    window_rows: Iterable[str],
    pane_rows: Iterable[str],
) -> ServerState:
    """A whole server from ``list-sessions``, ``list-windows -a`` and ``list-panes -a``."""
    sessions = {s.id: s for s in map(parse_session_row, session_rows)}
    winlinks: list[Winlink] = []
    windows: dict[str, Window] = {}
    for row in join_rows(window_rows, "W"):
        link, window = parse_window_row(row)
        winlinks.append(link)
        windows[window.id] = window
    panes: dict[str, Pane] = {}
    for row in pane_rows:
        pane = parse_pane_row(row)
        panes[pane.id] = pane  # list-panes -a repeats a linked window's panes: same values
    return ServerState(
        socket_path=socket_path,
        pid=pid,
        running=True,
        sessions=sessions,
        winlinks=tuple(sort_winlinks(winlinks)),
        windows=windows,
        panes=panes,
    )


def id_number(ident: str) -> int:
    """``$3``/``@3``/``%3`` -> 3 (ids sort numerically, not as strings)."""
    return int(ident[1:])


def sort_winlinks(links: Iterable[Winlink]) -> list[Winlink]:
    return sorted(links, key=lambda w: (id_number(w.session_id), w.index))


# ----------------------------------------------------------------------------------------------
# The safety-net digest.  tmux re-evaluates a control client's format subscriptions once a
# second and reports a value only when it changed; a session-type subscription whose format
# loops over every session sees the whole server.  It carries what changes silently
# (respawn-pane: pane_pid; swap-window without -d and renumbering: window_index) and every
# window's layout and zoom, so that a change whose hook signal was lost (two wait-for signals
# with no waiter cancel each other) is still found; comparing it with the model names exactly
# the windows to re-read.
# Cost matters: tmux expands it every second whether or not anything changed.  Measured at
# 1,000 panes in 40 windows on 3.3a: about 7 ms of server CPU per evaluation with one field
# per pane, 11 ms with three (pane_id, pane_pid, pane_dead), and about 2.5 ms more for the
# windows' layouts.  So each pane contributes its pid only, in index order: a pane added,
# removed or respawned changes its window's list.  A dead pane (remain-on-exit) contributes
# ``d<status>s<signal>`` instead, so a death the hooks did not tell (--no-hooks, a lost
# wait-for signal) and a status tmux reports late (a lost SIGCHLD before 3.6) are found too;
# a live pane costs one conditional more than its pid (``bench.tmux_costs``).
# No commas at the loops' own level: there a comma separates the alternative format for the
# current window or active pane.  (A conditional's commas, nested, and a layout *value*'s
# are harmless.)

DIGEST_NAME = "tmuxlocd-digest"
DIGEST_FORMAT = (
    "#{S: S#{session_id}#{W: W#{window_id}.#{window_index}.#{window_zoomed_flag}"
    ".#{window_layout}#{P: #{?pane_dead,d#{pane_dead_status}s#{pane_dead_signal},#{pane_pid}}}}}"
)


def digest_token(pane: Pane) -> str:
    """What the digest says of ``pane`` (``DIGEST_FORMAT``'s pane part)."""
    if pane.dead:
        status = "" if pane.exit_status is None else str(pane.exit_status)
        sig = "" if pane.exit_signal is None else str(pane.exit_signal)
        return f"d{status}s{sig}"
    return str(pane.pid)


class DigestDiff(msgspec.Struct, frozen=True):
    winlinks_differ: bool
    windows: frozenset[str]  # windows whose panes differ (re-read them)


def compare_digest(value: str, state: ServerState) -> DigestDiff:
    """What the digest says the model has wrong.  A malformed digest asks for everything."""
    links: set[tuple[str, str, int]] = set()
    pids: dict[str, list[str]] = {}
    shapes: dict[str, tuple[bool, str]] = {}
    session = ""
    current: list[str] | None = None
    try:
        for token in value.split():
            kind = token[0]
            if kind == "S":
                session, current = token[1:], None
            elif kind == "W":
                wid, index, zoomed, layout = token[1:].split(".", 3)
                links.add((session, wid, int(index)))
                # a window linked into several sessions is listed under each: keep one list
                current = [] if wid not in pids else None
                if current is not None:
                    pids[wid] = current
                    shapes[wid] = (zoomed == "1", layout)
            elif token.isdigit() or token[0] == "d":
                if current is not None:
                    current.append(token)
            else:
                raise ValueError(token)
    except (ValueError, IndexError):
        return DigestDiff(True, frozenset(state.windows))
    model_links = {(w.session_id, w.window_id, w.index) for w in state.winlinks}
    known: dict[str, list[tuple[int, str]]] = {}
    for pane in state.panes.values():
        known.setdefault(pane.window_id, []).append((pane.index, digest_token(pane)))
    dirty = {
        wid
        for wid in pids.keys() | known.keys()
        if pids.get(wid, []) != [token for _, token in sorted(known.get(wid, []))]
    }
    for wid, shape in shapes.items():
        known_window = state.windows.get(wid)
        if known_window is not None and (known_window.zoomed, known_window.layout) != shape:
            dirty.add(wid)
    return DigestDiff(links != model_links, frozenset(dirty))
