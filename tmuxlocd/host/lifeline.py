"""A child process that ends when the daemon does, however the daemon ends.

The daemon's tmux clients run in sessions of their own (no signal of the user's terminal
reaches them) and most of them wait on the tmux server, not on us: the 3.3 hook waiter sits
in ``wait-for`` until something signals its channel, a probe waits for a server's answer.
A daemon that ends cleanly reaps them; one killed outright (``kill -9``, the OOM killer)
cannot, and a waiter it left would wait in the user's server for as long as nobody signals.

``tied(argv)`` is the command line to run instead of ``argv``: on Linux, ``argv`` run by
util-linux's ``setpriv --pdeathsig KILL``, which asks the kernel to SIGKILL the process when
the thread that started it (the event loop's, which lives as long as the daemon) ends, and
then executes ``argv`` in the same process (same pid).  Not a ``preexec_fn``: that makes
Python fork the whole daemon and run Python code in the child, and the event loop stood
still for 36 to 46 ms per spawn (measured on this 2-core machine, against under 4 ms for
the ``vfork`` Python uses otherwise); ``setpriv`` costs one more ``exec``, in the child.

Where ``setpriv`` is missing or too old to know ``--pdeathsig`` (util-linux before 2.33),
and on other systems, ``argv`` is run as it is: a killed daemon's waiter then ends at the
next daemon's attach or at a change in tmux, which wake its channel (SPEC §1), and a probe
with its server's answer.  A daemon killed in the instant between the fork and ``setpriv``'s
request leaves its child untied the same way.  A port to another system gives its own
mechanism here (on macOS, a small wrapper watching its parent with kqueue's
``EVFILT_PROC``/``NOTE_EXIT``).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys

# Read at run time, not narrowed by mypy: under --platform darwin a sys.platform test would
# make the rest of the function unreachable to it.
PLATFORM: str = sys.platform


@functools.cache
def _setpriv() -> str | None:
    """The ``setpriv`` that knows ``--pdeathsig``, asked once (a run of ``true``)."""
    if not PLATFORM.startswith("linux"):
        return None
    path = shutil.which("setpriv")
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, "--pdeathsig", "KILL", "--", "true"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if done.returncode == 0 else None


def available() -> bool:
    """Whether ``tied`` ties anything here (said once in the daemon's log)."""
    return _setpriv() is not None


def tied(argv: list[str]) -> list[str]:
    """``argv``, run so that it ends when this process's starting thread does (see above)."""
    setpriv = _setpriv()
    return argv if setpriv is None else [setpriv, "--pdeathsig", "KILL", "--", *argv]
