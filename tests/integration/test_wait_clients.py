"""The wait (spec "Pane activity") through its clients, against a real daemon and a private
tmux server: ``tmuxlocd wait`` (its exit codes and output) and both typed clients' ``wait()``
-- met, timeout and gone each."""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from collections.abc import Iterator

import pytest

from tests.daemontest import (
    PYTHON,
    REPO,
    Daemon,
    Rig,
    private_rig,
    run_cli,
    running_daemon,
    start_in_pane,
)
from tests.tmuxtest import TMUX, poll
from tmuxlocd.clients.client import AsyncClient, Client, ClientError

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with private_rig(start=True) as rig:
        yield rig


@pytest.fixture(scope="module")
def daemon(rig: Rig) -> Iterator[Daemon]:
    with running_daemon(rig) as d:
        yield d


def new_pane(rig: Rig, command: str | None = None) -> str:
    """A new window's pane (a window made after the rig set default-shell /bin/sh)."""
    argv = ["new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}"]
    return rig.tmux.run(*argv, *([command] if command else [])).strip()


def busy_pane(rig: Rig, daemon: Daemon) -> str:
    """A pane whose shell runs ``cat``, seen busy by the daemon."""
    pane = new_pane(rig)
    start_in_pane(rig, pane, "cat")
    with Client(daemon.socket) as client:
        client.sync()
        assert client.wait(pane, "busy", timeout_s=20).outcome == "busy"
    return pane


def waits_pending(daemon: Daemon, n: int) -> None:
    def enough() -> bool:
        with Client(daemon.socket) as client:
            return client.health().waits >= n

    poll(enough, 20, f"{n} pending waits")


def background_wait(rig: Rig, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [PYTHON, "-m", "tmuxlocd", "wait", *args],
        env=rig.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
    )


# ----------------------------------------------------------------------------------------------
# tmuxlocd wait


def test_cli_wait_met_and_timeout(rig: Rig, daemon: Daemon) -> None:
    pane = busy_pane(rig, daemon)
    try:
        met = run_cli(rig, "wait", pane, "--until", "busy")
        assert met.returncode == 0, met.stderr
        assert met.stdout.startswith("busy after ") and met.stdout.endswith(" s\n"), met.stdout
        js = run_cli(rig, "wait", pane.lstrip("%"), "--until", "busy", "--json")
        assert js.returncode == 0, js.stderr
        answer = json.loads(js.stdout)
        assert answer["outcome"] == "busy" and answer["met"] is True
        assert answer["activity"]["command"] == "cat" and answer["activity"]["busy"] is True
        assert answer["location"]["pane"]["id"] == pane

        late = run_cli(rig, "wait", pane, "--until", "idle", "--timeout", "0.2")
        assert late.returncode == 124, late.stderr
        assert late.stdout.startswith("timeout after "), late.stdout
        late_js = run_cli(rig, "wait", pane, "--timeout", "0.2", "--json")
        assert late_js.returncode == 124
        answer = json.loads(late_js.stdout)
        assert (answer["outcome"], answer["met"], answer["until"]) == ("timeout", False, "idle")
        assert answer["activity"]["busy"] is True

        # cat's end (its terminal's EOF) meets a pending idle wait.
        pending = background_wait(rig, pane, "--until", "idle")
        waits_pending(daemon, 1)
        rig.tmux.run("send-keys", "-t", pane, "C-d")
        out, err = pending.communicate(timeout=20)
        assert pending.returncode == 0, err
        assert out.startswith("idle after "), out
    finally:
        rig.tmux.run("kill-pane", "-t", pane)


def test_cli_wait_gone(rig: Rig, daemon: Daemon) -> None:
    pane = busy_pane(rig, daemon)
    pending = background_wait(rig, pane, "--until", "idle")
    waits_pending(daemon, 1)
    rig.tmux.run("kill-pane", "-t", pane)
    out, err = pending.communicate(timeout=20)
    assert pending.returncode == 3, (out, err)
    assert out.startswith("gone after ") and "(the pane was removed" in out, out


def test_cli_wait_exit_status_and_not_met(rig: Rig, daemon: Daemon) -> None:
    """A remain-on-exit pane's ``exit 3``: --until exit is met (0) and prints the status; a
    wait for busy on the dead pane is not (4)."""
    pane = new_pane(rig, "read x; exit 3")
    rig.tmux.run("set-option", "-w", "-t", pane, "remain-on-exit", "on")
    try:
        rig.sync()
        pending = background_wait(rig, pane, "--until", "exit")
        waits_pending(daemon, 1)
        rig.tmux.run("send-keys", "-t", pane, "Enter")
        out, err = pending.communicate(timeout=20)
        assert pending.returncode == 0, (out, err)
        assert out.startswith("exit status 3 after "), out
        busy = run_cli(rig, "wait", pane, "--until", "busy")
        assert busy.returncode == 4, busy
        assert busy.stdout.startswith("exit status 3 after "), busy.stdout
    finally:
        rig.tmux.run("kill-pane", "-t", pane)


def test_cli_wait_usage_and_errors(rig: Rig, daemon: Daemon) -> None:
    assert run_cli(rig, "wait", "%0", "--timeout", "9999").returncode == 2
    assert run_cli(rig, "wait", "%0", "--until", "soon").returncode == 2
    missing = run_cli(rig, "wait", "%99999")
    assert missing.returncode == 1 and "99999" in missing.stderr, missing
    nobody = run_cli(rig, "wait", "%0", env=rig.env(TMUXLOCD_SOCKET=str(rig.root / "no.sock")))
    assert nobody.returncode == 1 and nobody.stderr, nobody


# ----------------------------------------------------------------------------------------------
# The typed clients


def test_sync_client_wait(rig: Rig, daemon: Daemon) -> None:
    pane = busy_pane(rig, daemon)
    with Client(daemon.socket) as client:
        met = client.wait(pane, "busy")
        assert (met.outcome, met.met, met.until) == ("busy", True, "busy")
        assert met.activity.command == "cat" and met.location is not None
        assert met.location.pane.busy is True and met.location.pane.command == "cat"
        late = client.wait(pane, "idle", timeout_s=0.2)
        assert (late.outcome, late.met) == ("timeout", False)
        assert late.waited_ms >= 200 and late.activity.busy is True
        with pytest.raises(ClientError) as bad:
            client.wait("%99999", "idle")
        assert bad.value.status == 404
    rig.tmux.run("kill-pane", "-t", pane)
    pane = busy_pane(rig, daemon)
    box: list[object] = []

    def waiter() -> None:
        try:
            with Client(daemon.socket) as client:
                box.append(client.wait(pane, "idle", timeout_s=30))
        except Exception as exc:  # noqa: BLE001 - the test's to report
            box.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    waits_pending(daemon, 1)
    rig.tmux.run("kill-pane", "-t", pane)
    thread.join(40)
    assert len(box) == 1, box
    (gone,) = box
    assert getattr(gone, "outcome", None) == "gone", gone
    assert getattr(gone, "location", "") is None and getattr(gone, "met", True) is False


async def test_async_client_wait(rig: Rig, daemon: Daemon) -> None:
    pane = busy_pane(rig, daemon)
    async with AsyncClient(daemon.socket) as client:
        met = await client.wait(pane, "busy")
        assert (met.outcome, met.met) == ("busy", True) and met.activity.command == "cat"
        late = await client.wait(pane, "idle", timeout_s=0.2)
        assert (late.outcome, late.met) == ("timeout", False)
        idle = asyncio.create_task(client.wait(pane, "idle", timeout_s=30))
        await asyncio.to_thread(waits_pending, daemon, 1)
        rig.tmux.run("send-keys", "-t", pane, "C-d")
        done = await idle
        assert (done.outcome, done.met) == ("idle", True)
        assert done.before.busy is True and done.activity.busy is False

        # Cancelling a wait hangs up, which frees it in the daemon.
        start_in_pane(rig, pane, "cat")
        assert (await client.wait(pane, "busy")).outcome == "busy"
        hung = asyncio.create_task(client.wait(pane, "idle", timeout_s=30))
        await asyncio.to_thread(waits_pending, daemon, 1)
        hung.cancel()
        with pytest.raises(asyncio.CancelledError):
            await hung

        def freed() -> bool:
            with Client(daemon.socket) as c:
                return c.health().waits == 0

        await asyncio.to_thread(poll, freed, 20, "the cancelled wait to be freed")

        gone = asyncio.create_task(client.wait(pane, "idle", timeout_s=30))
        await asyncio.to_thread(waits_pending, daemon, 1)
        rig.tmux.run("kill-pane", "-t", pane)
        answer = await gone
        assert (answer.outcome, answer.met, answer.location) == ("gone", False, None)
        assert answer.reason
