"""Where the daemon listens by default and where clients look (SPEC §6).

Standard library only and nothing else imported: ``tmuxlocd notify`` runs from tmux hooks
and must start fast.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: a hook started with python -S pays for every import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def default_socket_path(env: Mapping[str, str] | None = None, platform: str = sys.platform) -> str:
    """``$TMUXLOCD_SOCKET``, else ``$XDG_RUNTIME_DIR/tmuxlocd/tmuxlocd.sock``, else
    ``/tmp/tmuxlocd-<uid>/tmuxlocd.sock`` (on macOS ``~/Library/Caches/tmuxlocd/tmuxlocd.sock``:
    macOS reaps idle files and directories in ``/tmp`` and ``$TMPDIR``, and has no runtime
    directory; ``HOME`` is one of the few variables a harness keeps for its MCP servers, and
    ``expanduser`` falls back to the password database when even that is cleared)."""
    env = os.environ if env is None else env
    explicit = env.get("TMUXLOCD_SOCKET")
    if explicit:
        return explicit
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "tmuxlocd", "tmuxlocd.sock")
    if platform == "darwin":
        home = env.get("HOME") or os.path.expanduser("~")
        return os.path.join(home, "Library", "Caches", "tmuxlocd", "tmuxlocd.sock")
    return f"/tmp/tmuxlocd-{os.getuid()}/tmuxlocd.sock"


def client_socket_path(
    env: Mapping[str, str] | None = None,
    exists: Callable[[str], bool] = os.path.exists,
    platform: str = sys.platform,
) -> str:
    """Where a client looks for the daemon: ``default_socket_path``, except in an environment
    cut down by its host.  Agent harnesses start MCP servers and hooks with few variables (the
    MCP Python SDK passes only HOME, LOGNAME, PATH, SHELL, TERM and USER; Codex clears the
    environment of MCP servers), which drops ``XDG_RUNTIME_DIR``: the daemon of a systemd user
    session, listening under ``/run/user/<uid>``, would then be looked for in ``/tmp``.  With
    neither variable set, that runtime directory is used when the daemon's socket is there and
    not in ``/tmp``."""
    env = os.environ if env is None else env
    path = default_socket_path(env, platform)
    if env.get("TMUXLOCD_SOCKET") or env.get("XDG_RUNTIME_DIR") or platform != "linux":
        return path
    runtime = f"/run/user/{os.getuid()}/tmuxlocd/tmuxlocd.sock"
    if not exists(path) and exists(runtime):
        return runtime
    return path


def context_state_dir(env: Mapping[str, str] | None = None) -> str:
    """Where ``tmuxlocd context`` keeps what each harness session was last told: beside the
    daemon's socket (its runtime directory, or the ``/tmp`` fallback)."""
    return os.path.join(os.path.dirname(client_socket_path(env)), "context")
