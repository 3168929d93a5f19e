"""How the observer attaches to a tmux server and hears its hooks: the decisions, no I/O.

Before attaching, a plain client reads the sessions (``PROBE_SESSIONS``, ``PROBE_BEST``);
``parse_probe`` reads its answer and ``attach_target`` picks the session.  On tmux 3.3 a
hook's rows come through a waiter client whose command line ``waiter_argv`` spells.  The
shell (tmuxlocd.daemon.observer) runs them; the bench builds the same command lines here.
"""

from __future__ import annotations

from tmuxlocd.core.errors import CommandFailed
from tmuxlocd.core.invoke import client_argv
from tmuxlocd.core.mirror import LAYOUTS_OPTION
from tmuxlocd.core.model import id_number
from tmuxlocd.core.spelling import Spelling

# Before attaching, as a plain client (invoke.client_argv: it never starts a server).
PROBE_SESSIONS = ("list-sessions", "-F", "#{session_id} #{session_attached}")
# The session a command run from outside tmux with no target goes to (tmux's own rule,
# cmd_find_from_nothing: the most recently active session), asked the same way.
PROBE_BEST = ("display-message", "-p", "best #{session_id}")
# Wake-ups one waiter client serves before the next one takes over.  Its command line grows
# with it (tmux takes a client's command in one message of at most 16 KiB).
WAITER_CHAIN = 64
# The line that ends a waiter's round; the rows the hooks left follow it on the same line.
WAITER_MARK = "tmuxlocd-end"
# A subscription name we never create: removing it is a no-op that fails when the client
# named is gone.
ALIVE = "tmuxlocd-alive"


def channel(uid: int) -> str:
    """The ``wait-for`` channel the daemon's hooks signal: one per user."""
    return f"tmuxlocd-{uid}"


def waiter_argv(
    tmux: str, socket_path: str, spell: Spelling, channel: str, client_name: str
) -> list[str]:
    """One waiter client's commands: ``WAITER_CHAIN`` rounds of waiting and reading.

    A tmux client costs the server far more than a command: at 1,000 panes about 12 ms
    of CPU to connect and go again (measured on 3.3a).  So one client serves many
    wake-ups: each round waits on the channel, checks that our control client
    (``client_name``) still exists, prints a mark that ends the round followed by the rows
    the hooks appended, and clears them (no hook runs between two commands of a client's
    list; tmux writes each command's output to the client as it runs).  Few commands: tmux
    looks for the pane of a client without a session, through every pane, for each command
    it runs.  The check fails once our control client has gone (a killed daemon), which
    ends the client's command list: no waiter outlives its daemon for more than one wake-up.
    """
    rounds: list[str] = []
    for _ in range(WAITER_CHAIN):
        if rounds:
            rounds.append(";")
        rounds += [spell.word("wait-for"), channel, ";"]
        rounds += [*spell(("refresh-client", "-t", client_name, "-B", ALIVE))]
        rounds += [";", *spell(("display-message", "-p", f"{WAITER_MARK}#{{{LAYOUTS_OPTION}}}"))]
        rounds += [";", *spell(("set-option", "-su", LAYOUTS_OPTION))]
    # -u: without it a client of this cut environment is not UTF-8, and tmux rewrites
    # what it prints for it (control characters become "_").
    return [*client_argv(tmux, socket_path, "-u"), *rounds]


def parse_probe(lines: list[str]) -> list[tuple[str, int]]:
    """The rows of ``PROBE_SESSIONS``: (session id, clients attached); the session of
    ``PROBE_BEST``'s line, when there is one, first."""
    sessions = []
    best = None
    for line in lines:
        if line.startswith("best "):
            best = line[5:]
            continue
        sid, _, attached = line.partition(" ")
        if not (sid.startswith("$") and sid[1:].isdigit() and attached.isdigit()):
            raise CommandFailed("list-sessions", f"unexpected answer {line[:100]!r}")
        sessions.append((sid, int(attached)))
    if any(sid == best for sid, _ in sessions):
        sessions.sort(key=lambda s: s[0] != best)
    else:  # a session a real client already has (no session_attached changes from 0)
        sessions.sort(key=lambda s: (s[1] == 0, id_number(s[0])))
    return sessions


def attach_target(sessions: list[tuple[str, int]]) -> str:
    """The session to attach to: the first of ``parse_probe``'s (the most recently active
    session, when tmux said which).

    Attaching makes a session the most recently active one (tmux moves its activity time),
    and a command run from outside tmux with no target goes to the most recently active
    session.  Attached to the one that already is, the daemon leaves that order, so the
    target of every such command, as it was (docs/reliability.md, "Scripts beside the
    daemon").  Without that answer: a session a real client already has, the lowest id."""
    return sessions[0][0]
