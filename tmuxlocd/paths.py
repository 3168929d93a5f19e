"""Where the daemon listens by default and where clients look (SPEC §6).

Standard library only and nothing else imported: ``tmuxlocd notify`` runs from tmux hooks
and must start fast.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def default_socket_path(env: Mapping[str, str] | None = None) -> str:
    """``$TMUXLOCD_SOCKET``, else ``$XDG_RUNTIME_DIR/tmuxlocd/tmuxlocd.sock``, else
    ``/tmp/tmuxlocd-<uid>/tmuxlocd.sock``."""
    env = os.environ if env is None else env
    explicit = env.get("TMUXLOCD_SOCKET")
    if explicit:
        return explicit
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "tmuxlocd", "tmuxlocd.sock")
    return f"/tmp/tmuxlocd-{os.getuid()}/tmuxlocd.sock"
