"""The heap trimmer: one trim a delay after it is asked, however often it is asked."""

from __future__ import annotations

import asyncio

from tests.tmuxtest import wait_until
from tmuxlocd.host.heap import Trimmer, _malloc_trim


async def test_asking_often_gives_one_trim_after_the_delay() -> None:
    done: list[float] = []
    loop = asyncio.get_running_loop()
    trimmer = Trimmer(delay=0.05, trim=lambda: done.append(loop.time()))
    asked = loop.time()
    for _ in range(100):
        trimmer.soon()
    await wait_until(lambda: trimmer.trims == 1, 5, "the trim")
    assert len(done) == 1 and done[0] - asked >= 0.05
    trimmer.soon()  # asked again once it is done: another one
    await wait_until(lambda: trimmer.trims == 2, 5, "the second trim")


async def test_a_cancelled_trim_does_not_run() -> None:
    done: list[int] = []
    trimmer = Trimmer(delay=0.01, trim=lambda: done.append(1))
    trimmer.soon()
    trimmer.cancel()
    other = Trimmer(delay=0.02, trim=lambda: None)
    other.soon()
    await wait_until(lambda: other.trims == 1, 5, "a later trim")
    assert done == [] and trimmer.trims == 0


def test_no_loop_no_trim() -> None:
    trimmer = Trimmer(delay=0.0, trim=lambda: None)
    trimmer.soon()  # outside a running loop: nothing is scheduled, nothing raised
    assert trimmer.trims == 0


def test_the_c_library_s_trim_runs_here() -> None:
    # The machines this runs on have glibc; elsewhere the trimmer is a no-op.
    trim = _malloc_trim()
    assert trim is not None
    assert trim() in (0, 1)
