"""``where`` without a daemon: the same answer, computed from tmux directly (SPEC §7).

The rule is the daemon's (SPEC §2): this process is in pane P iff its controlling tty
(``/proc/self/stat`` field 7) is the device of P's ``pane_tty``.  Each candidate server is
asked once, with one tmux invocation that runs ``list-sessions``, ``list-windows -a``,
``list-panes -a`` and a ``display-message`` for the server's pid, so the rows are the very
ones the daemon parses (``tmuxlocd.core.model``) and the Location is built by the same code.

Candidates: the server ``$TMUX`` names (it is where this process most likely is, so it is
asked first and usually the only one asked), then every socket in the user's tmux socket
directory.  ``$TMUX`` only orders the search; it proves nothing.  No command used here can
start a server.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping

from tmuxlocd.core.answers import SelfAnswer
from tmuxlocd.core.caller import pane_id_hint
from tmuxlocd.core.errors import RowError
from tmuxlocd.core.model import ServerState
from tmuxlocd.core.oneshot import parse_query, query_argv
from tmuxlocd.core.queries import StaticView, decide_self
from tmuxlocd.host import identity
from tmuxlocd.host.sockets import list_sockets, socket_dir, socket_from_tmux_env

SelfInfo = SelfAnswer  # the name the clients give this answer

QUERY_TIMEOUT = 5.0

# What the answer was computed from, for the user (stderr): tmux; nothing, because no server
# in the socket directory answered; nothing, because none was asked (a process with no tty,
# nor an ancestor with one, is in no pane whatever tmux says).
NOTE = "tmuxlocd: no daemon answered; computed directly from tmux"
NOTHING_NOTE = "tmuxlocd: no daemon and no tmux server answered"
UNASKED_NOTE = "tmuxlocd: no daemon answered; no tmux server asked: no controlling tty"

# ----------------------------------------------------------------------------------------------
# Pure parts.


def env_pane(env: Mapping[str, str]) -> str | None:
    return pane_id_hint(env.get("TMUX_PANE", ""))


def note(view: StaticView, *, asked: bool) -> str:
    """What an answer decided on ``view`` was computed from (``asked``: tmux was queried)."""
    if not asked:
        return UNASKED_NOTE
    return NOTE if any(True for _ in view.server_states()) else NOTHING_NOTE


# ----------------------------------------------------------------------------------------------
# I/O.


def candidate_sockets(env: Mapping[str, str], uid: int) -> list[str]:
    """The server of ``$TMUX`` first, then every socket in tmux's directory."""
    first = socket_from_tmux_env(env.get("TMUX"))
    listed = list_sockets(socket_dir(env, uid))
    return [first, *(p for p in listed if p != first)] if first else listed


def query_server(tmux: str, socket: str, env: Mapping[str, str]) -> ServerState | None:
    """One server's state, or None when it is not running (or answers nonsense)."""
    try:
        proc = subprocess.run(
            query_argv(tmux, socket),
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            timeout=QUERY_TIMEOUT,
            check=False,
            env=dict(env),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    try:
        return parse_query(socket, proc.stdout)
    except (RowError, ValueError):
        return None


def rdev(path: str) -> int | None:
    try:
        return os.stat(path).st_rdev
    except OSError:
        return None


def read_view(
    env: Mapping[str, str] | None = None,
    *,
    tmux: str | None = None,
    sockets: Iterable[str] | None = None,
    until_tty: int = 0,
    until_session: int = 0,
) -> StaticView:
    """The candidate servers, each read once.  With ``until_tty``, the search stops at the
    first server that has a live pane on that tty whose process is ``until_session`` (the
    caller's session: ``queries.owners``), and the others are left alone; a dead pane's tty
    (which the kernel may have given to another) or another session's ends no search."""
    env = os.environ if env is None else env
    tmux = tmux or shutil.which("tmux") or "tmux"
    paths = list(sockets) if sockets is not None else candidate_sockets(env, os.getuid())
    states: list[ServerState] = []
    for path in paths:
        state = query_server(tmux, path, env)
        if state is None:
            continue
        states.append(state)
        if until_tty and any(
            not loc.pane.dead and loc.pane.pid == until_session
            for loc in StaticView([state], rdev).panes_by_rdev(until_tty)
        ):
            break
    return StaticView(states, rdev)


def where_am_i(
    env: Mapping[str, str] | None = None,
    *,
    tmux: str | None = None,
    sockets: Iterable[str] | None = None,
    accept_ancestor: bool = False,
) -> SelfAnswer:
    """The answer ``GET /v1/self`` would give this process, computed without a daemon, by
    the same decision (``queries.decide_self``) over a one-shot read of tmux."""
    return where_and_view(env, tmux=tmux, sockets=sockets, accept_ancestor=accept_ancestor)[0]


def where_and_view(
    env: Mapping[str, str] | None = None,
    *,
    tmux: str | None = None,
    sockets: Iterable[str] | None = None,
    accept_ancestor: bool = False,
) -> tuple[SelfAnswer, StaticView]:
    """``where_am_i``, and the view it was decided on (for the queries that follow)."""
    answer, view, _ = _where(env, tmux, sockets, accept_ancestor)
    return answer, view


def where_and_note(
    env: Mapping[str, str] | None = None,
    *,
    tmux: str | None = None,
    sockets: Iterable[str] | None = None,
) -> tuple[SelfAnswer, str]:
    """``where_am_i``, and the note saying what it was computed from (``note``)."""
    answer, view, asked = _where(env, tmux, sockets, False)
    return answer, note(view, asked=asked)


def _where(
    env: Mapping[str, str] | None,
    tmux: str | None,
    sockets: Iterable[str] | None,
    accept_ancestor: bool,
) -> tuple[SelfAnswer, StaticView, bool]:
    env = os.environ if env is None else env
    pid = os.getpid()
    # This process's own environment: the TMUX_PANE it runs with, as /proc says of others.
    facts = identity.caller_facts(pid, identity.Own(identity.read_stat(pid), env_pane(env)))
    # A process with no tty, and no ancestor with one, is in no pane: nothing is queried.
    asked = bool(facts.tty_nr or facts.ancestor().tty_nr > 0)
    if asked:
        view = read_view(
            env, tmux=tmux, sockets=sockets, until_tty=facts.tty_nr, until_session=facts.session
        )
    else:
        view = StaticView([], rdev)
    return decide_self(view, facts, accept_ancestor=accept_ancestor), view, asked
