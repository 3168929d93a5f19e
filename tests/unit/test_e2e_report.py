"""The end-to-end report (``tests/e2e/report.py``): a scenario's row and a ``kill -9``
timing's row in one report, each in its table."""

from __future__ import annotations

from tests.e2e.report import render


def test_scenario_rows_and_kill_timings_each_get_their_table() -> None:
    rows = [
        {
            "harness": "claude",
            "package": "@anthropic-ai/claude-code",
            "version": "2.1.332",
            "scenario": "first_prompt_then_resume",
            "requests": 2,
            "location_bytes": [180, 180],
            "new_bytes": [180, 0],
            "hook_runs": 3,
            "hook_events": ["SessionStart"],
            "hook_ms_median": 25.0,
            "hook_ms_max": 30.0,
        },
        {"harness": "qwen", "kill": "-p", "gone_ms": 41.5},
        {"harness": "opencode", "kill": "TUI", "exit_ms": 130.2, "gone_ms": 132.0},
    ]
    text = render(rows)
    assert "### @anthropic-ai/claude-code 2.1.332" in text
    assert "| first_prompt_then_resume | 2 | 180, 180 | 180, 0 | 3 | SessionStart |" in text
    assert "| qwen | -p | - | 41.5 |" in text
    assert "| opencode | TUI | 130.2 | 132.0 |" in text
