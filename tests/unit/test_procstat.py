"""bench.procstat's scheduler times, read from this very process."""

from __future__ import annotations

import os
import time

from bench.procstat import sched_seconds


def test_sched_seconds_counts_this_process_time_on_a_cpu() -> None:
    run0, wait0 = sched_seconds(os.getpid())
    # Work until this thread has used 30 ms of CPU by its own clock.
    end = time.thread_time() + 0.03
    while time.thread_time() < end:
        pass
    run1, wait1 = sched_seconds(os.getpid())
    assert run1 - run0 >= 0.025
    assert wait1 >= wait0 >= 0.0
