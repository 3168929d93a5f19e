"""The hooks snippet (tmuxlocd/data/tmux.conf.snippet; hooks/ links to it) sourced into a
private tmux server, next to a daemon that installs
no hooks of its own: the snippet's hooks call ``tmuxlocd notify`` and the change reaches a
subscriber; the user's own hooks stay where they were."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemontest import PYTHON, REPO, SCRIPT, Daemon, Rig
from tests.tmuxtest import TMUX, poll
from tmuxlocd.clients.client import Client
from tmuxlocd.core.events import Event, PaneAdded, PaneRemoved

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]

SNIPPET = Path(REPO) / "tmuxlocd" / "data" / "tmux.conf.snippet"  # also hooks/, a link
INDEX = 7742

# Every location-relevant hook of tmux 3.2-3.5 (see the snippet's comments).
EXPECTED_HOOKS = {
    "window-layout-changed", "window-pane-changed", "window-linked", "window-unlinked",
    "window-renamed", "session-renamed", "session-created", "session-closed",
    "session-window-changed", "pane-exited", "pane-died", "after-split-window",
    "after-kill-pane", "after-select-pane", "after-select-window", "after-select-layout",
    "after-resize-pane", "after-resize-window", "after-rename-window", "after-rename-session",
    "after-new-window", "after-new-session",
}  # fmt: skip


def hooks(rig: Rig) -> dict[str, str]:
    """``name[index]`` -> command, session and window/pane hooks alike."""
    out: dict[str, str] = {}
    for scope in ("-g", "-gw"):
        for line in rig.tmux.run("show-hooks", scope).splitlines():
            name, _, command = line.partition(" ")
            if "[" in name:
                out[name] = command
    return out


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[Rig]:
    """A tmux server whose run-shell jobs find a logging ``tmuxlocd`` first on PATH, which
    hands over to the real command (the console script when installed)."""
    rig = Rig()
    shim_dir = rig.root / "bin"
    shim_dir.mkdir()
    log = rig.root / "notify.log"
    real = SCRIPT if os.path.exists(SCRIPT) else f"{PYTHON} -m tmuxlocd"
    shim = shim_dir / "tmuxlocd"
    shim.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    shim.chmod(0o755)
    path = os.pathsep.join([str(shim_dir), str(Path(PYTHON).parent), os.environ["PATH"]])
    try:
        rig.start_tmux(PATH=path)
        # The user's own hooks, at the usual index, before the snippet is sourced.
        rig.tmux.run("set-hook", "-g", "after-split-window[0]", "set-option -g @user-split 1")
        rig.tmux.run("set-hook", "-g", "window-layout-changed[0]", "set-option -g @user-lay 1")
        yield rig
    finally:
        rig.cleanup()


def notify_log(rig: Rig) -> list[str]:
    path = rig.root / "notify.log"
    return path.read_text().splitlines() if path.exists() else []


def no_pane_in_a_mode(rig: Rig) -> bool:
    """run-shell output would put a pane into view mode: the snippet must print nothing."""
    return set(rig.tmux.run("list-panes", "-a", "-F", "#{pane_in_mode}").split()) == {"0"}


def test_snippet_sets_every_hook_at_its_own_index(rig: Rig) -> None:
    before = hooks(rig)
    rig.tmux.run("source-file", str(SNIPPET))
    after = hooks(rig)
    ours = {name for name in after if name.endswith(f"[{INDEX}]")}
    assert {name.partition("[")[0] for name in ours} == EXPECTED_HOOKS
    assert set(after) - set(before) == ours  # nothing else was added ...
    for name, command in before.items():  # ... and the user's hooks are untouched
        assert after[name] == command
    assert after["after-split-window[0]"] == "set-option -g @user-split 1"
    for name in ours:
        hook = name.partition("[")[0]
        assert after[name] == (
            f'run-shell -b "tmuxlocd notify --hook {hook} --server \\"#{{socket_path}}\\" '
            '>/dev/null 2>&1"'
        )
    # Sourcing twice replaces the entries rather than adding more.
    rig.tmux.run("source-file", str(SNIPPET))
    assert hooks(rig) == after


def test_snippet_removal_lines(rig: Rig) -> None:
    rig.tmux.run("source-file", str(SNIPPET))
    removal = [
        line.removeprefix("# ")
        for line in SNIPPET.read_text().splitlines()
        if line.startswith("# set-hook -gu ")
    ]
    assert len(removal) == len(EXPECTED_HOOKS)
    undo = rig.root / "undo.conf"
    undo.write_text("\n".join(removal) + "\n")
    rig.tmux.run("source-file", str(undo))
    left = hooks(rig)
    assert not [name for name in left if name.endswith(f"[{INDEX}]")]
    assert left["after-split-window[0]"] == "set-option -g @user-split 1"


def test_hooks_without_daemon_are_silent(rig: Rig) -> None:
    rig.tmux.run("source-file", str(SNIPPET))
    rig.tmux.run("split-window", "-d", "-t", "main")
    poll(
        lambda: any("--hook after-split-window" in line for line in notify_log(rig)),
        10,
        "the after-split-window hook to run tmuxlocd notify",
    )
    poll(
        lambda: any("--hook window-layout-changed" in line for line in notify_log(rig)),
        10,
        "the window-layout-changed hook",
    )
    assert no_pane_in_a_mode(rig)
    assert rig.tmux.run("show-option", "-gv", "@user-split").strip() == "1"  # user hook ran


def test_split_in_an_unattached_session_reaches_a_subscriber(rig: Rig) -> None:
    rig.tmux.run("source-file", str(SNIPPET))
    other = rig.tmux.run(
        "new-session", "-d", "-s", "other", "-x", "120", "-y", "40", "-P", "-F", "#{session_id}"
    ).strip()
    daemon = Daemon(rig, "--no-hooks").wait_ready()
    try:
        assert not [name for name in hooks(rig) if name.endswith("[7741]")]  # --no-hooks
        with Client(rig.daemon_socket) as c:

            def catches() -> int:
                (server,) = c.health().servers
                return server.safety_net_catches

            events = c.events(session=other)
            first = next(events)
            assert first.id
            # Without hooks only the daemon's safety net (a digest tmux evaluates once a
            # second) would see this split; through the snippet, its `tmuxlocd notify` has
            # the daemon re-read first.  The safety net may still come first now and then
            # (it fires during the notify's start-up): such a split is tried again, and a
            # snippet that did nothing would have every split caught.
            found_by_notify = []
            for _ in range(5):
                before = catches()
                pane = rig.tmux.run(
                    "split-window", "-d", "-t", "other", "-P", "-F", "#{pane_id}"
                ).strip()
                seen: list[Event] = []
                while not any(
                    isinstance(e, PaneAdded) and e.location.pane.id == pane for e in seen
                ):
                    seen.append(next(events))
                added = next(e for e in seen if isinstance(e, PaneAdded))
                assert added.location.session.name == "other"
                if catches() == before:
                    found_by_notify.append(pane)
                    break
                # Made room again (a split halves the pane), and seen gone before the next.
                rig.tmux.run("kill-pane", "-t", pane)
                for e in events:
                    if isinstance(e, PaneRemoved) and e.pane == pane:
                        break
            events.close()
        assert found_by_notify, "the safety net found every split first: the notify did nothing"
        expected = f"notify --hook after-split-window --server {rig.tmux.socket_path}"
        poll(lambda: expected in notify_log(rig), 10, "the hook's notify call")
        assert no_pane_in_a_mode(rig)
        poll(lambda: "notified" in daemon.logs(), 10, "the daemon to log the notify request")
    finally:
        assert daemon.stop() == 0, daemon.logs()
    # The daemon's stop removed nothing of the snippet's.
    assert {n.partition("[")[0] for n in hooks(rig) if n.endswith(f"[{INDEX}]")} == EXPECTED_HOOKS


def test_snippet_targets_tmux_3_2_syntax() -> None:
    """Only constructs tmux 3.2 understands: braces around one command, quoted names."""
    for line in SNIPPET.read_text().splitlines():
        if line.startswith("set-hook"):
            assert re.fullmatch(
                r"set-hook -g '[a-z-]+\[7742\]' \{ run-shell -b 'tmuxlocd notify --hook "
                r"[a-z-]+ --server \"#\{socket_path\}\" >/dev/null 2>&1' \}",
                line,
            ), line
