"""A user's tmux configuration against the daemon: aliases that take over the commands it
sends, hooks that add output or fail, options that change numbering or lifetimes.

For each, the daemon either keeps a right model (checked against tmux's own lists) or says
exactly what stops it: ``/v1/health`` (``observer: "error"``, ``last_error``, ``status`` not
``ok``), one WARNING in its log per episode, ``tmuxlocd status``, and barriers (``POST
/v1/sync``, ``?fresh=1``) that answer 503 ``sync_failed`` instead of stale data.  Once tmux
answers sanely again the model converges within 3 s.  A real daemon, a real tmux on a private
socket, curl as the HTTP client.
"""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

import pytest

from tests.daemontest import Daemon, Rig, run_cli
from tests.tmuxtest import TMUX, poll
from tmuxlocd.clients.client import Client, SyncFailedError
from tmuxlocd.core.spelling import USED, spellings

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
    pytest.mark.timeout(90),
]

CONVERGE = 3.0  # seconds: from tmux answering sanely again to the model being right


def curl(daemon: Daemon, method: str, path: str, timeout: float = 30.0) -> tuple[int, Any]:
    proc = subprocess.run(
        [
            "curl",
            "-sS",
            "--unix-socket",
            daemon.socket,
            "-X",
            method,
            "-o",
            "-",
            "-w",
            "\n%{http_code}",
            f"http://localhost{path}",
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    body, _, code = proc.stdout.rpartition("\n")
    return int(code), json.loads(body) if body.strip() else None


def health(daemon: Daemon) -> dict[str, Any]:
    code, body = curl(daemon, "GET", "/v1/health")
    assert code == 200
    server: dict[str, Any] = body["servers"][0]
    return {"status": body["status"], **server}


def tmux_panes(rig: Rig) -> set[str]:
    # list-pane: the test itself must not be taken over by the aliases it sets; only the
    # ids, since the hooks under test add their own lines to every listing
    out = rig.tmux.run("list-pane", "-a", "-F", "#{pane_id}")
    return {word for word in out.split() if word.startswith("%")}


def daemon_panes(daemon: Daemon) -> set[str]:
    code, body = curl(daemon, "GET", "/v1/panes?limit=1000")
    assert code == 200
    return {p["pane"]["id"] for p in body["panes"]}


def converged(rig: Rig, daemon: Daemon) -> bool:
    return daemon_panes(daemon) == tmux_panes(rig)


def start(rig: Rig, *config: tuple[str, ...]) -> Daemon:
    rig.start_tmux()
    rig.tmux.run("new-session", "-d", "-s", "other")
    for argv in config:
        rig.tmux.run(*argv)
    daemon = Daemon(rig).wait_ready()
    poll(lambda: health(daemon)["observer"] in ("attached", "error"), 20, "the first attach")
    return daemon


def warnings_in(daemon: Daemon) -> list[str]:
    return [line for line in daemon.logs().splitlines() if "WARNING" in line]


# ------------------------------------------------------------------------------ aliases


def test_an_alias_set_while_attached_is_bypassed_and_the_barrier_is_honest(rig: Rig) -> None:
    """The issue's reproduction: an alias over list-panes, set while the daemon runs."""
    daemon = start(rig)
    try:
        rig.tmux.run("set", "-s", "command-alias[90]", "list-panes=display-message -p hijacked")
        rig.tmux.run("new-window", "-d", "-t", "other:")
        began = time.monotonic()
        code, body = curl(daemon, "POST", "/v1/sync")
        took = time.monotonic() - began
        # The first re-read fails on the old spelling; the next attachment reads the aliases
        # and sends list-panes under a spelling no alias takes: the barrier is kept (a 200:
        # one that ran out its deadline answers 503).  It recovered by tmux's own answer,
        # not by a command left to time out.
        assert code == 200, body
        assert "no answer within" not in daemon.logs(), daemon.logs()
        print(f"\nbarrier with an alias set while attached: {took:.3f} s")
        assert daemon_panes(daemon) == tmux_panes(rig)
        h = health(daemon)
        assert (h["status"], h["observer"], h["last_error"]) == ("ok", "attached", None)
        rig.tmux.run("set", "-su", "command-alias[90]")
        rig.tmux.run("new-window", "-d", "-t", "main:")
        poll(lambda: converged(rig, daemon), CONVERGE, "the window made after the alias went")
        assert daemon.proc.poll() is None
    finally:
        daemon.stop()


def test_an_alias_over_every_spelling_is_reported_and_fails_barriers(rig: Rig) -> None:
    daemon = start(rig)
    try:
        words = spellings("list-panes")
        for i, word in enumerate(words):
            rig.tmux.run("set", "-s", f"command-alias[{90 + i}]", f"{word}=display -p hijacked")
        rig.tmux.run("new-window", "-d", "-t", "other:")
        for method, path in (("POST", "/v1/sync"), ("GET", "/v1/tree?fresh=1")):
            began = time.monotonic()
            code, body = curl(daemon, method, path)
            took = time.monotonic() - began
            assert code == 503, body
            assert body["error"]["code"] == "sync_failed"
            (failed,) = body["error"]["servers"]
            assert failed["socket_path"] == rig.tmux.socket_path
            # The failure of the hijacked list-panes itself, its tries used up: not the
            # barrier's deadline ("no re-read published within"), nor a command that was
            # never answered.
            assert "list-panes" in failed["error"]
            assert "published within" not in failed["error"], failed
            assert "no answer" not in failed["error"], failed
            print(f"\n{method} {path} failed in {took:.3f} s: {failed['error']}")
        h = health(daemon)
        assert h["status"] == "degraded" and h["observer"] == "error"
        assert "command-alias shadows every spelling of list-panes" in h["last_error"]
        status = run_cli(rig, "status")
        assert status.returncode == 1
        assert "error" in status.stdout and "list-panes" in status.stdout, status.stdout
        # every client says it, none answers with data
        for argv in (("sync",), ("where", "--fresh"), ("where", "--fresh", "--json")):
            done = run_cli(rig, *argv)
            assert done.returncode == 1, (argv, done)
            assert "sync_failed" in done.stderr and rig.tmux.socket_path in done.stderr
            assert done.stdout == ""
        with Client(daemon.socket) as client, pytest.raises(SyncFailedError) as failed_sync:
            client.sync()
        assert list(failed_sync.value.servers) == [rig.tmux.socket_path]
        # one WARNING for the episode, however many retries and barriers it saw
        assert len([w for w in warnings_in(daemon) if "cannot read tmux" in w]) == 1
        # tmux is sane again: the model converges, health clears, barriers work
        for i in range(len(words)):
            rig.tmux.run("set", "-su", f"command-alias[{90 + i}]")
        began = time.monotonic()
        poll(lambda: converged(rig, daemon), CONVERGE + 2, "convergence after the fix")
        # The goal is 3 s (backoff capped at 2 s, then one attachment); the deadline above
        # leaves room for a loaded machine, and the figure is printed for the record.
        print(f"converged {time.monotonic() - began:.3f} s after the aliases went")
        poll(lambda: health(daemon)["observer"] == "attached", CONVERGE, "health to clear")
        assert health(daemon)["status"] == "ok"
        code, _ = curl(daemon, "POST", "/v1/sync")
        assert code == 200
        assert any("reads well again" in line for line in daemon.logs().splitlines())
    finally:
        daemon.stop()


def test_aliases_over_every_command_it_sends_set_before_it_starts(rig: Rig) -> None:
    hijack = USED  # every command the daemon sends, by its full name
    config = [
        ("set", "-s", f"command-alias[{100 + i}]", f"{name}=display -p hijacked")
        for i, name in enumerate(hijack)
    ]
    daemon = start(rig, *config)
    try:
        h = health(daemon)
        assert (h["status"], h["observer"]) == ("ok", "attached"), h
        assert converged(rig, daemon)
        # Changes in another session reach the model with no barrier: hooks, spelled anew,
        # still fire (and the attached session's notifications still arrive).
        rig.tmux.run("split-window", "-d", "-t", "other:")
        rig.tmux.run("split-window", "-d", "-t", "main:")
        poll(lambda: converged(rig, daemon), CONVERGE, "splits in both sessions")
        code, _ = curl(daemon, "POST", "/v1/sync")
        assert code == 200
        assert "command-alias shadows" in daemon.logs()
    finally:
        daemon.stop()


# ------------------------------------------------------------------------------ hooks


@pytest.mark.parametrize(
    "hook",
    [
        # output the daemon did not ask for, in the middle of its replies
        ("set-hook", "-g", "after-list-panes", "display-message -p noise"),
        ("set-hook", "-g", "after-list-windows", "list-sessions"),
        # hooks that fail every time they run
        ("set-hook", "-g", "after-list-sessions", "kill-pane -t %9999"),
        ("set-hook", "-g", "after-refresh-client", "run-shell -b false"),
        ("set-hook", "-g", "after-display-message", "select-pane -t %9999"),
    ],
    ids=["adds-output", "adds-a-listing", "fails", "fails-in-shell", "fails-on-display"],
)
def test_after_hooks_that_add_output_or_fail(rig: Rig, hook: tuple[str, ...]) -> None:
    daemon = start(rig, hook)
    try:
        assert health(daemon)["observer"] == "attached"
        rig.tmux.run("split-window", "-d", "-t", "other:")
        rig.tmux.run("new-window", "-d", "-t", "main:")
        poll(lambda: converged(rig, daemon), CONVERGE, "convergence")
        code, _ = curl(daemon, "POST", "/v1/sync")
        assert code == 200
        assert health(daemon)["status"] == "ok"
    finally:
        daemon.stop()


def test_session_hooks_and_pane_base_index(rig: Rig) -> None:
    daemon = start(
        rig,
        ("set-hook", "-t", "other", "window-layout-changed", "display-message -p layout"),
        ("set-hook", "-t", "main", "after-split-window", "select-layout tiled"),
        ("set", "-g", "base-index", "1"),
        ("set", "-g", "pane-base-index", "1"),
        ("set", "-g", "renumber-windows", "on"),
    )
    try:
        for _ in range(3):
            rig.tmux.run("new-window", "-d", "-t", "other:")
            rig.tmux.run("split-window", "-d", "-t", "main:")
        rig.tmux.run("kill-window", "-t", "other:2")  # renumbering follows
        poll(lambda: converged(rig, daemon), CONVERGE, "convergence")
        code, body = curl(daemon, "GET", "/v1/tree")
        assert code == 200
        indexes = sorted(
            w["index"]
            for s in body["servers"][0]["sessions"]
            if s["name"] == "other"
            for w in s["windows"]
        )
        want = sorted(
            int(i)
            for i in rig.tmux.run("list-windows", "-t", "other", "-F", "#{window_index}").split()
        )
        assert indexes == want
        assert health(daemon)["status"] == "ok"
    finally:
        daemon.stop()


# ------------------------------------------------------------------------------ lifetimes


def test_default_command_that_exits_at_once(rig: Rig) -> None:
    daemon = start(rig, ("set", "-g", "default-command", "true"))
    try:
        # Windows open and close at once; the model follows and never wedges.
        for _ in range(5):
            rig.tmux.run("new-window", "-d", "-t", "other:", check=False)
        poll(lambda: converged(rig, daemon), CONVERGE, "convergence")
        code, _ = curl(daemon, "POST", "/v1/sync")
        assert code == 200
        assert health(daemon)["status"] == "ok"
    finally:
        daemon.stop()


def test_destroy_unattached_and_exit_empty(rig: Rig) -> None:
    daemon = start(rig, ("set", "-g", "exit-empty", "off"))
    try:
        rig.tmux.run("set", "-t", "other", "destroy-unattached", "on")
        # the daemon's control client counts as attached where it attached; the other
        # session is destroyed as soon as nothing is attached to it
        rig.tmux.run("new-session", "-d", "-s", "third")
        rig.tmux.run("kill-session", "-t", "main")
        poll(lambda: converged(rig, daemon), CONVERGE + 2, "convergence")
        for name in ("third", "other"):
            rig.tmux.run("kill-session", "-t", name, check=False)
        # exit-empty off: the server runs with no session; the daemon shows no pane
        poll(lambda: daemon_panes(daemon) == set(), CONVERGE + 2, "no panes")
        assert health(daemon)["status"] == "ok"
        rig.tmux.run("new-session", "-d", "-s", "again")
        poll(lambda: converged(rig, daemon), CONVERGE + 2, "the new session")
    finally:
        daemon.stop()


@pytest.mark.parametrize("setting", ["off", "on", "no-detached"])
def test_detach_on_destroy(rig: Rig, setting: str) -> None:
    daemon = start(rig, ("set", "-g", "detach-on-destroy", setting))
    try:
        rig.tmux.run("new-session", "-d", "-s", "third")
        rig.tmux.run("kill-session", "-t", "main")  # where the daemon attached
        rig.tmux.run("split-window", "-d", "-t", "other:")
        poll(lambda: converged(rig, daemon), CONVERGE + 2, "convergence")
        code, _ = curl(daemon, "POST", "/v1/sync")
        assert code == 200
    finally:
        daemon.stop()
