"""How tmuxlocd starts a tmux client: on a server that exists, never one that starts it.

Every tmux client the package runs (the observer's probes, its control client and hook
waiter, the no-daemon read) begins with ``client_argv``.  ``-N`` ("do not start the server
even if the command would normally do so", in every supported release from 3.2a on) matters
for ``attach-session``, which starts a server when none answers: the observer probes, then
attaches, and a script's ``kill-server`` and unlink of the socket in between would otherwise
bring a server back, on a fresh socket file that outlives it.  With ``-N`` such a client
exits with status 1 and says "no server running on <path>" (the socket refused) or "error
connecting to <path> (...)" (the socket gone), and creates nothing.
"""

from __future__ import annotations

# tmux's client flag: connect to a running server or fail (tmux.c, CLIENT_NOSTARTSERVER).
NO_START = "-N"


def client_argv(tmux: str, socket_path: str, *flags: str) -> list[str]:
    """The start of a tmux client's command line: ``tmux -N <flags> -S <socket_path>``."""
    return [tmux, NO_START, *flags, "-S", socket_path]
