"""The journal's ids and resume decisions, at the ring's edges (no hub, no aiohttp)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core.events import Lagged, Reset, ServerDown
from tmuxlocd.core.journal import Journal
from tmuxlocd.core.location import ServerRef


def down() -> ServerDown:
    return ServerDown(server=ServerRef(socket_path="/tmp/tmux-0/a", pid=1))


def filled(n: int, ring: int = 4) -> Journal:
    journal = Journal("abcd", ring_size=ring)
    for _ in range(n):
        journal.stamp([down()], 1.0)
    return journal


def test_ids_increase_and_carry_the_instance_and_time() -> None:
    journal = Journal("abcd")
    items = journal.stamp([down(), down()], 12.5)
    assert [i.seq for i in items] == [1, 2]
    assert [i.event.id for i in items] == ["abcd:1", "abcd:2"]
    assert all(i.event.time == 12.5 for i in items)
    assert b'"id":"abcd:1"' in items[0].json  # encoded once, with its id
    assert journal.event_id() == "abcd:2"


@pytest.mark.parametrize(
    ("value", "seq"),
    [
        ("abcd:10", 10),  # the newest: resume with nothing to replay
        ("abcd:6", 6),  # 7..10 are in the ring (ring of 4): exact
        ("abcd:5", None),  # 6 left the ring: reset
        ("abcd:0", None),
        ("abcd:11", None),  # a future id
        ("other:10", None),  # another instance (the daemon restarted)
        ("abcd:١٠", None),  # digits of another script
        ("abcd:", None),
        ("10", None),
        ("", None),
    ],
)
def test_resume_at_the_ring_edge(value: str, seq: int | None) -> None:
    assert filled(10).parse_event_id(value) == seq


def test_an_empty_journal_resumes_only_from_zero() -> None:
    journal = Journal("abcd")
    assert journal.parse_event_id("abcd:0") == 0
    assert journal.parse_event_id("abcd:1") is None


def test_since_replays_exactly_the_later_events() -> None:
    journal = filled(10)
    assert [i.seq for i in journal.since(7)] == [8, 9, 10]
    assert journal.since(10) == []


def test_markers_carry_the_last_id() -> None:
    journal = filled(3)
    reset, lagged = journal.marker("reset", 2.0), journal.marker("lagged", 2.0)
    assert isinstance(reset, Reset) and isinstance(lagged, Lagged)
    assert reset.id == lagged.id == "abcd:3"


@given(st.integers(0, 40), st.integers(1, 8), st.integers(0, 45))
def test_a_resumable_id_replays_every_later_event(n: int, ring: int, asked: int) -> None:
    journal = filled(n, ring)
    seq = journal.parse_event_id(f"abcd:{asked}")
    if seq is None:
        assert asked > n or asked < n - ring
    else:
        assert [i.seq for i in journal.since(seq)] == list(range(seq + 1, n + 1))


def test_a_replayed_event_is_the_one_published() -> None:
    # The ring keeps bytes only: what a resume rebuilds must be the very event (Locations
    # from captured tmux replies, pane.changed and pane.removed, activity in its own ring).
    from tests.unit.test_queries import captured
    from tests.unit.test_streams import resized
    from tmuxlocd.daemon.hub import Hub

    hub = Hub()
    state = captured()
    published = hub.update(state)
    published += hub.update(resized(state, "%2", 100))
    gone = dict(state.panes)
    gone.pop("%3")
    published += hub.update(msgspec.structs.replace(state, panes=gone, by_window=None))
    assert {type(p.event).__name__ for p in published} >= {
        "ServerUp",
        "PaneAdded",
        "PaneChanged",
        "PaneRemoved",
    }
    assert hub.journal.since(0) == published
    assert hub.ring == published
    middle = published[len(published) // 2].seq
    assert hub.journal.since(middle) == [p for p in published if p.seq > middle]
