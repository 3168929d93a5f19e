"""tmux's socket directory, the listing and the liveness probe (tmuxlocd.host.sockets): the
one copy the daemon's watcher, its API, its own socket's takeover and the no-daemon lookups
share."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from tmuxlocd.host.sockets import list_sockets, resolve_server, socket_alive, socket_dir


def test_the_directory_is_tmux_own_rule() -> None:
    assert socket_dir({"TMUX_TMPDIR": "/t"}, 1000) == "/t/tmux-1000"
    assert socket_dir({}, 1000) == "/tmp/tmux-1000"
    assert socket_dir({"TMUX_TMPDIR": ""}) == f"/tmp/tmux-{os.getuid()}"
    assert resolve_server("work", {"TMUX_TMPDIR": "/t"}) == f"/t/tmux-{os.getuid()}/work"
    assert resolve_server("/a/b") == "/a/b"


def test_the_directory_is_resolved_as_tmux_resolves_it(tmp_path: Path) -> None:
    """tmux realpaths its socket directory (on macOS /tmp is /private/tmp): the daemon's keys,
    ``?server=`` and a hook's ``--server "#{socket_path}"`` must be spelled as tmux does."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    uid = os.getuid()
    assert socket_dir({"TMUX_TMPDIR": str(link)}) == f"{real}/tmux-{uid}"
    assert resolve_server("w", {"TMUX_TMPDIR": str(link)}) == f"{real}/tmux-{uid}/w"
    assert resolve_server(f"{link}/tmux-{uid}/w") == f"{real}/tmux-{uid}/w"
    assert resolve_server(f"{real}/tmux-{uid}/w") == f"{real}/tmux-{uid}/w"


def test_listing_and_liveness(tmp_path: Path) -> None:
    live = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    live.bind(str(tmp_path / "b-live"))
    live.listen(1)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(tmp_path / "a-dead"))
    dead.close()  # the file stays; nothing listens
    (tmp_path / "c-file").write_text("")
    try:
        assert list_sockets(str(tmp_path)) == [str(tmp_path / "a-dead"), str(tmp_path / "b-live")]
        assert socket_alive(str(tmp_path / "b-live"))
        assert not socket_alive(str(tmp_path / "a-dead"))
        assert not socket_alive(str(tmp_path / "c-file"))
        assert not socket_alive(str(tmp_path / "none"))
        assert list_sockets(str(tmp_path / "none")) == []
    finally:
        live.close()
