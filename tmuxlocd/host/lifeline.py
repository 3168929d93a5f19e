"""A child process that ends when the daemon does, however the daemon ends.

The daemon's tmux clients run in sessions of their own (no signal of the user's terminal
reaches them) and most of them wait on the tmux server, not on us: the 3.3 hook waiter sits
in ``wait-for`` until something signals its channel, a probe waits for a server's answer.
A daemon that ends cleanly reaps them; one killed outright (``kill -9``, the OOM killer)
cannot, and a waiter it left would wait in the user's server for as long as nobody signals.

``tie_to_us()`` is the hook for ``subprocess``/asyncio's ``preexec_fn``: on Linux it asks
the kernel to SIGKILL the child when the thread that started it ends
(``prctl(PR_SET_PDEATHSIG)``; the event loop's thread, which is the daemon's life), and ends
the child at once if the daemon is already gone by then (the request is only heard from the
moment it is made).  Elsewhere it is None: there a killed daemon's waiter ends at the next
daemon's attach or at a change in tmux, which wake its channel (SPEC §1), and a probe ends
with its server's answer.  A port to another system gives its own mechanism here (on macOS,
a kqueue ``EVFILT_PROC``/``NOTE_EXIT`` watch of the parent in a small wrapper would do).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _prctl() -> Callable[[int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError, TypeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return lambda option, arg: int(prctl(option, arg, 0, 0))


_PRCTL = _prctl()


def tie_to_us() -> Callable[[], None] | None:
    """A ``preexec_fn`` that ties the child's life to this process's, or None where the
    system has no way (the child then outlives a killed daemon, see above)."""
    prctl = _PRCTL
    if prctl is None:
        return None
    parent = os.getpid()

    def in_child() -> None:
        # Between fork and exec: only the call and a check, nothing that allocates much or
        # takes a lock another thread of the parent might have held at the fork.
        if prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
            return  # refused (a seccomp filter): the child lives on as it did before
        if os.getppid() != parent:  # the parent died before the request was made
            os.kill(os.getpid(), signal.SIGKILL)

    return in_child
