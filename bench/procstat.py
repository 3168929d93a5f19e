"""Processes as Linux tells of them: CPU time, memory and the terminal's foreground group
from /proc, and the moment one exits from a pidfd.

Standard library and the package's stat parser only (tmuxlocd.core.procstat), nothing of
the rest of ``bench``: the activity tests
(tests/integration/test_activity.py) import it too, so that the bench and the tests time a
command's end by the same word of the kernel, without the bench's dependencies.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from tmuxlocd.core.procstat import ProcStat, parse_stat

CLK_TCK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> ProcStat:
    return parse_stat(Path(f"/proc/{pid}/stat").read_bytes())


def cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` in clock ticks (fields 14 and 15 of /proc/pid/stat)."""
    stat = _stat(pid)
    return stat.utime + stat.stime


def tpgid(pid: int) -> int:
    """The foreground process group of ``pid``'s terminal (field 8 of /proc/pid/stat)."""
    return _stat(pid).tpgid


def cpu_seconds(pid: int) -> float:
    return cpu_ticks(pid) / CLK_TCK


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (every thread's children file)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/children").read_text()
        except OSError:
            continue
        out.extend(int(x) for x in text.split())
    return out


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def tree_cpu_seconds(pid: int) -> tuple[float, float]:
    """(CPU of ``pid`` itself, CPU of its live descendants), in seconds."""
    own = cpu_seconds(pid)
    rest = 0.0
    for child in descendants(pid):
        try:
            rest += cpu_seconds(child)
        except (OSError, ValueError):
            continue  # exited meanwhile
    return own, rest


def sched_seconds(pid: int) -> tuple[float, float]:
    """Seconds every thread of ``pid`` has spent on a CPU and runnable but waiting for one
    (``/proc/<pid>/task/<tid>/schedstat``: nanoseconds, to the scheduler's own clock, where
    ``cpu_ticks`` counts in 10 ms ticks).  A thread that ended meanwhile is not counted."""
    run = wait = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            fields = Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()
        except OSError:
            continue
        run += int(fields[0])
        wait += int(fields[1])
    return run / 1e9, wait / 1e9


def rss_bytes(pid: int) -> int:
    """VmRSS of ``pid`` in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise ValueError(f"no VmRSS for pid {pid}")


async def exited(pid: int) -> float:
    """When ``pid`` exits (``time.monotonic()``), as the kernel tells it through a pidfd:
    the reference a measured end is timed against, not whenever someone polled."""
    fd = os.pidfd_open(pid)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[float] = loop.create_future()

    def fired() -> None:
        if not done.done():
            done.set_result(time.monotonic())

    loop.add_reader(fd, fired)
    try:
        return await done
    finally:
        loop.remove_reader(fd)
        os.close(fd)
