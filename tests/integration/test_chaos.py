"""The daemon's control connection broken at random (tests/chaos.py), while tmux changes.

Property: whatever was injected (``%error`` replies, delays, truncated blocks, dropped
connections, stray lines), every barrier that answers 200 is true (``/v1/tree`` then equals
tmux's own lists), every other answer is 503 ``sync_failed``; and once injection stops the
model converges to tmux's lists, health is ``ok`` again, and a subscriber's replayed stream
equals tmux (no change was missed in silence).  A hang (no answer at all) gets a test of its
own, since each one costs the command deadline.

``TMUXLOCD_CHAOS_REPORT=FILE`` appends each example's figures to FILE as JSON lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.chaos import SOFT_KINDS, chaotic, recover, walk_under_chaos
from tests.soak import TMUX, tmux_ok

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
    pytest.mark.timeout(600),
]


def report(figures: dict[str, Any]) -> None:
    path = os.environ.get("TMUXLOCD_CHAOS_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(figures) + "\n")


@settings(
    max_examples=int(os.environ.get("TMUXLOCD_CHAOS_EXAMPLES", "5")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=bool(os.environ.get("CI")),
)
@given(
    kinds=st.sets(st.sampled_from(SOFT_KINDS), min_size=1).map(lambda s: tuple(sorted(s))),
    rate=st.sampled_from((0.05, 0.2, 0.5)),
    seed=st.integers(0, 2**31),
    steps=st.integers(5, 15),
)
def test_whatever_is_injected_the_model_converges(
    kinds: tuple[str, ...], rate: float, seed: int, steps: int
) -> None:
    async def example() -> None:
        async with chaotic(seed) as run:
            run.chaos.on(rate, kinds, seed)
            answers = await walk_under_chaos(run, steps)
            injected = run.chaos.injected()
            took = await recover(run)
            report(
                {
                    "kinds": kinds,
                    "rate": rate,
                    "seed": seed,
                    "steps": steps,
                    "injected": injected,
                    "converge_s": round(took, 3),
                    **answers,
                }
            )

    asyncio.run(example())


def test_a_hang_fails_the_barrier_at_its_deadline_and_recovers() -> None:
    async def example() -> None:
        async with chaotic(7) as run:
            run.chaos.on(1.0, ("hang",), 7)
            await tmux_ok(run.server.socket_path, "split-window", "-d", "-t", "B:")
            began = time.monotonic()
            status, body = await run.daemon.request("POST", "/v1/sync")
            took = time.monotonic() - began
            # No answer from tmux: never a 200; the barrier fails by its command's timeout
            # (the answer names it), where the request's own deadline only catches a hang.
            assert status == 503 and body["error"]["code"] == "sync_failed", body
            assert "no answer" in body["error"]["servers"][0]["error"]
            print(f"\nthe barrier failed in {took:.3f} s: {body['error']['servers'][0]['error']}")
            health = await run.daemon.health()
            assert health["status"] == "degraded"
            assert health["servers"][0]["observer"] == "error"
            assert "no answer within" in health["servers"][0]["last_error"]
            assert run.chaos.injected().get("hang", 0) >= 1
            await recover(run)

    asyncio.run(example())
