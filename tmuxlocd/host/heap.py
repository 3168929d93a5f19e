"""Freed heap given back to the system after a burst of large buffers (glibc's malloc_trim).

A thousand streams starting at once (a restart under its subscribers, B9) take their
snapshot's slices, aiohttp's buffers and a task each; once written and freed, glibc keeps
most of that heap mapped, fragmented between objects still alive, so the daemon's RSS stays
at its peak (measured: 107 MiB with 1,000 idle streams at 1,000 panes, 84 MiB once trimmed).
``Trimmer.soon`` asks for one ``malloc_trim(0)`` a second later, at most one a second
however often it is asked: nothing runs while nothing is asked, and where the C library has
no ``malloc_trim`` (musl, macOS) it does nothing at all.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

TRIM_DELAY_S = 1.0


def _malloc_trim() -> Callable[[], object] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


class Trimmer:
    def __init__(
        self, delay: float = TRIM_DELAY_S, trim: Callable[[], object] | None = None
    ) -> None:
        self.delay = delay
        self.trim = trim if trim is not None else _malloc_trim()
        self.trims = 0  # done so far
        self._armed: asyncio.TimerHandle | None = None

    def soon(self) -> None:
        """One trim ``delay`` seconds from now, unless one is already due."""
        if self.trim is None or self._armed is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._armed = loop.call_later(self.delay, self._fire)

    def _fire(self) -> None:
        self._armed = None
        if self.trim is not None:
            self.trim()
            self.trims += 1

    def cancel(self) -> None:
        if self._armed is not None:
            self._armed.cancel()
            self._armed = None
