"""bench.report's goal rows that combine measurements made minutes apart."""

from __future__ import annotations

from bench.report import Row, build_rows
from bench.rig import Results


def _b4_goal(res: Results) -> Row:
    rows = [r for r in build_rows(res) if r.id == "B4" and r.goal == "≤ 1.2×"]
    assert len(rows) == 1
    return rows[0]


def _measured(self_10: float, floor_10: float, self_1000: float, floor_1000: float) -> Results:
    res = Results()
    res.facts["sizes"] = [10, 1000]
    res.facts["B4 subscribers@1000"] = 100
    res.add("B1 keepalive self", 10, [self_10] * 5)
    res.add("B1 keepalive floor", 10, [floor_10] * 5)
    res.add("B4 keepalive self", 1000, [self_1000] * 5)
    res.add("B4 keepalive floor", 1000, [floor_1000] * 5)
    return res


def test_b4_latency_is_taken_over_the_floor_measured_beside_it() -> None:
    # The machine 30% slower at 1,000 panes, the daemon no slower than its floor: met.
    row = _measured(0.0004, 0.0004, 0.00052, 0.00052)
    goal = _b4_goal(row)
    assert goal.met is True
    assert goal.ratio == "1.00×"
    assert "raw ratio 1.30×" in goal.versus


def test_b4_misses_when_the_daemon_itself_slows_down() -> None:
    # The floor unchanged, the daemon 30% slower: missed.
    goal = _b4_goal(_measured(0.0004, 0.0004, 0.00052, 0.0004))
    assert goal.met is False
    assert goal.ratio == "1.30×"


def test_b4_without_floors_compares_the_raw_figures() -> None:
    res = _measured(0.0004, 0.0004, 0.00052, 0.0004)
    del res.series["B4 keepalive floor"]
    goal = _b4_goal(res)
    assert goal.ratio == "1.30×"
    assert goal.versus == "same at 10 panes 0.400 ms"


def _sched_rows(res: Results) -> list[Row]:
    return [r for r in build_rows(res) if r.what.startswith("… per change")]


def _b3_with_floor() -> Results:
    """B3's rows at 1,000 panes, and the floor's time on a CPU / runnable per change."""
    res = Results()
    res.facts["sizes"] = [1000]
    for key, value in (("first", 0.025), ("last", 0.027), ("cm", 0.023), ("hook", 0.024)):
        res.add(f"B3 attached 100 {key}", 1000, [value] * 3)
    res.add("B3 floor attached 100 on-cpu", 1000, [0.0006])
    res.add("B3 floor attached 100 runnable", 1000, [0.0002])
    return res


def test_b3_sched_row_puts_the_daemon_beside_its_floors() -> None:
    res = _b3_with_floor()
    res.add("B3 attached 100 on-cpu", 1000, [0.0030])
    res.add("B3 attached 100 runnable", 1000, [0.0019])
    res.add("B3 floor rows attached 100 on-cpu", 1000, [0.0008])
    res.add("B3 floor rows attached 100 runnable", 1000, [0.0004])
    (row,) = _sched_rows(res)
    assert row.panes == "1000"
    assert row.median == "3.00 ms / 1.90 ms"
    assert row.versus == "the floor 0.600 ms / 0.200 ms; on 3.3's path 0.800 ms / 0.400 ms"


def test_b3_sched_row_needs_the_daemons_own_figures() -> None:
    res = _b3_with_floor()
    assert _sched_rows(res) == []
    res.add("B3 attached 100 on-cpu", 1000, [0.0030])
    res.add("B3 attached 100 runnable", 1000, [0.0019])
    (row,) = _sched_rows(res)
    assert row.versus == "the floor 0.600 ms / 0.200 ms"
