"""The mirror of one tmux server: notifications and replies in, commands and a model out.

Sans-I/O, in the manner of the control-mode parser: nothing here touches a process, a socket
or a clock.  The observer (``observer.py``) moves the bytes; every decision about what to
re-read, and what a reply means for the model, is made here:

- ``on_event`` takes a control-mode notification and marks what it names dirty (a window,
  or the structure), or says what the shell must do (the attach completed, hooks must follow
  the attached session, a configuration error to log);
- ``reread`` is a generator: it yields the batches of commands to send for what is dirty and
  receives their replies, applying them to the model; a reply that is an ``%error`` or a row
  that cannot be parsed raises ``CommandFailed`` / ``RowError``;
- ``Barriers`` numbers the ``/v1/sync`` requests and decides which are served, which failed;
- ``Episode`` tells when a failure starts and ends (what to log once).

Tested table-style from captured transcripts and hand-built replies (tests/unit/test_mirror.py).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from tmuxlocd.core import protocol, spelling
from tmuxlocd.core.errors import CommandFailed, RowError
from tmuxlocd.core.model import (
    DIGEST_NAME,
    MESSAGE_PANE_FORMAT,
    PANE_FORMAT,
    PANE_WINDOW_FORMAT,
    SESSION_FORMAT,
    WINDOW_FORMAT,
    Pane,
    ServerState,
    Session,
    Window,
    Winlink,
    compare_digest,
    group_panes,
    id_number,
    join_rows,
    parse_message_pane,
    parse_pane_row,
    parse_session_row,
    parse_window_query,
    parse_window_row,
    sort_winlinks,
)
from tmuxlocd.core.names import output_escapes_dollars, undo_output_dollars
from tmuxlocd.core.protocol import (
    ClientSessionChanged,
    Event,
    LayoutChange,
    Message,
    Reply,
    SessionChanged,
    SessionRenamed,
    SessionsChanged,
    SessionWindowChanged,
    SubscriptionChanged,
    Unknown,
    WindowAdd,
    WindowClose,
    WindowPaneChanged,
    WindowRenamed,
)

LIST_SESSIONS = ("list-sessions", "-F", SESSION_FORMAT)
LIST_WINDOWS = ("list-windows", "-a", "-F", WINDOW_FORMAT)
LIST_PANES = ("list-panes", "-a", "-F", PANE_FORMAT)
SERVER_FACTS = ("display-message", "-p", "#{pid}\t#{version}\t#{client_name}")

# A window whose own listing fails while the structure still lists it, this many times in
# a row, is a failing command (not a window that just went away).
WINDOW_MISSES = 2
# A barrier fails after this many failed attempts made while it waits (the first may fail on
# a connection chosen before the user's aliases changed; the next attachment reads them).
BARRIER_TRIES = 3
# The prefix of the %message lines the daemon's 3.4+ hook sends: "tmuxlocd <hook> @<id>".
MESSAGE_PREFIX = "tmuxlocd "
# tmux 3.3 and older (no %message): the hook appends its window's rows to a server user option
# that the hook waiter reads and clears each round, and counts its firings in another, so that
# rows older than a re-read are known (ServerMirror.on_waiter_round).
LAYOUTS_OPTION = "@tmuxlocd_layouts"
LAYOUT_SEQ_OPTION = "@tmuxlocd_layout_seq"
# The hook stops appending once the option holds this many characters (a daemon killed leaves
# its hook running with no waiter to clear it); the daemon then lists every window instead.
LAYOUTS_LIMIT = 1 << 18
# Reads the counter (appended to every re-read batch while the waiter's rows are used).
READ_LAYOUT_SEQ = ("display-message", "-p", f"#{{{LAYOUT_SEQ_OPTION}}}")

Argv = tuple[str, ...]
Reread = Generator[list[Argv], list[Reply], None]


def check(names: Sequence[str], *replies: Reply) -> None:
    """Raise for the first reply that is an ``%error``, naming its command and tmux's words."""
    for i, reply in enumerate(replies):
        if not reply.ok:
            name = names[min(i, len(names) - 1)]
            raise CommandFailed(name, " ".join(reply.lines)[:200] or "%error with no message")


@dataclass
class Dirty:
    """What to re-read: everything, sessions and windows, windows only (``layouts``:
    list-windows -a, then the windows that differ), or the named windows; ``publish``: the
    model was changed without a read (a hook message carried the rows), publish it;
    ``deferred``: 3.3 waiter rows without a pane their window had, by window, applied after
    a round trip on the control connection unless it brought a structure change."""

    full: bool = False
    structure: bool = False
    layouts: bool = False
    windows: set[str] = field(default_factory=set)
    publish: bool = False
    deferred: dict[str, list[str]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return (
            self.full
            or self.structure
            or self.layouts
            or bool(self.windows)
            or self.publish
            or bool(self.deferred)
        )

    def only_publish(self) -> bool:
        """All there is to do is to publish what was applied: no read, nothing deferred."""
        return self.publish and not (
            self.full or self.structure or self.layouts or self.windows or self.deferred
        )


@dataclass(frozen=True)
class Effect:
    """What a notification asks of the shell beyond re-reading."""

    attached: bool = False  # %session-changed: the attach is complete (or we were moved)
    config_error: str | None = None  # tmux 3.4+ handed us the configuration's errors
    stray: bytes | None = None  # a line that belongs to nothing (logged at debug)
    # The safety net (digest) found a change while nothing was dirty or being read: no
    # notification, hook or notify had announced it.  What it found.  Such catches keep
    # coming when a path is missing (hooks off and no snippet) or tmux announces nothing
    # (respawn, renumbering).
    caught: str | None = None
    # tmux 3.3: the layout of a window held for the waiter's rows, which are on their way by
    # another client.  What can be made of the layout alone (the window's neighbours) may be
    # made now, off the rows' path: the rows bring the same layout string.
    rows_due: str | None = None


NOTHING = Effect()


@dataclass
class Hold:
    """A window of the attached session whose %layout-change (tmux 3.3) waits for the hook
    waiter's rows instead of a query: they answer it once they show this layout (and this
    active pane, when a %window-pane-changed followed)."""

    layout: str
    generation: int
    active: str | None = None


class ServerMirror:
    """The model of one server as read over its control connection, and what to re-read."""

    def __init__(self, socket_path: str) -> None:
        self.socket_path = socket_path
        self.pid: int | None = None
        self.version = ""
        self.client_name = ""  # our control client's name (3.4+ hooks address it)
        self.spell = spelling.PLAIN
        self.attached_session = ""
        self.sessions: dict[str, Session] = {}
        self.winlinks: tuple[Winlink, ...] = ()
        self.windows: dict[str, Window] = {}
        self.panes: dict[str, Pane] = {}
        # ``panes`` by window, in their order; changed only with ``panes`` (the model is
        # changed by this class's methods alone).  A split or kill replaces one window's
        # panes: finding them by a scan of every pane cost about 40 µs at 1,000 panes, twice
        # per change, and the location builder grouped them all again.  None: rebuilt from
        # ``panes`` when next needed (after a full read).
        self._grouped: dict[str, tuple[Pane, ...]] | None = None
        # (window id, a hook's word for a pane) -> the Pane it was read as.  A split or kill
        # changes one or two panes of a window whose rows name them all: the others are
        # taken as they were (no parse), and stay the very objects the model holds, which
        # the location builder sees without comparing them (a split's rows at 1,000 panes,
        # 26 of them, traced in the daemon: applied in 0.12 ms instead of 0.17).
        self._pane_words: dict[tuple[str, str], Pane] = {}
        self.dirty = Dirty()
        self.hooks_installed = False
        self.hooks_wanted = False  # the daemon installs hooks here (not --no-hooks)
        # The hook counter as of the end of the last re-read batch (tmux 3.3): rows counted
        # after it are newer than every reply applied.  None: not read on this attachment.
        self.layout_seq: int | None = None
        self.reading = False  # a re-read is under way (its replies are not applied yet)
        self._window_misses: dict[str, int] = {}
        # Windows marked dirty only by notifications that our 3.4+ hook message, arriving
        # later on the same connection, answers in full (on_hook_message).
        self._message_answers: set[str] = set()
        # tmux 3.3: windows whose %layout-change the waiter's rows should answer (no query
        # unless they do not come: release_held).
        self._held: dict[str, Hold] = {}
        # Windows whose rows last failed to come (a user's session-level hook array runs
        # instead of the global one there, say): queried at once, not held 30 ms each time,
        # until rows of theirs come again.
        self._rowless: set[str] = set()
        self._hold_generation = 0

    # ------------------------------------------------------------------ model

    def clear(self) -> None:
        """The server has no session, or is gone: an empty model."""
        self.sessions, self.winlinks, self.windows, self.panes = {}, (), {}, {}
        self._grouped = None
        self._pane_words = {}

    def state(self) -> ServerState:
        return ServerState(
            socket_path=self.socket_path,
            pid=self.pid,
            running=True,
            sessions=dict(self.sessions),
            winlinks=self.winlinks,
            windows=dict(self.windows),
            panes=dict(self.panes),
            by_window=dict(self._by_window()),
        )

    def _by_window(self) -> dict[str, tuple[Pane, ...]]:
        grouped = self._grouped
        if grouped is None:
            grouped = self._grouped = group_panes(self.panes)
        return grouped

    def attached_to(self, session_id: str) -> None:
        """A new attachment: the dirty marks of the old one are answered by a full read."""
        self.attached_session = session_id
        self.dirty = Dirty()
        self.layout_seq = None
        self._window_misses.clear()
        self._message_answers.clear()
        self._held.clear()
        self._rowless.clear()

    def server_facts(self, reply: Reply) -> None:
        """Take the answer of ``SERVER_FACTS``; ``CommandFailed`` when it is not one."""
        check(("display-message",), reply)
        fields = reply.lines[0].split("\t") if reply.lines else []
        if len(fields) != 3 or not fields[0].isdigit() or not fields[1] or not fields[2]:
            raise CommandFailed("display-message", f"unexpected answer {reply.lines[:1]!r}")
        self.pid = int(fields[0])
        self.version, self.client_name = fields[1], fields[2]

    # ------------------------------------------------------------------ notifications

    def mark(
        self,
        *,
        full: bool = False,
        structure: bool = False,
        layouts: bool = False,
        windows: Iterable[str] = (),
        publish: bool = False,
    ) -> None:
        self.dirty.full |= full
        self.dirty.structure |= structure
        self.dirty.layouts |= layouts
        windows = set(windows)
        self.dirty.windows |= windows
        self._message_answers -= windows
        for window_id in windows:
            self._held.pop(window_id, None)
            self.dirty.deferred.pop(window_id, None)
        self.dirty.publish |= publish

    def mark_geometry(self, window_id: str) -> None:
        """A window's layout or active pane changed (%layout-change, %window-pane-changed):
        dirty, and answered by a hook message about it that comes later -- unless the window
        was already dirty for another reason (a rename: the message has no name)."""
        answered = window_id not in self.dirty.windows or window_id in self._message_answers
        self.dirty.windows.add(window_id)
        if answered:
            self._message_answers.add(window_id)

    def on_event(self, event: Event) -> Effect:
        match event:
            case LayoutChange(window_id=w, layout=layout) if self._holds_for_rows(w):
                # The rows (or a re-read) may have come first: they travel by other clients
                # and are often read before the notification (at 1,000 panes, about half
                # the time).  Nothing is left to wait for then; a hold would wait its whole
                # time, query, and mark the window rowless.
                known = self.windows.get(w)
                if known is None or known.layout != layout:
                    self._hold_generation += 1
                    self._held[w] = Hold(layout=layout, generation=self._hold_generation)
                    return Effect(rows_due=layout)
            case WindowPaneChanged(window_id=w, pane_id=p) if w in self._held:
                self._held[w].active = p
            case WindowPaneChanged(window_id=w, pane_id=p) if (
                self._holds_for_rows(w)
                and (known := self.windows.get(w)) is not None
                and known.active_pane == p
            ):
                pass  # the rows that came first already show it (split-window without -d)
            case LayoutChange(window_id=w) | WindowPaneChanged(window_id=w):
                self.mark_geometry(w)
            case WindowRenamed(window_id=w):
                self.mark(windows=(w,))
            case SessionChanged(session_id=sid):
                # The attach completed, or our client was moved to another session.
                self.attached_session = sid
                self.mark(structure=True)
                return Effect(attached=True)
            case (
                WindowAdd()
                | WindowClose()
                | SessionWindowChanged()
                | SessionsChanged()
                | SessionRenamed()
            ):
                self.mark(structure=True)
            case SubscriptionChanged(name=name, value=value) if name == DIGEST_NAME:
                found = compare_digest(value, self.state())
                if found.winlinks_differ or found.windows:
                    # (A window held for the waiter's rows was announced: its rows are due.)
                    unannounced = not self.dirty and not self.reading and not self._held
                    self.mark(structure=found.winlinks_differ, windows=found.windows)
                    if unannounced:
                        links = ["window links"] if found.winlinks_differ else []
                        return Effect(caught=", ".join(links + sorted(found.windows)))
            case Message(text=text) if text.startswith(MESSAGE_PREFIX):
                self.on_hook_message(text[len(MESSAGE_PREFIX) :].split(" "))
            case ClientSessionChanged():
                pass  # another client switched session: no pane moved
            case protocol.ConfigError(text=text):
                # tmux 3.4+ keeps the errors of a configuration loaded by a detached start for
                # the first client that attaches; when that is us the user never sees them.
                return Effect(config_error=text)
            case Unknown(line=line):
                return Effect(stray=line[:200])
            case _:
                pass
        return NOTHING

    def _holds_for_rows(self, window_id: str) -> bool:
        """tmux 3.3 with our hook: every %layout-change is followed by the hook's rows of
        that window, by the waiter (tmux runs a notification's hooks after writing it to
        control clients), which make a query needless -- unless the window is already to be
        re-read for another reason."""
        return (
            self.hooks_installed
            and self.counts_layouts()
            and window_id not in self.dirty.windows
            and not self.dirty.full
            and window_id not in self._rowless
        )

    def holding(self) -> int | None:
        """The newest hold's generation, if any window waits for the waiter's rows."""
        return max((h.generation for h in self._held.values()), default=None)

    def release_held(self, generation: int) -> bool:
        """The rows for the holds up to ``generation`` did not come in time (no waiter
        round yet, a session-level hook array of the user's, rows older than a read): those
        windows are re-read.  True when that marked something."""
        due = [w for w, h in self._held.items() if h.generation <= generation]
        self._rowless.update(due)
        self.mark(windows=due)
        return bool(due)

    def _answer_hold(self, window_id: str) -> None:
        hold = self._held.get(window_id)
        window = self.windows.get(window_id)
        if hold is None or window is None or window.layout != hold.layout:
            return
        if hold.active is None or hold.active == window.active_pane:
            del self._held[window_id]

    def on_hook_message(
        self, words: list[str], *, answers: bool = True, elsewhere: frozenset[str] = frozenset()
    ) -> None:
        """Our 3.4+ hook's message: ``<hook> @W <zoomed> <layout> <pane> <pane> ...``, the
        window's panes as they were when the hook ran (``hook_command``); ``answers``: it
        came on the control connection after the notifications it answers (not so for the
        3.3 waiter's rows, which travel by another client).

        A window already known is updated from it with no query at all.  While a re-read is
        under way the message is only a mark: that re-read's replies may be older than the
        message, and would be applied after it.  A window not known yet (its winlink and
        name come from the structure), or rows that do not parse, are re-read."""
        window_id = words[1] if len(words) > 1 else ""
        if not (window_id.startswith("@") and window_id[1:].isdigit()):
            self.mark(layouts=True)
            return
        known = self.windows.get(window_id)
        if known is None or len(words) < 5 or self.reading or self.dirty.full:
            self.mark(windows=(window_id,))
            return
        zoomed, layout = words[2], words[3]
        try:
            panes = self._message_panes(window_id, words[4:])
        except RowError:
            panes = ()
        if zoomed not in ("0", "1") or not layout or not panes:
            self.mark(windows=(window_id,))
            return
        if not answers:
            # The 3.3 waiter's rows come by another client than the notifications.  A pane
            # that left the window was killed or moved.  Moved to a window whose rows came in
            # the same round (``elsewhere``: one command's hooks all run before the waiter
            # prints): both are applied.  Otherwise it may have been moved to a new window
            # (break-pane) whose %window-add is not read yet: applying the rows would publish
            # its removal, then its addition.  tmux wrote that notification before it ran
            # the hook, so a round trip on the control connection reads it; the rows wait for
            # that (``Dirty.deferred``), far cheaper for tmux than reading the structure.
            kept = {p.id for p in panes} | elsewhere
            if any(pane_id not in kept for pane_id in self._pane_ids_of(window_id)):
                self.dirty.deferred[window_id] = words
                return
        self._apply_rows(known, zoomed, layout, panes)
        # tmux writes a window's %layout-change to control clients and then runs its hooks
        # (notify.c), so the message was expanded after every notification before it: the
        # marks those made are answered, and the query they asked for is not sent.
        if answers and window_id in self._message_answers:
            self._message_answers.discard(window_id)
            self.dirty.windows.discard(window_id)
        self.mark(publish=True)

    def _apply_rows(self, known: Window, zoomed: str, layout: str, panes: Sequence[Pane]) -> None:
        window_id = known.id
        # Rows newer than deferred ones of the window replace them.
        self.dirty.deferred.pop(window_id, None)
        active = next((p.id for p in panes if p.active), None)
        self.windows[window_id] = msgspec.structs.replace(
            known, layout=layout, zoomed=zoomed == "1", active_pane=active
        )
        self._replace_panes(window_id, panes)

    def _message_panes(self, window_id: str, words: Sequence[str]) -> tuple[Pane, ...]:
        """The window's panes from a hook's words, each word parsed once (``_pane_words``)."""
        memo = self._pane_words
        if len(memo) > 2 * len(self.panes) + 256:
            memo.clear()  # words of panes long changed or gone
        out: list[Pane] = []
        for word in words:
            pane = memo.get((window_id, word))
            if pane is None:
                pane = memo[(window_id, word)] = parse_message_pane(window_id, word)
            out.append(pane)
        return tuple(out)

    def _pane_ids_of(self, window_id: str) -> list[str]:
        """The ids of the window's panes in the model, in the order its rows gave them."""
        return [pane.id for pane in self._by_window().get(window_id, ())]

    def _replace_panes(self, window_id: str, panes: Sequence[Pane]) -> None:
        """The window's panes are now ``panes``: the old ones go, the new ones are added at
        the end, in their order."""
        model = self.panes
        grouped = self._by_window()
        # A pane read as it was is kept as the object the model holds (``_pane_words``).
        panes = [was if (was := model.get(p.id)) is not None and was == p else p for p in panes]
        for pane in grouped.get(window_id, ()):
            if model.get(pane.id) is pane:  # not moved by another window's rows since
                del model[pane.id]
        for pane in panes:
            was = model.get(pane.id)
            if was is not None and was.window_id != window_id:
                # Moved here from a window whose own rows have not come yet: it leaves that
                # window's group now (those rows will no longer name it).
                rest = tuple(p for p in grouped.get(was.window_id, ()) if p.id != pane.id)
                if rest:
                    grouped[was.window_id] = rest
                else:
                    grouped.pop(was.window_id, None)
            model[pane.id] = pane
        if panes:
            grouped[window_id] = tuple(panes)
        else:
            grouped.pop(window_id, None)

    def on_waiter_round(self, lines: Iterable[str]) -> None:
        """What one round of the 3.3 hook waiter printed: the value of ``LAYOUTS_OPTION``,
        ``|<count> @W <zoomed> <layout> <pane> ...`` for each firing of the hook since the
        last round (``hook_command``), read and cleared in one go.

        Rows counted after the last re-read batch are newer than every reply applied, and
        update their window as a 3.4 message does (no query).  Older ones may be older than
        a reply already applied (the reply and the rows come by different clients), so they
        only mark their window, as do rows that arrive while a re-read is under way.  A value
        at the limit may have lost rows: every window is listed."""
        for line in lines:
            if not line.startswith("|"):
                continue  # not the option's value (a user's after-hook printed it)
            if len(line) >= LAYOUTS_LIMIT:
                self.mark(layouts=True)
            entries = [entry.partition(" ") for entry in line[1:].split("|")]
            # The panes each window's rows of this round name: a pane gone from one window
            # and named by another's rows was moved between them (on_hook_message).
            named: dict[str, set[str]] = {}
            for _, _, rest in entries:
                words = rest.split(" ")
                ids = named.setdefault(words[0], set())
                ids.update(word.partition(".")[0] for word in words[3:])
            for count, _, rest in entries:
                words = rest.split(" ")
                window_id = words[0]
                if not (count.isdigit() and window_id[:1] == "@" and window_id[1:].isdigit()):
                    self.mark(layouts=True)
                elif self.layout_seq is None or int(count) <= self.layout_seq or self.reading:
                    self.mark(windows=(window_id,))
                else:
                    elsewhere = frozenset().union(
                        *(ids for w, ids in named.items() if w != window_id)
                    )
                    self.on_hook_message(
                        ["window-layout-changed", *words], answers=False, elsewhere=elsewhere
                    )
                    self._answer_hold(window_id)
                # Rows of this window come: its changes may be held for them again.
                self._rowless.discard(window_id)

    # ------------------------------------------------------------------ re-reading

    def take(self) -> Dirty:
        """What is dirty now, leaving nothing dirty (marks made later wait for the next)."""
        taken, self.dirty = self.dirty, Dirty()
        self._message_answers = set()
        if taken.deferred and (taken.full or taken.structure or taken.layouts or taken.windows):
            # A read is due anyway: it reads the structure too, which says where the panes
            # went, instead of a round trip of its own.
            taken.structure = True
            taken.windows |= set(taken.deferred)
            taken.deferred = {}
        if taken.full or taken.structure or taken.layouts:
            self._held.clear()  # that read lists every window's layout
        return taken

    def reread(self, what: Dirty) -> Reread:
        """Yield the command batches that re-read ``what``, receiving their replies, and
        apply them.  The caller publishes ``state()`` when the generator ends."""
        self.reading = True
        try:
            if self.counts_layouts():
                yield from self._counted(self._reread(what))
            else:
                yield from self._reread(what)
        finally:
            self.reading = False

    def counts_layouts(self) -> bool:
        """Re-reads read the hook counter too: the 3.3 hook waiter's rows are used."""
        return self.hooks_wanted and not uses_message_hooks(self.version)

    def _counted(self, gen: Reread) -> Reread:
        """``gen``'s batches, each followed by a read of the hook counter: every hook
        counted up to that value ran before the batch's replies were made."""
        batch = next(gen, None)
        while batch is not None:
            *replies, counted = yield [*batch, self.spell(READ_LAYOUT_SEQ)]
            check(("display-message",), counted)
            value = counted.lines[0] if counted.lines else ""
            try:
                batch = gen.send(replies)
            except StopIteration:
                batch = None
            # Unset: no hook ran yet.  Not a number (a user's doing): every row is a mark.
            self.layout_seq = int(value) if value.isdigit() else 0 if not value else None

    def _reread(self, what: Dirty) -> Reread:
        spell = self.spell
        if what.full:
            rs, rw, rp = yield [spell(LIST_SESSIONS), spell(LIST_WINDOWS), spell(LIST_PANES)]
            check(("list-sessions", "list-windows", "list-panes"), rs, rw, rp)
            self.apply_structure(rs, rw)
            panes: dict[str, Pane] = {}
            for row in rp.lines:
                pane = parse_pane_row(row)
                panes[pane.id] = pane
            self.panes = panes
            self._grouped = None
            return
        if what.deferred:
            # Only rows wait (take): a round trip reads every notification tmux wrote before
            # it ran their hooks.  A %window-add among them (a pane broken out to a new
            # window) marks the structure: the windows are then read with it.  Else the
            # panes were killed, and the rows are applied.
            yield []
            for window_id, words in what.deferred.items():
                known = self.windows.get(window_id)
                if window_id in self.dirty.windows:
                    continue  # marked while the trip was made: its query says what is true
                if self.dirty.full or self.dirty.structure or known is None:
                    self.mark(structure=True, windows=(window_id,))
                    continue
                zoomed, layout = words[2], words[3]
                self._apply_rows(known, zoomed, layout, self._message_panes(window_id, words[4:]))
                self._answer_hold(window_id)
            return
        windows = set(what.windows)
        if what.structure:
            rs, rw = yield [spell(LIST_SESSIONS), spell(LIST_WINDOWS)]
            check(("list-sessions", "list-windows"), rs, rw)
            windows |= self.apply_structure(rs, rw)
        elif what.layouts:
            (rw,) = yield [spell(LIST_WINDOWS)]
            check(("list-windows",), rw)
            windows |= self.apply_structure(None, rw)
        if what.structure or what.layouts:
            windows = {w for w in windows if w in self.windows}
        if windows:
            order = sorted(windows, key=id_number)
            replies = yield [
                spell(("list-panes", "-t", w, "-F", PANE_WINDOW_FORMAT)) for w in order
            ]
            for wid, reply in zip(order, replies, strict=True):
                self.apply_window(wid, reply)

    def apply_structure(self, rs: Reply | None, rw: Reply) -> set[str]:
        """Take sessions (when read) and winlinks; return the windows to re-read."""
        if rs is not None:
            self.sessions = {s.id: s for s in map(parse_session_row, self._rows(rs.lines))}
        links: list[Winlink] = []
        windows: dict[str, Window] = {}
        for row in join_rows(self._rows(rw.lines), "W"):
            link, window = parse_window_row(row)
            links.append(link)
            windows[window.id] = window
        # The full layout names every pane and its geometry; zoom changes geometry without
        # changing it, so the whole window row is compared.
        stale = {wid for wid, window in windows.items() if self.windows.get(wid) != window}
        gone = set(self.windows) - set(windows)
        if gone:
            self.panes = {k: p for k, p in self.panes.items() if p.window_id not in gone}
            self._grouped = None
        self.winlinks = tuple(sort_winlinks(links))
        self.windows = windows
        return stale

    def apply_window(self, wid: str, reply: Reply) -> None:
        if not reply.ok:
            # Most likely the window went away between the notification and the query; but
            # an error is no proof of that (a hook or an alias of the user's can fail it), so
            # nothing is removed on its word: the structure, read next, tells.  A window the
            # structure keeps listing while its own listing keeps failing is a failing
            # command.
            misses = self._window_misses.get(wid, 0) + 1
            if misses >= WINDOW_MISSES:
                self._window_misses.pop(wid, None)
                check(("list-panes",), reply)
            self._window_misses[wid] = misses
            self.mark(structure=True)
            return
        self._window_misses.pop(wid, None)
        window, panes = parse_window_query(self._rows(reply.lines))
        self._replace_panes(wid, panes)
        if window is not None:
            self.windows[wid] = window
            # A reply that shows the layout a hold waits for answers it (the read may end
            # after the %layout-change it answers was read: rows that asked for it came first).
            self._answer_hold(wid)
        if not any(link.window_id == wid for link in self.winlinks):
            self.mark(structure=True)  # a window we have not seen linked yet

    def _rows(self, lines: tuple[str, ...]) -> Iterable[str]:
        # Rows that carry names.  tmux 3.4 puts a backslash before `$` in all command output,
        # which unvis would take for part of the name (names.undo_output_dollars).
        if output_escapes_dollars(self.version):
            return [undo_output_dollars(line) for line in lines]
        return lines


def run_reread(gen: Reread, answer: list[list[Reply]]) -> None:
    """Drive a ``reread`` with canned replies, one list per batch (for tests and tools)."""
    batch = next(gen, None)
    for replies in answer:
        if batch is None:
            raise AssertionError("more replies than batches")
        assert len(replies) == len(batch)
        try:
            batch = gen.send(replies)
        except StopIteration:
            batch = None
    if batch is not None:
        raise AssertionError(f"a batch was left unanswered: {batch}")


# ---------------------------------------------------------------------------------------------
# Barriers and failure episodes.


class Barriers:
    """The tickets of ``/v1/sync`` requests against one server.

    Requests are numbered; a re-read covers every ticket issued before it started.  Served
    tickets got their re-read published; failed ones are answered with why.  A ticket fails
    after ``BARRIER_TRIES`` failed attempts made while it waits (the shell also gives each
    request a deadline).
    """

    def __init__(self) -> None:
        self.requested = 0
        self.served = 0
        self.failed = 0
        self.failure = ""
        self.tries = 0  # failed attempts since the oldest pending ticket was issued

    def pending(self) -> bool:
        return self.requested > max(self.served, self.failed)

    def request(self) -> int:
        if not self.pending():
            self.tries = 0
        self.requested += 1
        return self.requested

    def serve(self, ticket: int) -> bool:
        """A re-read that started when ``ticket`` was the newest was published.  True when
        that answered someone."""
        self.tries = 0
        if ticket > self.served:
            self.served = ticket
            return True
        return False

    def serve_all(self) -> None:
        """Every ticket so far is answered by what was published (the server went down, or
        has no session)."""
        self.served = self.requested
        self.tries = 0

    def attempt_failed(self, why: str) -> bool:
        """A re-read failed.  True when that failed the tickets waiting (after enough tries)."""
        self.tries += 1
        if self.tries < BARRIER_TRIES or not self.pending():
            return False
        self.failed, self.failure, self.tries = self.requested, why, 0
        return True

    def answer(self, ticket: int) -> str | bool | None:
        """None: served; a string: failed, why; False: still waiting."""
        if self.served >= ticket:
            return None
        if self.failed >= ticket:
            return self.failure
        return False


class Episode:
    """A failure episode: ``fail`` and ``recover`` say what to log (once each way)."""

    def __init__(self) -> None:
        self.error: str | None = None

    def fail(self, why: str) -> str:
        """'start' for a new episode, 'changed' when its reason changed, 'same' otherwise."""
        before, self.error = self.error, why
        if before is None:
            return "start"
        return "same" if before == why else "changed"

    def recover(self) -> str | None:
        """The error that ended, if an episode was under way."""
        before, self.error = self.error, None
        return before


# ---------------------------------------------------------------------------------------------
# Hooks: which kind this tmux takes, and their text.

# Hooks go at this index of each hook's array, so a user's hooks (normally at [0], [1] ...)
# are never replaced; `set-hook -gu 'name[7741]'` removes exactly ours.
HOOK_INDEX = 7741
# Every other location change in a session we are not attached to is announced to all
# control clients anyway (window add/close/rename, active pane, current window, session
# create/close/rename: research §2.1), or to nobody at all (respawn, silent swap-window,
# renumbering: the digest's job).  What reaches only the attached session is %layout-change:
# splits, kills, resizes, layouts, pane exits, break/join -- all of which fire
# window-layout-changed.  A pane's death under remain-on-exit is announced to nobody, in any
# session: pane-died runs once tmux has both the pane's end and its exit status, so its rows
# carry the status (before 3.6 a SIGCHLD lost to libutempter delays it: pane_exits).
HOOKS = ("window-layout-changed", "pane-died")


def release(version: str) -> tuple[int, int] | None:
    """(major, minor) of a tmux version string (``3.3a``, ``next-3.8``); None if unreadable."""
    digits = "".join(ch if ch.isdigit() or ch == "." else " " for ch in version)
    parts = digits.split()
    try:
        major, minor = [*parts[0].split("."), "0"][:2]
        return int(major), int(minor or 0)
    except (ValueError, IndexError):
        return None


def uses_message_hooks(version: str) -> bool:
    """tmux 3.4+ delivers ``display-message -c <control client>`` as a %message line: a push
    with no extra client.  3.3 has no such line, so it uses a wait-for channel."""
    found = release(version)
    return found is not None and found >= (3, 4)


def loses_sigchld(version: str) -> bool:
    """Before 3.6 (tmux fa5f3ce), a tmux built with libutempter can lose the SIGCHLD of a
    pane's process: the pane shows dead without its exit status, and pane-died does not run,
    until another SIGCHLD comes.  An unreadable version is taken as one that may."""
    found = release(version)
    return found is None or found < (3, 6)


def death_told(pane: Pane | None) -> bool:
    """Nothing more is to come of this pane's end: it is gone, or shown dead with its exit
    status or signal."""
    return pane is None or (
        pane.dead and (pane.exit_status is not None or pane.exit_signal is not None)
    )


def hook_command(mirror: ServerMirror, hook: str, channel: str) -> str:
    """The text of our hook for this server, as tmux will parse it when the hook runs (so
    its words are respelled too)."""
    spell = mirror.spell
    if uses_message_hooks(mirror.version):
        # 3.4+: the message names the window and carries its panes' fields, expanded when
        # the hook runs, so no query follows (ServerMirror.on_hook_message).  It is sent
        # for windows of the attached session too: it comes in the same write as their
        # %layout-change (measured: +0.0 ms), while a query sent on the %layout-change
        # waits for tmux to finish the command that changed the layout (+13 ms at 1,000
        # panes on 3.4).  No if-shell around it: a command that if-shell inserts inherits
        # its client, and when that is our control client its %begin/%end 0 guard is
        # written to us with the %message inside it, as block content, unseen.  A hook's
        # own command has no client.
        payload = f"#{{window_id}} #{{window_zoomed_flag}} #{{window_layout}}{MESSAGE_PANE_FORMAT}"
        text = f"{MESSAGE_PREFIX}{hook} {payload}"
        return f"{spell.word('display-message')} -c '{mirror.client_name}' '{text}'"
    # 3.3: no %message.  The hook counts itself, appends its window's panes (as the 3.4
    # message carries them) to LAYOUTS_OPTION unless that is full, and wakes the waiter,
    # whose next round prints and clears the option: no query follows
    # (ServerMirror.on_waiter_round).  For every window, the attached session's too: the
    # rows come right after the %layout-change, where a query waits for tmux to finish the
    # command that changed the layout (+13 ms at 1,000 panes).  A hook's own commands have
    # no client, so nothing of theirs is written to our control client.
    set_option = spell.word("set-option")
    count = f"{set_option} -sF {LAYOUT_SEQ_OPTION} '#{{e|+:#{{{LAYOUT_SEQ_OPTION}}},1}}'"
    row = (
        f"|#{{{LAYOUT_SEQ_OPTION}}} #{{window_id}} #{{window_zoomed_flag}} "
        f"#{{window_layout}}{MESSAGE_PANE_FORMAT}"
    )
    room = f"#{{e|<:#{{n:{LAYOUTS_OPTION}}},{LAYOUTS_LIMIT}}}"
    append = f"{set_option} -saF {LAYOUTS_OPTION} '#{{?{room},{row},}}'"
    return f"{count} ; {append} ; {spell.word('wait-for')} -S {channel}"


def install_hooks(mirror: ServerMirror, channel: str) -> list[Argv]:
    return [
        mirror.spell(
            ("set-hook", "-g", f"{hook}[{HOOK_INDEX}]", hook_command(mirror, hook, channel))
        )
        for hook in HOOKS
    ]


def remove_hooks(mirror: ServerMirror) -> list[Argv]:
    removed = [mirror.spell(("set-hook", "-gu", f"{hook}[{HOOK_INDEX}]")) for hook in HOOKS]
    if uses_message_hooks(mirror.version):
        return removed
    # The 3.3 hook's options go with it (the counter too: a daemon started later counts
    # from its own first read).
    return [
        *removed,
        *(mirror.spell(("set-option", "-su", o)) for o in (LAYOUTS_OPTION, LAYOUT_SEQ_OPTION)),
    ]
