"""tmuxlocd.core.activity: /proc stat parsing, the command name as tmux gives it, and the wait
conditions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core import activity
from tmuxlocd.core.activity import Activity, command_of, decide, outcome, parse_dead
from tmuxlocd.core.events import PaneActivity, PaneAdded
from tmuxlocd.core.journal import Journal
from tmuxlocd.core.location import Location, Neighbors, PaneRef, ServerRef, SessionRef, WindowRef
from tmuxlocd.core.procstat import stat_or_none as parse_stat

# Captured on Linux 6.x: a shell at its prompt, and the same shell while `sleep 2` runs.
IDLE = (
    "19796 (bash) S 19795 19796 19796 34818 19796 4194304 421 2821 0 0 0 0 2 1 20 0 1 0 "
    "1285412 4702208 852 18446744073709551615 1 1 0 0 0 0 65536 3686404 1266761467 1 0 0 17 1"
)
BUSY = IDLE.replace("34818 19796 4194304", "34818 19850 4194304")


def test_parse_captured_lines() -> None:
    idle = parse_stat(IDLE)
    assert idle is not None and (idle.pid, idle.comm, idle.pgrp, idle.tpgid) == (
        19796,
        "bash",
        19796,
        19796,
    )
    busy = parse_stat(BUSY)
    assert busy is not None and busy.tpgid == 19850


@given(st.text(alphabet=st.characters(blacklist_characters="\0\n"), max_size=15))
def test_comm_with_spaces_and_parens(comm: str) -> None:
    stat = parse_stat(IDLE.replace("(bash)", f"({comm})"))
    assert stat is not None and stat.comm == comm and stat.tpgid == 19796


@given(st.text(max_size=40))
def test_garbage_never_raises(text: str) -> None:
    parse_stat(text)
    parse_dead(text)


def test_decide() -> None:
    idle = decide(19796, parse_stat(IDLE), b"-bash\0", "bash")
    assert idle is not None and idle.activity == Activity(command="bash", busy=False)
    assert idle.foreground is None
    busy = decide(19796, parse_stat(BUSY), b"sleep\x002\0", None)
    assert busy is not None and busy.activity == Activity(command="sleep", busy=True)
    assert busy.foreground == 19850
    # The terminal gone (kill-pane): no news, not "idle".
    assert (
        decide(19796, parse_stat(IDLE.replace("34818 19796 4194304", "0 -1 4194304")), None, None)
        is None
    )
    # Unreadable: unknown.
    unknown = decide(19796, None, None, None)
    assert unknown is not None and unknown.activity.busy is None


def test_command_names_as_tmux() -> None:
    assert command_of(b"/usr/bin/python3\0-m\0x\0", None) == "python3"
    assert command_of(b"-bash\0", None) == "bash"
    assert command_of(b"exec foo bar\0", None) == "foo"
    assert command_of(b"", "zomb") == "zomb"
    assert command_of(None, None) == ""


def test_parse_dead() -> None:
    assert parse_dead("1 3 ") == (True, 3, None)
    assert parse_dead("1  ") == (True, None, None)
    assert parse_dead("1 ") == (True, None, None)  # 3.2: no pane_dead_signal
    assert parse_dead("1  9") == (True, None, 9)
    assert parse_dead("0  ") == (False, None, None)
    assert parse_dead("x") is None


def test_outcomes() -> None:
    idle = Activity(command="sh", busy=False)
    busy = Activity(command="sleep", busy=True)
    dead = activity.dead_activity(idle, 3, None)
    assert outcome("idle", busy, idle) == "idle"
    assert outcome("idle", busy, busy) is None
    assert outcome("busy", idle, busy) == "busy"
    assert outcome("change", idle, idle) is None
    assert outcome("change", idle, busy) == "change"
    assert outcome("exit", busy, idle) is None
    for until in ("idle", "busy", "exit", "change"):
        assert outcome(until, busy, dead) == "exit"
    assert activity.met("idle", "exit") and not activity.met("busy", "exit")
    assert not activity.met("idle", "timeout") and not activity.met("idle", "gone")
    assert activity.changed(idle, busy) == ("pane.command", "pane.busy")


def test_activity_events_keep_their_own_ring() -> None:
    """Many activity events never push location events out of the resume ring."""
    loc = Location(
        server=ServerRef(socket_path="/s", pid=1),
        session=SessionRef(id="$0", name="main"),
        window=WindowRef(id="@0", index=0, name="w", active=True, zoomed=False, layout="x"),
        pane=PaneRef(
            id="%0",
            index=0,
            active=True,
            tty="/dev/pts/0",
            pid=2,
            left=0,
            top=0,
            width=1,
            height=1,
        ),
        neighbors=Neighbors(),
    )
    journal = Journal("i", ring_size=4)
    loc_events = journal.stamp([PaneAdded(location=loc)], 0.0)
    act = PaneActivity(location=loc, before=Activity(), after=Activity(), changed=())
    journal.stamp([act] * 100, 0.0)
    assert journal.ring[0].seq == loc_events[0].seq
    assert journal.parse_event_id(f"i:{loc_events[0].seq - 1}") is not None
    later = journal.since(loc_events[0].seq - 1)
    assert later[0].seq == loc_events[0].seq and len(later) == 101


# ----------------------------------------------------------------------------------------------
# Exited or killed (remain-on-exit off): the pane-exited hook's list


def test_exited_hook_text() -> None:
    install = activity.exited_hook_install(lambda word: f"\\{word}", 7741)
    assert install[0] == ("set-option", "-g", "@tmuxlocd_exited", "")
    name, flag, slot, text = install[1]
    assert (name, flag, slot) == ("set-hook", "-g", "pane-exited[7741]")
    # The hook's own command is respelled; the value is trimmed to its last 240 chars.
    assert text == ("\\set-option -gF @tmuxlocd_exited '#{=-240:@tmuxlocd_exited} #{hook_pane}'")
    assert activity.exited_hook_remove(7741) == [
        ("set-hook", "-gu", "pane-exited[7741]"),
        ("set-option", "-gu", "@tmuxlocd_exited"),
    ]


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("", set()),
        (" %1", {"%1"}),
        (" %1 %22 %1", {"%1", "%22"}),
        ("345 %7 %8", {"%7", "%8"}),  # trimmed from the left: the tail of an id is dropped
        ("%x % %9", {"%9"}),
    ],
)
def test_parse_exited(text: str, ids: set[str]) -> None:
    assert activity.parse_exited(text) == ids


def test_exited_activity_is_dead_without_status() -> None:
    before = activity.Activity(command="sh", busy=False)
    now = activity.exited_activity(before)
    assert (now.command, now.busy, now.dead, now.exit_status) == ("sh", False, True, None)
    for until in activity.UNTILS:
        assert activity.outcome(until, before, now) == "exit"  # type: ignore[arg-type]
