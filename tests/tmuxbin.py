"""Which tmux the tests drive: ``$TMUXLOCD_TEST_TMUX``, else the first ``tmux`` on ``PATH``.

``TMUXLOCD_TEST_TMUX`` names a tmux binary (or the directory holding one).  Its directory is
put first on ``PATH`` before any test module is imported, so that everything finds that one
binary by the same rule: the tests' own tmux clients, the daemon they start (which looks up
``tmux`` on ``PATH``), and the panes and hooks of the servers they start.  CI runs the
tmux-facing suites once per supported version this way (``.ci/run``).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

ENV = "TMUXLOCD_TEST_TMUX"


class BadTmux(Exception):
    pass


def choose() -> str | None:
    """Apply ``$TMUXLOCD_TEST_TMUX`` to ``PATH``; the tmux binary the tests will use."""
    chosen = os.environ.get(ENV, "")
    if chosen:
        path = os.path.abspath(os.path.expanduser(chosen))
        binary = os.path.join(path, "tmux") if os.path.isdir(path) else path
        if os.path.basename(binary) != "tmux" or not os.access(binary, os.X_OK):
            raise BadTmux(f"{ENV}={chosen}: expected an executable named tmux, or its directory")
        bindir = os.path.dirname(binary)
        parts = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p != bindir]
        os.environ["PATH"] = os.pathsep.join([bindir, *parts])
        found = shutil.which("tmux")
        if found is None or os.path.realpath(found) != os.path.realpath(binary):
            raise BadTmux(f"{ENV}={chosen}: PATH finds {found} instead")
    return shutil.which("tmux")


def version(binary: str | None) -> str:
    if binary is None:
        return "none"
    try:
        out = subprocess.run(
            [binary, "-V"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return out.stdout.strip() or out.stderr.strip()


def version_of(binary: str | None) -> tuple[int, int]:
    match = re.search(r"(\d+)\.(\d+)", version(binary))
    return (int(match[1]), int(match[2])) if match else (0, 0)


@functools.cache
def _before_new_session(binary: str | None) -> tuple[str, ...]:
    if binary is not None and (3, 0) <= version_of(binary) < (3, 3):
        return ("start-server", ";", "set-option", "-g", "window-size", "manual", ";")
    return ()


def before_new_session() -> list[str]:
    """Commands to chain before the ``new-session -d -x W -y H`` of a test server.

    tmux 3.2a gives the first window of a detached session 80x23 whatever ``-x`` and ``-y``
    say while ``window-size`` is ``latest`` (the default): it takes the size of the
    unattached client running the command.  Tests need the size they ask for, so on 3.2
    servers start with ``window-size manual``, under which the window gets its session's
    ``default-size`` (set from ``-x`` and ``-y``).  Later releases need nothing.
    """
    return list(_before_new_session(shutil.which("tmux")))


def refuses_name(name: str, binary: str | None = None) -> bool:
    """Whether this tmux refuses ``name`` for a session or window (``rename-*``, ``-n``, ``-s``).

    From 3.7 on, ``check_name`` (tmux.c) refuses a name that is not valid UTF-8 or holds an
    ASCII control byte (below 0x20, or 0x7f); earlier releases take any name and store it
    escaped.  Checked against the real binary in tests/integration/test_names_live.py.
    """
    if version_of(binary or shutil.which("tmux")) < (3, 7):
        return False
    raw = os.fsencode(name)
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return any(byte < 0x20 or byte == 0x7F for byte in raw)


def accepted_names(names: list[str], binary: str | None = None) -> list[str]:
    """The names of ``names`` this tmux takes (see ``refuses_name``)."""
    return [name for name in names if not refuses_name(name, binary)]


def stored_session_name(name: str, binary: str | None = None) -> str:
    """The session name tmux keeps for ``name``: before 3.7, ``.`` and ``:`` become ``_``
    (they separate a target's parts); 3.7 keeps them."""
    if version_of(binary or shutil.which("tmux")) >= (3, 7):
        return name
    return name.replace(".", "_").replace(":", "_")
