"""The server mirror, without tmux: notifications from captured transcripts, replies captured
from real tmux (tests/data/mirror, by tests/tools/capture_mirror.py), and the barrier and
episode decisions, table-style."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core import spelling
from tmuxlocd.core.errors import CommandFailed, RowError
from tmuxlocd.core.mirror import (
    BARRIER_TRIES,
    HOOK_INDEX,
    LAYOUTS_LIMIT,
    LIST_PANES,
    LIST_SESSIONS,
    LIST_WINDOWS,
    READ_LAYOUT_SEQ,
    Barriers,
    Dirty,
    Episode,
    Reread,
    ServerMirror,
    death_told,
    hook_command,
    install_hooks,
    loses_sigchld,
    remove_hooks,
    run_reread,
    uses_message_hooks,
)
from tmuxlocd.core.model import (
    DIGEST_NAME,
    PANE_WINDOW_FORMAT,
    Pane,
    Window,
    digest_token,
    group_panes,
    parse_message_pane,
    parse_pane_row,
)
from tmuxlocd.core.protocol import (
    NEED_DATA,
    ConfigError,
    ControlParser,
    Event,
    LayoutChange,
    Message,
    Reply,
    SessionChanged,
    SubscriptionChanged,
    Unknown,
    WindowAdd,
    WindowPaneChanged,
    WindowRenamed,
)

DATA = Path(__file__).resolve().parent.parent / "data"
CAPTURES = sorted((DATA / "mirror").glob("*.json"))


def transcript(name: str) -> list[Event]:
    parser = ControlParser()
    parser.receive_data((DATA / "transcripts" / f"{name}.bin").read_bytes())
    parser.receive_data(b"")
    events: list[Event] = []
    while (event := parser.next_event()) is not NEED_DATA:
        assert not isinstance(event, type)
        events.append(event)
    return events


def ok(lines: list[str]) -> Reply:
    return Reply(number=1, time=0, flags=1, ok=True, lines=tuple(lines))


def error(text: str) -> Reply:
    return Reply(number=1, time=0, flags=1, ok=False, lines=(text,))


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def full_read(mirror: ServerMirror, snap: dict[str, Any]) -> None:
    run_reread(
        mirror.reread(Dirty(full=True)),
        [[ok(snap["list_sessions"]), ok(snap["list_windows"]), ok(snap["list_panes"])]],
    )


def fresh(version: str) -> ServerMirror:
    mirror = ServerMirror("/tmp/tmux-0/test")
    mirror.version = version
    mirror.attached_to("$0")
    return mirror


# ------------------------------------------------------------------------------ notifications


def test_every_notification_of_a_transcript_marks_what_it_names() -> None:
    """notifications.bin: every operation of the capture, in the attached session and in
    another; the table says what each notification type makes dirty."""
    seen: dict[str, set[str]] = {}
    for event in transcript("notifications"):
        if isinstance(event, Reply):
            continue
        mirror = fresh("3.3a")
        effect = mirror.on_event(event)
        d = mirror.dirty
        what = (
            "full"
            if d.full
            else "structure"
            if d.structure
            else "windows"
            if d.windows
            else "layouts"
            if d.layouts
            else "nothing"
        )
        seen.setdefault(type(event).__name__, set()).add(what)
        if isinstance(event, SessionChanged):
            assert effect.attached and mirror.attached_session == event.session_id
    assert seen == {
        "SessionChanged": {"structure"},
        "WindowPaneChanged": {"windows"},
        "LayoutChange": {"windows"},
        "WindowRenamed": {"windows"},
        "SessionWindowChanged": {"structure"},
        "WindowAdd": {"structure"},
        "WindowClose": {"structure"},
        "PaneModeChanged": {"nothing"},
        "SessionsChanged": {"structure"},
        "SessionRenamed": {"structure"},
        "ClientSessionChanged": {"nothing"},
        "ClientDetached": {"nothing"},
        "Exit": {"nothing"},
    }


def test_a_burst_of_notifications_is_one_reread_of_what_they_name() -> None:
    mirror = fresh("3.3a")
    for wid in ("@3", "@1", "@3", "@2"):
        mirror.on_event(LayoutChange(window_id=wid, layout="x", visible_layout="x", flags=""))
    taken = mirror.take()
    assert taken == Dirty(windows={"@1", "@2", "@3"})
    assert not mirror.dirty
    gen = mirror.reread(taken)
    batch = next(gen)
    assert [argv[2] for argv in batch] == ["@1", "@2", "@3"]  # in id order, one batch


def test_hook_messages_stray_lines_and_configuration_errors() -> None:
    mirror = fresh("3.4")
    mirror.on_event(Message(text="tmuxlocd window-layout-changed @7"))
    assert mirror.take() == Dirty(windows={"@7"})
    mirror.on_event(Message(text="tmuxlocd window-layout-changed"))  # no window: all layouts
    assert mirror.take() == Dirty(layouts=True)
    mirror.on_event(Message(text="someone else's message @1"))
    assert not mirror.dirty
    assert mirror.on_event(ConfigError(text="bad line 3")).config_error == "bad line 3"
    hooks = transcript("hooks")
    (stray,) = [e for e in hooks if isinstance(e, Unknown)]
    assert fresh("3.3a").on_event(stray).stray == stray.line[:200]


def with_two_panes(mirror: ServerMirror) -> None:
    mirror.windows["@7"] = Window(id="@7", name="w", layout="old", zoomed=False)
    mirror.panes["%1"] = Pane(
        id="%1", window_id="@7", index=0, active=True, tty="/dev/pts/1", pid=10,
        left=0, top=0, width=80, height=24,
    )  # fmt: skip
    mirror.panes["%9"] = Pane(
        id="%9", window_id="@8", index=0, active=True, tty="/dev/pts/9", pid=90,
        left=0, top=0, width=80, height=24,
    )  # fmt: skip


def test_a_hook_message_with_the_panes_updates_the_window_without_a_query() -> None:
    mirror = fresh("3.4")
    with_two_panes(mirror)
    text = (
        "tmuxlocd window-layout-changed @7 1 b25d,80x24,0,0[80x12,0,0,1,80x11,0,13,2] "
        "%1.0.0./dev/pts/1.10.0.0.80.12.0 %2.1.1./dev/pts/2.20.0.13.80.11.0"
    )
    mirror.on_event(Message(text=text))
    assert mirror.take() == Dirty(publish=True)
    window = mirror.windows["@7"]
    assert (window.layout, window.zoomed, window.active_pane, window.name) == (
        "b25d,80x24,0,0[80x12,0,0,1,80x11,0,13,2]",
        True,
        "%2",
        "w",
    )
    assert sorted(mirror.panes) == ["%1", "%2", "%9"]
    assert mirror.panes["%2"] == Pane(
        id="%2", window_id="@7", index=1, active=True, tty="/dev/pts/2", pid=20,
        left=0, top=13, width=80, height=11,
    )  # fmt: skip
    assert mirror.panes["%1"].height == 12 and not mirror.panes["%1"].active
    # A re-read publishes nothing new on its own: nothing to send.
    assert next(mirror.reread(Dirty(publish=True)), None) is None


def test_rows_that_name_a_pane_as_it_was_keep_the_models_object() -> None:
    """A split changes two panes of a window whose rows name them all: the others stay the
    objects the model holds (what the location builder compares by identity)."""
    mirror = fresh("3.4")
    with_two_panes(mirror)
    first = (
        "tmuxlocd window-layout-changed @7 0 b25d,80x24,0,0[80x12,0,0,1,80x11,0,13,2] "
        "%1.0.0./dev/pts/1.10.0.0.80.12.0 %2.1.1./dev/pts/2.20.0.13.80.11.0"
    )
    mirror.on_event(Message(text=first))
    mirror.take()
    one, two = mirror.panes["%1"], mirror.panes["%2"]
    second = (
        "tmuxlocd window-layout-changed @7 0 L3 "
        "%1.0.0./dev/pts/1.10.0.0.80.12.0 %2.1.1./dev/pts/2.20.0.13.40.11.0 "
        "%3.2.0./dev/pts/3.30.41.13.39.11.0"
    )
    mirror.on_event(Message(text=second))
    assert mirror.take() == Dirty(publish=True)
    assert mirror.panes["%1"] is one
    assert mirror.panes["%2"] is not two and mirror.panes["%2"].width == 40
    assert mirror.panes["%3"].left == 41
    grouped = mirror.state().by_window
    assert grouped is not None and grouped["@7"][0] is one
    # The same word in another window is another pane (its window id is part of it).
    mirror.windows["@8"] = Window(id="@8", name="v", layout="old", zoomed=False)
    moved = "tmuxlocd window-layout-changed @8 0 L8 %1.0.0./dev/pts/1.10.0.0.80.12.0"
    mirror.on_event(Message(text=moved))
    mirror.take()
    assert mirror.panes["%1"].window_id == "@8"


@pytest.mark.parametrize(
    "text",
    [
        "tmuxlocd window-layout-changed @6 0 L %3.0.1./dev/pts/3.30.0.0.80.24.0",  # unknown
        "tmuxlocd window-layout-changed @7 0 L %3.0.1./dev/pts/3",  # short pane word
        "tmuxlocd window-layout-changed @7 0 L %3.x.1./dev/pts/3.30.0.0.80.24.0",
        "tmuxlocd window-layout-changed @7 2 L %3.0.1./dev/pts/3.30.0.0.80.24.0",
        "tmuxlocd window-layout-changed @7 0 L",  # no panes
    ],
)
def test_a_hook_message_that_cannot_be_used_is_a_mark(text: str) -> None:
    mirror = fresh("3.4")
    with_two_panes(mirror)
    before = (dict(mirror.windows), dict(mirror.panes))
    mirror.on_event(Message(text=text))
    assert mirror.take() == Dirty(windows={text.split()[2]})
    assert (mirror.windows, mirror.panes) == before


def test_a_hook_message_during_a_reread_is_only_a_mark() -> None:
    """The re-read's replies may be older than the message and are applied after it."""
    mirror = fresh("3.4")
    with_two_panes(mirror)
    gen = mirror.reread(Dirty(windows={"@7"}))
    next(gen)
    text = "tmuxlocd window-layout-changed @7 0 L %3.0.1./dev/pts/3.30.0.0.80.24.0"
    mirror.on_event(Message(text=text))
    assert mirror.dirty == Dirty(windows={"@7"}) and "%3" not in mirror.panes
    gen.close()
    assert not mirror.reading


SPLIT_MESSAGE = (
    "tmuxlocd window-layout-changed @7 0 b25d,80x24,0,0[80x12,0,0,1,80x11,0,13,2] "
    "%1.0.1./dev/pts/1.10.0.0.80.12.0 %2.1.0./dev/pts/2.20.0.13.80.11.0"
)


def test_the_hook_message_answers_the_layout_change_before_it() -> None:
    """tmux writes %layout-change, then runs the hook: in the observer's own session the
    message that follows the notification makes its query needless."""
    mirror = fresh("3.4")
    with_two_panes(mirror)
    mirror.on_event(LayoutChange(window_id="@7", layout="L", visible_layout="L", flags=""))
    mirror.on_event(WindowPaneChanged(window_id="@7", pane_id="%1"))
    assert mirror.dirty == Dirty(windows={"@7"})
    mirror.on_event(Message(text=SPLIT_MESSAGE))
    assert mirror.take() == Dirty(publish=True)
    assert "%2" in mirror.panes


def test_the_hook_message_does_not_answer_a_rename_or_a_later_change() -> None:
    mirror = fresh("3.4")
    with_two_panes(mirror)
    # The message carries no name: a window renamed before it is still re-read.
    mirror.on_event(WindowRenamed(window_id="@7", name="x", unlinked=False))
    mirror.on_event(LayoutChange(window_id="@7", layout="L", visible_layout="L", flags=""))
    mirror.on_event(Message(text=SPLIT_MESSAGE))
    assert mirror.take() == Dirty(windows={"@7"}, publish=True)
    # Another window's change stays marked, and so does a change after the message.
    mirror.on_event(LayoutChange(window_id="@8", layout="L", visible_layout="L", flags=""))
    mirror.on_event(Message(text=SPLIT_MESSAGE))
    mirror.on_event(LayoutChange(window_id="@7", layout="L", visible_layout="L", flags=""))
    assert mirror.take() == Dirty(windows={"@7", "@8"}, publish=True)
    # What was answered is forgotten with the marks taken.
    mirror.on_event(WindowRenamed(window_id="@7", name="y", unlinked=False))
    mirror.take()
    mirror.on_event(LayoutChange(window_id="@7", layout="L", visible_layout="L", flags=""))
    mirror.on_event(Message(text=SPLIT_MESSAGE))
    assert mirror.take() == Dirty(publish=True)


# ------------------------------------------------------------------------------ 3.3 waiter rows

SPLIT_ROW = (
    "@7 0 b25d,80x24,0,0[80x12,0,0,1,80x11,0,13,2] "
    "%1.0.1./dev/pts/1.10.0.0.80.12.0 %2.1.0./dev/pts/2.20.0.13.80.11.0"
)
KILL_ROW = "@7 0 L1 %1.0.1./dev/pts/1.10.0.0.80.24.0"


def counted(version: str = "3.3a", seq: str = "4") -> ServerMirror:
    """A 3.3 mirror with hooks whose last re-read saw the hook counter at ``seq``."""
    mirror = fresh(version)
    mirror.hooks_wanted = True
    with_two_panes(mirror)
    run_reread(mirror.reread(Dirty(layouts=True)), [[ok([]), ok([seq])]])
    mirror.windows["@7"] = Window(id="@7", name="w", layout="old", zoomed=False)
    mirror.take()
    return mirror


def test_every_batch_of_a_3_3_reread_reads_the_hook_counter_last() -> None:
    mirror = fresh("3.3a")
    mirror.hooks_wanted = True
    mirror.mark(full=True)
    gen = mirror.reread(mirror.take())
    assert next(gen) == [LIST_SESSIONS, LIST_WINDOWS, LIST_PANES, READ_LAYOUT_SEQ]
    with pytest.raises(StopIteration):
        gen.send([ok([]), ok([]), ok([]), ok(["12"])])
    assert mirror.layout_seq == 12
    # Unset (no hook ran yet) is 0; a value that is not a number makes every row a mark.
    for value, seq in (([], 0), ([""], 0), (["x1"], None)):
        run_reread(mirror.reread(Dirty(layouts=True)), [[ok([]), ok(value)]])
        assert mirror.layout_seq == seq
    # Not on 3.4+ (the message comes on the control connection), nor without hooks.
    for version, hooks in (("3.4", True), ("3.3a", False)):
        mirror.version, mirror.hooks_wanted = version, hooks
        assert next(mirror.reread(Dirty(full=True))) == [LIST_SESSIONS, LIST_WINDOWS, LIST_PANES]


def kill_in_its_round_trip() -> tuple[ServerMirror, Reread]:
    """A 3.3 mirror whose kill's rows wait, with the round trip sent (its reply not read)."""
    mirror = counted(seq="4")
    mirror.on_waiter_round([f"|5 {SPLIT_ROW}"])
    mirror.take()
    mirror.on_waiter_round([f"|6 {KILL_ROW}"])
    gen = mirror.reread(mirror.take())
    assert next(gen) == [READ_LAYOUT_SEQ]
    return mirror, gen


def test_waiter_rows_without_a_pane_of_their_window_wait_for_a_round_trip() -> None:
    # kill-pane or break-pane: the old window's rows come without the pane, perhaps before
    # the %window-add of its new window is read.  Applied at once, a break-pane would publish
    # the pane's removal, then its addition.  tmux wrote that notification before it ran the
    # hook, so the rows wait for one round trip on the control connection (the counter read
    # alone: tmux lists nothing), and are applied when it brought no structure change.
    mirror = counted(seq="4")
    mirror.on_waiter_round([f"|5 {SPLIT_ROW}"])
    mirror.take()
    panes = dict(mirror.panes)
    mirror.on_waiter_round([f"|6 {KILL_ROW}"])
    assert mirror.panes == panes
    what = mirror.take()
    assert what.deferred and not (what.structure or what.windows)
    gen = mirror.reread(what)
    assert next(gen) == [READ_LAYOUT_SEQ]
    with pytest.raises(StopIteration):
        gen.send([ok(["6"])])
    assert sorted(mirror.panes) == ["%1", "%9"] and mirror.windows["@7"].layout == "L1"
    # break-pane: the %window-add is read before the round trip's reply: the structure says.
    mirror, gen = kill_in_its_round_trip()
    mirror.on_event(WindowAdd(window_id="@12", unlinked=True))
    with pytest.raises(StopIteration):
        gen.send([ok(["6"])])
    assert mirror.panes == panes
    assert mirror.take() == Dirty(structure=True, windows={"@7"})
    # Marked while the trip was made: the rows are left to the window's query.
    mirror, gen = kill_in_its_round_trip()
    mirror.on_waiter_round([f"|7 {SPLIT_ROW}"])  # during a read: a mark
    with pytest.raises(StopIteration):
        gen.send([ok(["7"])])
    assert mirror.panes == panes and mirror.take() == Dirty(windows={"@7"})
    # With another read due, the structure is read with it instead of a round trip.
    mirror.on_waiter_round([f"|8 {SPLIT_ROW}"])
    mirror.take()
    mirror.on_waiter_round([f"|9 {KILL_ROW}"])
    mirror.mark(windows=("@8",))
    assert mirror.take() == Dirty(structure=True, windows={"@7", "@8"})
    # Newer rows of the window replace rows that wait.
    mirror.on_waiter_round([f"|10 {KILL_ROW}"])
    mirror.on_waiter_round([f"|11 {SPLIT_ROW}"])
    assert mirror.take() == Dirty(publish=True)
    # The same on 3.4, where the message comes after the notifications on one connection:
    # applied (a %window-add before it has marked the structure already).
    mirror = fresh("3.4")
    with_two_panes(mirror)
    mirror.on_hook_message(["window-layout-changed", *SPLIT_ROW.split(" ")])
    mirror.on_hook_message(["window-layout-changed", *KILL_ROW.split(" ")])
    assert sorted(mirror.panes) == ["%1", "%9"]


def test_a_pane_moved_between_windows_of_one_round_is_applied_at_once() -> None:
    # join-pane / move-pane: one command's hooks all run before the waiter prints, so the
    # window the pane went to names it in the same round.
    mirror = counted(seq="4")
    mirror.windows["@8"] = Window(id="@8", name="v", layout="old", zoomed=False)
    mirror.on_waiter_round([f"|5 {SPLIT_ROW}"])
    mirror.take()
    joined = "@8 0 L8 %9.0.1./dev/pts/9.90.0.0.40.24.0 %2.1.0./dev/pts/2.20.41.0.39.24.0"
    mirror.on_waiter_round([f"|6 {KILL_ROW}|7 {joined}"])
    assert mirror.take() == Dirty(publish=True)
    assert mirror.panes["%2"].window_id == "@8" and mirror.panes["%1"].height == 24


def test_waiter_rows_counted_after_the_last_read_update_the_window_without_a_query() -> None:
    mirror = counted(seq="4")
    mirror.on_waiter_round([f"|5 {KILL_ROW}|6 {SPLIT_ROW}"])
    assert mirror.take() == Dirty(publish=True)
    assert mirror.windows["@7"].layout.startswith("b25d,")
    assert sorted(mirror.panes) == ["%1", "%2", "%9"]
    assert mirror.panes["%2"].pid == 20 and mirror.panes["%1"].height == 12
    # No round output (nothing appended since the last round): nothing to do.
    mirror.on_waiter_round([""])
    assert not mirror.dirty


def test_waiter_rows_not_newer_than_the_last_read_only_mark_their_window() -> None:
    """The rows come by the waiter's client, the replies by the control connection: rows
    counted before the last batch's counter read may be older than its replies."""
    mirror = counted(seq="6")
    before = dict(mirror.panes)
    mirror.on_waiter_round([f"|5 {KILL_ROW}|6 {SPLIT_ROW}"])
    assert mirror.take() == Dirty(windows={"@7"})
    assert mirror.panes == before
    # Nor while a re-read is under way, nor before the counter was read on this attachment.
    gen = mirror.reread(Dirty(windows={"@8"}))
    next(gen)
    mirror.on_waiter_round([f"|9 {SPLIT_ROW}"])
    assert mirror.dirty == Dirty(windows={"@7"}) and "%2" not in mirror.panes
    gen.close()
    mirror.take()
    mirror.attached_to("$0")
    mirror.on_waiter_round([f"|9 {SPLIT_ROW}"])
    assert mirror.take() == Dirty(windows={"@7"})


def test_waiter_rows_do_not_answer_a_layout_change_of_the_control_connection() -> None:
    """On 3.4 the message follows the notifications it answers on the same connection; the
    waiter's rows may be older than a %layout-change already read."""
    mirror = counted()
    mirror.on_event(LayoutChange(window_id="@7", layout="L", visible_layout="L", flags=""))
    mirror.on_waiter_round([f"|5 {SPLIT_ROW}"])
    assert mirror.take() == Dirty(windows={"@7"}, publish=True)


@pytest.mark.parametrize(
    ("line", "dirty"),
    [
        ("|x @7 0 L %3.0.1./dev/pts/3.30.0.0.80.24.0", Dirty(layouts=True)),  # no count
        ("|5 7 0 L %3.0.1./dev/pts/3.30.0.0.80.24.0", Dirty(layouts=True)),  # no window
        ("|5 @7 0 L %3.0.1./dev/pts/3", Dirty(windows={"@7"})),  # short pane word
        ("|5 @6 0 L %3.0.1./dev/pts/3.30.0.0.80.24.0", Dirty(windows={"@6"})),  # unknown
        ("someone's after-hook output", Dirty()),
    ],
)
def test_waiter_rows_that_cannot_be_used_are_marks(line: str, dirty: Dirty) -> None:
    mirror = counted()
    before = (dict(mirror.windows), dict(mirror.panes))
    mirror.on_waiter_round([line])
    assert mirror.take() == dirty
    assert (mirror.windows, mirror.panes) == before


def test_a_full_rows_option_may_have_lost_rows_every_window_is_listed() -> None:
    mirror = counted()
    row = f"|5 {SPLIT_ROW}"
    mirror.on_waiter_round([row * (LAYOUTS_LIMIT // len(row) + 1)])
    assert mirror.take() == Dirty(layouts=True, publish=True)


SPLIT_LAYOUT = "b25d,80x24,0,0[80x12,0,0,1,80x11,0,13,2]"


def holding_mirror() -> ServerMirror:
    mirror = counted()
    mirror.hooks_installed = True
    return mirror


def layout_change(layout: str = SPLIT_LAYOUT) -> LayoutChange:
    return LayoutChange(window_id="@7", layout=layout, visible_layout=layout, flags="*")


def test_a_3_3_layout_change_waits_for_the_waiters_rows_instead_of_a_query() -> None:
    mirror = holding_mirror()
    mirror.on_event(layout_change())
    assert not mirror.dirty and mirror.holding() is not None
    mirror.on_waiter_round([f"|5 {SPLIT_ROW}"])
    assert mirror.holding() is None
    assert mirror.take() == Dirty(publish=True)
    assert mirror.windows["@7"].layout == SPLIT_LAYOUT


def test_a_hold_names_the_layout_whose_rows_are_due_and_nothing_else_does() -> None:
    # The shell computes what the layout alone gives while the rows travel (the window's
    # neighbours), off their path.
    mirror = holding_mirror()
    assert mirror.on_event(layout_change()).rows_due == SPLIT_LAYOUT
    # Rows read before their notification (half the time at 1,000 panes): no hold, nothing due.
    mirror = holding_mirror()
    mirror.on_waiter_round([f"|5 {SPLIT_ROW}"])
    assert mirror.on_event(layout_change()).rows_due is None and mirror.holding() is None
    # tmux 3.4+ (the rows ride the %message, read with the notification) and no hooks.
    for version, hooks in (("3.4", True), ("3.3a", False)):
        mirror = holding_mirror()
        mirror.version, mirror.hooks_wanted = version, hooks
        assert mirror.on_event(layout_change()).rows_due is None


def test_rows_answer_a_hold_only_with_its_layout_and_active_pane() -> None:
    mirror = holding_mirror()
    mirror.on_event(layout_change())
    mirror.on_event(WindowPaneChanged(window_id="@7", pane_id="%2"))
    assert not mirror.dirty
    # Rows of an earlier layout: applied, the hold stays.
    mirror.on_waiter_round([f"|5 {KILL_ROW}"])
    assert mirror.holding() is not None
    # The split's rows have %1 active, the notification said %2: still held.
    mirror.on_waiter_round([f"|6 {SPLIT_ROW}"])
    newest = mirror.holding()
    assert newest is not None and mirror.take() == Dirty(publish=True)
    # The rows did not come in time: the window is queried.
    assert mirror.release_held(newest)
    assert mirror.take() == Dirty(windows={"@7"}) and mirror.holding() is None


def test_a_window_whose_rows_did_not_come_is_not_held_again_until_they_do() -> None:
    # Where the hook does not run (a session with its own window-layout-changed array),
    # each change would otherwise wait the whole hold before its query.
    mirror = holding_mirror()
    mirror.on_event(layout_change())
    newest = mirror.holding()
    assert newest is not None and mirror.release_held(newest)
    assert mirror.take() == Dirty(windows={"@7"})
    mirror.on_event(layout_change())
    assert mirror.holding() is None and mirror.take() == Dirty(windows={"@7"})
    # Its rows come again (the hook runs there now): held again.
    mirror.on_waiter_round([f"|5 {SPLIT_ROW}"])
    mirror.take()
    mirror.on_event(layout_change("L1"))
    assert mirror.holding() is not None and not mirror.dirty
    # A new attachment starts from nothing learnt.
    mirror.release_held(mirror.holding() or 0)
    mirror.take()
    mirror.attached_to("$0")
    mirror.on_event(layout_change("L2"))
    assert mirror.holding() is not None


def test_what_is_not_held_for_the_rows() -> None:
    # An active pane change alone fires no layout hook: queried at once.
    mirror = holding_mirror()
    mirror.on_event(WindowPaneChanged(window_id="@7", pane_id="%1"))
    assert mirror.take() == Dirty(windows={"@7"}) and mirror.holding() is None
    # A window to be re-read anyway (renamed: the rows carry no name) is not held.
    mirror.on_event(WindowRenamed(window_id="@7", name="x", unlinked=False))
    mirror.on_event(layout_change())
    assert mirror.take() == Dirty(windows={"@7"}) and mirror.holding() is None
    # Nor on 3.4 (the message follows on the same connection), nor before hooks are in.
    for version, installed in (("3.4", True), ("3.3a", False)):
        other = holding_mirror()
        other.version, other.hooks_installed = version, installed
        other.on_event(layout_change())
        assert other.take() == Dirty(windows={"@7"}) and other.holding() is None


def test_a_hold_ends_with_rows_older_than_a_read_and_with_a_wider_read() -> None:
    mirror = holding_mirror()
    mirror.on_event(layout_change())
    mirror.on_waiter_round([f"|3 {SPLIT_ROW}"])  # counted before the last read: a mark
    assert mirror.take() == Dirty(windows={"@7"}) and mirror.holding() is None
    mirror.on_event(layout_change())
    mirror.mark(structure=True)
    mirror.take()  # the structure read lists every window's layout
    assert mirror.holding() is None
    newest = 0
    mirror.on_event(layout_change())
    assert not mirror.release_held(newest)  # a release only takes the holds made before it


def test_a_layout_change_whose_rows_came_first_is_not_held() -> None:
    """The rows travel by the waiter's client and are often read before the notification:
    a hold then would wait its whole time, query, and mark the window rowless."""
    mirror = holding_mirror()
    mirror.on_waiter_round([f"|5 {SPLIT_ROW}"])
    assert mirror.take() == Dirty(publish=True)
    mirror.on_event(layout_change())
    mirror.on_event(WindowPaneChanged(window_id="@7", pane_id="%1"))  # active in the rows
    assert mirror.holding() is None and not mirror.dirty
    # What the rows do not show yet is held, or queried, as before.
    mirror.on_event(WindowPaneChanged(window_id="@7", pane_id="%2"))
    assert mirror.take() == Dirty(windows={"@7"})
    mirror.on_event(layout_change("L2"))
    assert mirror.holding() is not None and not mirror.dirty


def test_a_hold_is_answered_by_a_reply_that_shows_its_layout() -> None:
    """A kill's rows ask for the structure; its read may end after the kill's
    %layout-change was read, and shows that layout: nothing is left to wait for."""
    data = load(DATA / "mirror" / "3.3a.json")
    after = data["after_split_in_other"]["window_panes"]["@2"]
    scratch = fresh("3.3a")
    full_read(scratch, data["before"])
    run_reread(scratch.reread(Dirty(windows={"@2"})), [[ok(after)]])
    layout = scratch.windows["@2"].layout

    mirror = fresh("3.3a")
    full_read(mirror, data["before"])
    mirror.hooks_wanted = mirror.hooks_installed = True
    gen = mirror.reread(Dirty(windows={"@2"}))
    next(gen)
    mirror.on_event(LayoutChange(window_id="@2", layout=layout, visible_layout=layout, flags=""))
    assert mirror.holding() is not None
    with pytest.raises(StopIteration):
        gen.send([ok(after), ok(["7"])])
    assert mirror.holding() is None and mirror.windows["@2"].layout == layout
    # A reply with another layout leaves the hold waiting.
    mirror.on_event(LayoutChange(window_id="@2", layout="L9", visible_layout="L9", flags=""))
    run_reread(mirror.reread(Dirty(windows={"@2"})), [[ok(after), ok(["8"])]])
    assert mirror.holding() is not None


def test_the_digest_marks_only_what_differs() -> None:
    snap = load(DATA / "mirror" / "3.3a.json")["before"]
    mirror = fresh("3.3a")
    full_read(mirror, snap)
    state = mirror.state()
    # the digest as tmux writes it (model.DIGEST_FORMAT), built from the model itself
    parts = []
    for sid in sorted(state.sessions):
        parts.append(f"S{sid}")
        for link in sorted(
            (w for w in state.winlinks if w.session_id == sid), key=lambda w: w.index
        ):
            window = state.windows[link.window_id]
            parts.append(f"W{link.window_id}.{link.index}.{int(window.zoomed)}.{window.layout}")
            pids = sorted(
                (p.index, p.pid) for p in state.panes.values() if p.window_id == link.window_id
            )
            parts.extend(str(pid) for _, pid in pids)
    value = " ".join(parts)

    def digest(text: str) -> SubscriptionChanged:
        return SubscriptionChanged(
            name=DIGEST_NAME,
            session_id="$0",
            window_id="-",
            window_index="-",
            pane_id="-",
            value=text,
        )

    assert mirror.on_event(digest(value)).caught is None
    assert not mirror.dirty, "an equal digest marks nothing"
    respawned = value.replace(str(state.panes["%3"].pid), "99999")
    # Nothing had announced it: a catch of the safety net, and what it found.
    assert mirror.on_event(digest(respawned)).caught == "@2"
    assert mirror.take() == Dirty(windows={"@2"})  # a respawned pane: only its window
    # Announced already (a notification marked it, or a re-read is under way): no catch.
    mirror.mark(structure=True)
    assert mirror.on_event(digest(respawned)).caught is None
    mirror.take()
    mirror.reading = True
    assert mirror.on_event(digest(respawned)).caught is None
    mirror.reading = False
    mirror.take()
    effect = mirror.on_event(digest("garbage"))
    assert mirror.dirty
    assert effect.caught is not None and effect.caught.startswith("window links, @")

    # A death nobody told (no pane-died hook ran: --no-hooks, a lost wait-for signal), and
    # a status tmux reports late (a SIGCHLD lost before 3.6): each is a catch of its window.
    mirror.take()
    pid3 = str(state.panes["%3"].pid)
    for shown, told in ((f"{pid3}", None), ("ds", "@2"), ("d3s", "@2"), ("ds15", "@2")):
        assert mirror.on_event(digest(value.replace(pid3, shown))).caught == told, shown
        mirror.take()
    dead = msgspec.structs.replace(state.panes["%3"], dead=True, exit_status=3)
    mirror.panes["%3"] = dead
    assert mirror.on_event(digest(value.replace(pid3, "d3s"))).caught is None
    assert digest_token(dead) == "d3s" and digest_token(state.panes["%3"]) == pid3


def test_a_pane_row_says_a_death_its_exit_status_and_signal() -> None:
    row = "P\t@1\t%1\t0\t1\t/dev/pts/1\t42\t0\t0\t80\t24\t"
    live = parse_pane_row(row + "0")
    assert (live.dead, live.exit_status, live.exit_signal) == (False, None, None)
    for field, want in (
        ("1:3:", (True, 3, None)),
        ("1::15", (True, None, 15)),
        ("1::", (True, None, None)),  # dead, not reaped yet (or a 3.2 signal death)
        ("1", (True, None, None)),  # a row captured before the status was read
    ):
        pane = parse_pane_row(row + field)
        assert (pane.dead, pane.exit_status, pane.exit_signal) == want, field
    with pytest.raises(RowError):
        parse_pane_row(row + "1:x:")
    # The 3.4+ hook's words carry the same field.
    word = "%1.0.1./dev/pts/1.42.0.0.80.24.1:0:"
    assert parse_message_pane("@1", word).exit_status == 0


def test_only_a_release_that_can_lose_a_sigchld_is_chased() -> None:
    assert [loses_sigchld(v) for v in ("3.2a", "3.3a", "3.5a", "3.6b", "next-3.8", "?")] == [
        True,
        True,
        True,
        False,
        False,
        True,
    ]
    live = parse_pane_row("P\t@1\t%1\t0\t1\t/dev/pts/1\t42\t0\t0\t80\t24\t0")
    assert death_told(None) and not death_told(live)
    assert not death_told(msgspec.structs.replace(live, dead=True))
    assert death_told(msgspec.structs.replace(live, dead=True, exit_signal=9))


# ------------------------------------------------------------------------------ re-reads


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_a_full_read_of_real_replies(capture: Path) -> None:
    data = load(capture)
    snap = data["before"]
    mirror = fresh(data["version"])
    gen = mirror.reread(Dirty(full=True))
    assert next(gen) == [LIST_SESSIONS, LIST_WINDOWS, LIST_PANES]
    full_read(mirror, snap)
    state = mirror.state()
    assert set(state.sessions) == {"$0", "$1"}
    assert {s.name for s in state.sessions.values()} == {"work", "other"}
    assert set(state.windows) == {"@0", "@1", "@2"}
    assert len(state.winlinks) == 4  # @0 is linked into both sessions
    assert set(state.panes) == {"%0", "%1", "%2", "%3"}
    assert state.windows["@1"].name == "logs"


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_a_layout_change_rereads_that_window_only(capture: Path) -> None:
    data = load(capture)
    mirror = fresh(data["version"])
    full_read(mirror, data["before"])
    before = dict(mirror.panes)
    after = data["after_split_in_other"]
    mirror.on_event(LayoutChange(window_id="@2", layout="x", visible_layout="x", flags=""))
    gen = mirror.reread(mirror.take())
    batch = next(gen)
    assert batch == [("list-panes", "-t", "@2", "-F", PANE_WINDOW_FORMAT)]
    with pytest.raises(StopIteration):
        gen.send([ok(after["window_panes"]["@2"])])
    assert set(mirror.panes) == {"%0", "%1", "%2", "%3", "%4"}
    assert mirror.panes["%4"].window_id == "@2"
    assert not mirror.dirty  # the window is linked: nothing more to read
    # The panes of other windows are untouched, and a pane the reply shows as it was stays
    # the object the model held (the location builder passes over it by identity).
    assert all(mirror.panes[p] is before[p] for p in before if before[p].window_id != "@2")
    again = {p: mirror.panes[p] for p in mirror.panes}
    mirror.apply_window("@2", ok(after["window_panes"]["@2"]))
    assert all(mirror.panes[p] is again[p] for p in again)


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda p: p.stem)
def test_a_structure_reread_names_the_windows_that_changed(capture: Path) -> None:
    data = load(capture)
    mirror = fresh(data["version"])
    full_read(mirror, data["before"])
    after = data["after_split_in_other"]
    mirror.mark(structure=True)
    gen = mirror.reread(mirror.take())
    assert next(gen) == [LIST_SESSIONS, LIST_WINDOWS]
    # only @2's layout changed: only @2 is listed
    batch = gen.send([ok(after["list_sessions"]), ok(after["list_windows"])])
    assert [argv[2] for argv in batch] == ["@2"]
    with pytest.raises(StopIteration):
        gen.send([ok(after["window_panes"]["@2"])])
    assert "%4" in mirror.panes


def test_an_error_in_the_middle_of_a_batch_names_the_command_and_changes_nothing() -> None:
    data = load(DATA / "mirror" / "3.3a.json")
    mirror = fresh("3.3a")
    full_read(mirror, data["before"])
    before = mirror.state()
    gen = mirror.reread(Dirty(full=True))
    next(gen)
    snap = data["after_split_in_other"]
    with pytest.raises(CommandFailed) as failed:
        gen.send(
            [
                ok(snap["list_sessions"]),
                ok(snap["list_windows"]),
                error("unknown command: hijacked"),
            ]
        )
    assert failed.value.command == "list-panes"
    assert failed.value.detail == "unknown command: hijacked"
    assert mirror.state() == before


def test_a_connection_lost_mid_batch_leaves_the_model_as_it_was() -> None:
    data = load(DATA / "mirror" / "3.3a.json")
    mirror = fresh("3.3a")
    full_read(mirror, data["before"])
    before = mirror.state()
    gen = mirror.reread(Dirty(structure=True))
    next(gen)
    gen.close()  # %exit before the replies: the shell abandons the re-read
    assert mirror.state() == before


def test_a_row_that_does_not_parse_raises() -> None:
    mirror = fresh("3.3a")
    gen = mirror.reread(Dirty(full=True))
    next(gen)
    with pytest.raises(RowError):
        gen.send([ok(["S\tnot a row"]), ok([]), ok([])])


def test_a_failed_window_listing_asks_the_structure_and_one_that_keeps_failing_is_an_error() -> (
    None
):
    data = load(DATA / "mirror" / "3.3a.json")
    mirror = fresh("3.3a")
    full_read(mirror, data["before"])
    mirror.apply_window("@1", error("can't find window: @1"))
    # an error proves nothing: the window stays until the structure says it is gone
    assert "@1" in mirror.windows and "%2" in mirror.panes
    assert mirror.take() == Dirty(structure=True)
    gone = [row for row in data["before"]["list_windows"] if "\t@1\t" not in row]
    mirror.apply_structure(ok(data["before"]["list_sessions"]), ok(gone))
    assert "@1" not in mirror.windows and "%2" not in mirror.panes
    with pytest.raises(CommandFailed):
        mirror.apply_window("@1", error("can't find window: @1"))


def test_server_facts() -> None:
    mirror = fresh("")
    mirror.server_facts(ok(["4242\t3.5a\tclient-4243"]))
    assert (mirror.pid, mirror.version, mirror.client_name) == (4242, "3.5a", "client-4243")
    for bad in (ok(["hijacked"]), ok([]), ok(["x\t3.5a\tc"]), error("no current client")):
        with pytest.raises(CommandFailed):
            mirror.server_facts(bad)


def test_commands_are_respelled() -> None:
    mirror = fresh("3.3a")
    mirror.spell = spelling.choose(["list-panes", "list-windows", "lsw"])
    mirror.mark(full=True)
    batch = next(mirror.reread(mirror.take()))
    assert [argv[0] for argv in batch] == ["list-sessions", "list-window", "lsp"]


# ------------------------------------------------------------------------------ hooks


def test_hook_text_per_version() -> None:
    mirror = fresh("3.3a")
    assert hook_command(mirror, "window-layout-changed", "chan") == (
        "set-option -sF @tmuxlocd_layout_seq '#{e|+:#{@tmuxlocd_layout_seq},1}' ; "
        "set-option -saF @tmuxlocd_layouts '#{?#{e|<:#{n:@tmuxlocd_layouts},262144},"
        "|#{@tmuxlocd_layout_seq} #{window_id} #{window_zoomed_flag} #{window_layout}"
        "#{P: #{pane_id}.#{pane_index}.#{pane_active}.#{pane_tty}.#{pane_pid}.#{pane_left}."
        "#{pane_top}.#{pane_width}.#{pane_height}."
        "#{?pane_dead,1:#{pane_dead_status}:#{pane_dead_signal},0}},}' ; "
        "wait-for -S chan"
    )
    (*_, options) = remove_hooks(mirror)
    assert options == ("set-option", "-su", "@tmuxlocd_layout_seq")
    mirror.version, mirror.client_name = "3.4", "client-9"
    assert hook_command(mirror, "window-layout-changed", "chan") == (
        "display-message -c 'client-9' "
        "'tmuxlocd window-layout-changed #{window_id} "
        "#{window_zoomed_flag} #{window_layout}#{P: #{pane_id}.#{pane_index}.#{pane_active}."
        "#{pane_tty}.#{pane_pid}.#{pane_left}.#{pane_top}.#{pane_width}.#{pane_height}."
        "#{?pane_dead,1:#{pane_dead_status}:#{pane_dead_signal},0}}'"
    )
    mirror.spell = spelling.choose(["display-message"])
    assert hook_command(mirror, "window-layout-changed", "c").startswith("display -c ")
    layout, died = install_hooks(mirror, "c")
    assert layout[:3] == ("set-hook", "-g", f"window-layout-changed[{HOOK_INDEX}]")
    assert died[:3] == ("set-hook", "-g", f"pane-died[{HOOK_INDEX}]")
    assert "tmuxlocd pane-died #{window_id} " in died[3]
    assert remove_hooks(mirror) == [
        ("set-hook", "-gu", f"window-layout-changed[{HOOK_INDEX}]"),
        ("set-hook", "-gu", f"pane-died[{HOOK_INDEX}]"),
    ]


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("3.2a", False),
        ("3.3a", False),
        ("3.4", True),
        ("3.5a", True),
        ("3.6b", True),
        ("next-3.7", True),
        ("master", False),
        ("", False),
    ],
)
def test_which_tmux_takes_message_hooks(version: str, message: bool) -> None:
    assert uses_message_hooks(version) is message


# ------------------------------------------------------------------------------ barriers


def test_barriers_served_by_a_reread_that_started_after_them() -> None:
    b = Barriers()
    t1 = b.request()
    started_with = b.requested  # a re-read starts now
    t2 = b.request()  # asked during that re-read
    assert b.serve(started_with)
    assert b.answer(t1) is None and b.answer(t2) is False
    assert b.serve(b.requested) and b.answer(t2) is None
    assert not b.serve(t1)  # an old ticket answers nobody new


def test_a_barrier_fails_after_its_tries_and_says_why() -> None:
    b = Barriers()
    ticket = b.request()
    for _ in range(BARRIER_TRIES - 1):
        assert not b.attempt_failed("list-panes: x")
        assert b.answer(ticket) is False
    assert b.attempt_failed("list-panes: no answer within 5 s")
    assert b.answer(ticket) == "list-panes: no answer within 5 s"
    # a new request gets its own tries, from zero
    again = b.request()
    assert not b.attempt_failed("y")
    assert b.answer(again) is False


def test_failures_with_no_barrier_waiting_fail_nobody_later() -> None:
    b = Barriers()
    for _ in range(10):
        assert not b.attempt_failed("z")
    ticket = b.request()  # tries start from zero for it
    assert not b.attempt_failed("z") and b.answer(ticket) is False


def test_going_down_answers_every_barrier() -> None:
    b = Barriers()
    tickets = [b.request() for _ in range(3)]
    b.serve_all()
    assert [b.answer(t) for t in tickets] == [None, None, None]
    assert not b.pending()


def error_of(e: Episode) -> str | None:
    return e.error  # read through a call: the recover() above changed it


def test_episodes_log_once_each_way() -> None:
    e = Episode()
    assert e.recover() is None
    assert e.fail("a") == "start"
    assert e.fail("a") == "same"
    assert e.fail("b") == "changed"
    assert e.error == "b"
    assert e.recover() == "b" and error_of(e) is None
    assert e.fail("a") == "start"


def test_attaching_anew_forgets_the_old_marks() -> None:
    mirror = fresh("3.3a")
    mirror.on_event(WindowAdd(window_id="@9", unlinked=False))
    assert mirror.dirty
    mirror.attached_to("$1")
    assert not mirror.dirty and mirror.attached_session == "$1"


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["@1", "@2", "@3"]),
            st.lists(st.integers(1, 8), unique=True, max_size=4),
        ),
        max_size=12,
    )
)
def test_the_panes_by_window_follow_every_change_of_the_panes(
    changes: list[tuple[str, list[int]]],
) -> None:
    """Rows of one window that name a pane of another (moved by join-pane or swap-pane
    before that window's own rows come) keep the grouping equal to a grouping made anew."""
    mirror = fresh("3.4")
    for wid in ("@1", "@2", "@3"):
        mirror.windows[wid] = Window(id=wid, name="w", layout="x", zoomed=False)
    mirror.take()
    for wid, numbers in changes:
        words = [
            f"%{n}.{i}.{int(i == 0)}./dev/pts/{n}.{n}.0.0.80.24.0" for i, n in enumerate(numbers)
        ]
        mirror.on_event(
            Message(text=f"tmuxlocd window-layout-changed {wid} 0 lay {' '.join(words)}")
        )
        mirror.take()
        state = mirror.state()
        assert state.by_window is not None
        assert {w: {p.id for p in ps} for w, ps in state.by_window.items()} == {
            w: {p.id for p in ps} for w, ps in group_panes(state.panes).items()
        }
        assert all(state.panes[p.id] is p for ps in state.by_window.values() for p in ps)


@pytest.mark.parametrize(
    ("dirty", "only"),
    [
        (Dirty(publish=True), True),
        (Dirty(), False),
        (Dirty(publish=True, windows={"@1"}), False),
        (Dirty(publish=True, layouts=True), False),
        (Dirty(publish=True, structure=True), False),
        (Dirty(publish=True, full=True), False),
        (Dirty(publish=True, deferred={"@1": ["window-layout-changed"]}), False),
    ],
)
def test_only_publish_means_no_read_and_nothing_deferred(dirty: Dirty, only: bool) -> None:
    # The observer publishes such marks at once, outside its sync loop (no I/O needed).
    assert dirty.only_publish() is only
