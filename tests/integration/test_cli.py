"""Every ``tmuxlocd`` command as a subprocess, against a real daemon and a private tmux server.

Commands that must run *inside* a pane (``where`` answers by the caller's controlling tty)
are started in a new tmux window and leave their output and exit status in files.
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemontest import (
    PYTHON,
    REPO,
    SCRIPT,
    Daemon,
    Rig,
    private_rig,
    run_cli,
    running_daemon,
)
from tests.tmuxtest import TMUX, poll
from tmuxlocd.core.harnesses import codex

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with private_rig(split=True) as rig:  # main: %0 left, %1 right
        rig.tmux.run("rename-window", "-t", "@0", "main0")
        yield rig


@pytest.fixture(scope="module")
def daemon(rig: Rig) -> Iterator[Daemon]:
    with running_daemon(rig) as d:
        yield d


def where_cmd(*args: str) -> str:
    return " ".join([PYTHON, "-m", "tmuxlocd", "where", *args])


# ----------------------------------------------------------------------------------------------
# where


def test_where_json_inside_a_pane(rig: Rig, daemon: Daemon) -> None:
    run = rig.run_in_pane(where_cmd("--json"))
    assert run.rc == 0, run.err
    answer = json.loads(run.out)
    assert answer["inside_tmux"] is True
    assert answer["verified_by"] == "tty"
    assert answer["location"]["pane"]["id"] == run.pane
    assert answer["location"]["server"]["socket_path"] == rig.tmux.socket_path
    assert answer["location"]["pane"]["tty"] == run.tty
    assert answer["caller"]["tty"] == run.tty
    assert run.err == ""


def test_where_text_inside_a_pane(rig: Rig, daemon: Daemon) -> None:
    run = rig.run_in_pane(where_cmd("--turn", "7", "--neighbors"), split="%0")
    assert run.rc == 0, run.err
    out = run.out
    lines = out.splitlines()
    assert lines[0] == "tmux location (turn 7):"
    assert lines[1] == f'session main, window 0 "main0", pane 1 {run.pane}'
    assert lines[2].startswith("window active=1, pane active=0, layout ")
    # The split put the new pane below %0, with %1 to its right.
    assert lines[3] == "neighbors: above %0; below none; left none; right %1"
    assert out.endswith("\n") and len(lines) == 4


def test_where_outside_tmux(rig: Rig, daemon: Daemon) -> None:
    text = run_cli(rig, "where")
    assert (text.returncode, text.stdout) == (3, "")
    js = run_cli(rig, "where", "--json")
    assert js.returncode == 3
    answer = json.loads(js.stdout)
    assert answer["inside_tmux"] is False
    assert answer["reason"] == "no_controlling_tty"
    assert answer["location"] is None


def test_where_at_once_after_respawn_pane(rig: Rig, daemon: Daemon) -> None:
    """tmux tells nobody of ``respawn-pane``, which gives the pane a new tty: a process it
    starts and that asks at once is answered from a fresh read, not "not in a pane"."""
    pane = rig.tmux.run("new-window", "-d", "-P", "-F", "#{pane_id}", "cat").strip()
    rig.tmux.run("set-option", "-w", "-t", pane, "remain-on-exit", "on")
    rig.sync()
    try:
        for round_ in range(3):
            out, rc = rig.root / f"respawn{round_}.out", rig.root / f"respawn{round_}.rc"
            script = f"{where_cmd('--json')} >{out}; echo $? >{rc}.tmp; mv {rc}.tmp {rc}"
            rig.tmux.run("respawn-pane", "-k", "-t", pane, script)
            poll(rc.exists, 20.0, f"where in the respawned pane {pane} (round {round_})")
            answer = json.loads(out.read_text())
            tty = rig.tmux.run("display-message", "-p", "-t", pane, "#{pane_tty}").strip()
            assert answer["inside_tmux"] is True, (round_, answer)
            assert answer["verified_by"] == "tty"
            assert answer["location"]["pane"]["id"] == pane
            assert answer["caller"]["tty"] == answer["location"]["pane"]["tty"] == tty
            assert rc.read_text().strip() == "0"
    finally:
        rig.tmux.run("kill-pane", "-t", pane, check=False)
        rig.sync()


def test_a_hook_without_a_tty_at_once_after_respawn_pane(rig: Rig, daemon: Daemon) -> None:
    """A harness's hook started with setsid (no tty), asking for its ancestor's pane, in a
    pane just respawned: the ancestor's new tty is read afresh too."""
    pane = rig.tmux.run("new-window", "-d", "-P", "-F", "#{pane_id}", "cat").strip()
    rig.tmux.run("set-option", "-w", "-t", pane, "remain-on-exit", "on")
    rig.sync()
    url = "http://localhost/v1/self?accept=ancestor"
    try:
        for round_ in range(3):
            out, rc = rig.root / f"hook{round_}.out", rig.root / f"hook{round_}.rc"
            ask = f"setsid -w curl -s --unix-socket {rig.daemon_socket} '{url}' >{out}"
            rig.tmux.run(
                "respawn-pane", "-k", "-t", pane, f"{ask}; echo $? >{rc}.tmp; mv {rc}.tmp {rc}"
            )
            poll(rc.exists, 20.0, f"the hook in the respawned pane {pane} (round {round_})")
            answer = json.loads(out.read_text())
            assert answer["verified_by"] == "ancestor", (round_, answer)
            assert answer["location"]["pane"]["id"] == pane
            assert answer["caller"]["tty"] is None
    finally:
        rig.tmux.run("kill-pane", "-t", pane, check=False)
        rig.sync()


def test_where_without_daemon_computes_directly(rig: Rig, daemon: Daemon) -> None:
    nobody = str(rig.root / "nobody.sock")
    # Once with $TMUX (tried first), once with it unset (found by scanning TMUX_TMPDIR).
    for prefix in (f"TMUXLOCD_SOCKET={nobody}", f"TMUXLOCD_SOCKET={nobody} env -u TMUX"):
        run = rig.run_in_pane(f"{prefix} {where_cmd('--json')}")
        assert run.rc == 0, run.err
        assert run.err == "tmuxlocd: no daemon answered; computed directly from tmux\n"
        answer = json.loads(run.out)
        assert answer["inside_tmux"] is True and answer["verified_by"] == "tty"
        assert answer["location"]["pane"]["id"] == run.pane
        assert answer["caller"]["tty"] == run.tty
        assert answer["caller"]["env_pane"] == run.pane


def test_where_direct_matches_daemon(rig: Rig, daemon: Daemon) -> None:
    """The fallback's answer is the daemon's, field for field (but for the caller's pid)."""
    nobody = str(rig.root / "nobody.sock")
    target = rig.tmux.run("new-window", "-d", "-P", "-F", "#{pane_id}", "sleep 600").strip()
    try:
        cmd = f"{where_cmd('--json')} >{rig.root}/a.json; TMUXLOCD_SOCKET={nobody} " + where_cmd(
            "--json"
        )
        rig.tmux.run("select-window", "-t", target)  # both answers see the same active flags
        run = rig.run_in_pane(cmd, split=target)
        assert run.rc == 0, run.err
        via_daemon = json.loads((rig.root / "a.json").read_text())
        direct = json.loads(run.out)
        for answer in (via_daemon, direct):
            del answer["caller"]["pid"]
        assert direct == via_daemon
    finally:
        rig.tmux.run("kill-window", "-t", target)


def test_where_direct_outside_tmux(rig: Rig) -> None:
    """No tty: tmux is not asked (the rig's server is running), and the note says so."""
    res = run_cli(rig, "where", "--json", env=rig.env(TMUXLOCD_SOCKET=str(rig.root / "x.sock")))
    assert res.returncode == 3
    assert json.loads(res.stdout)["reason"] == "no_controlling_tty"
    assert res.stderr == "tmuxlocd: no daemon answered; no tmux server asked: no controlling tty\n"


@pytest.mark.skipif(shutil.which("script") is None, reason="needs script (util-linux)")
def test_where_with_neither_daemon_nor_tmux_server(tmp_path: Path) -> None:
    """A tty, no daemon, and no tmux server in the socket directory: the note says that
    nothing answered, not that the answer came from tmux."""
    (tmp_path / f"tmux-{os.getuid()}").mkdir(mode=0o700)
    out, err = tmp_path / "out", tmp_path / "err"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(TMUXLOCD_SOCKET=str(tmp_path / "nobody.sock"), TMUX_TMPDIR=str(tmp_path))
    # script(1): a pty of its own, so that tmux is asked.
    res = subprocess.run(
        ["script", "-qec", f"{where_cmd('--json')} >{out} 2>{err}", os.devnull],
        env=env,
        check=False,
        timeout=20,
        capture_output=True,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
    )
    assert res.returncode == 3, (res, err.read_text())  # script -e: the command's status
    answer = json.loads(out.read_text())
    assert answer["inside_tmux"] is False and answer["reason"] == "no_server", answer
    assert answer["caller"]["tty"] is not None, answer
    assert err.read_text() == "tmuxlocd: no daemon and no tmux server answered\n"


# ----------------------------------------------------------------------------------------------
# notify


@pytest.mark.parametrize("runner", ["module", "script"])
def test_notify_is_silent_without_daemon(rig: Rig, runner: str) -> None:
    argv = [PYTHON, "-m", "tmuxlocd"] if runner == "module" else [SCRIPT]
    if runner == "script" and not os.path.exists(SCRIPT):
        pytest.skip("console script not installed (pip install -e .)")
    env = rig.env(TMUXLOCD_SOCKET=str(rig.root / "nobody.sock"))
    for extra in ([], ["--hook", "after-split-window", "--server", "/x y"], ["--bogus", "1"]):
        res = subprocess.run(
            [*argv, "notify", *extra],
            check=False,
            env=env,
            capture_output=True,
            timeout=20,
            cwd=REPO,
        )
        assert (res.returncode, res.stdout, res.stderr) == (0, b"", b"")


def test_notify_is_silent_with_a_daemon(rig: Rig, daemon: Daemon) -> None:
    res = run_cli(rig, "notify", "--hook", "window-renamed", "--server", rig.tmux.socket_path)
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


def test_notify_gives_up_on_a_daemon_that_does_not_answer(rig: Rig) -> None:
    path = str(rig.root / "mute.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as mute:
        mute.bind(path)
        mute.listen(1)  # accepts into the backlog, never answers
        started = time.monotonic()
        # run_cli's own timeout catches a notify that would wait for an answer for ever.
        res = run_cli(rig, "notify", env=rig.env(TMUXLOCD_SOCKET=path))
        elapsed = time.monotonic() - started
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")
    print(f"\nnotify gave up on a mute daemon after {elapsed:.3f} s")


# ----------------------------------------------------------------------------------------------
# neighbors, tree, status


def test_neighbors(rig: Rig, daemon: Daemon) -> None:
    res = run_cli(rig, "neighbors", "--pane", "%0")
    assert res.returncode == 0, res.stderr
    assert res.stdout == "above: none\nbelow: none\nleft: none\nright: %1 (pane 1, 48 cells)\n"
    res = run_cli(rig, "neighbors", "left", "--pane", "1")
    assert (res.returncode, res.stdout) == (0, "%0 index=0 shared=48\n")
    res = run_cli(rig, "neighbors", "above", "--pane", "%0")
    assert (res.returncode, res.stdout) == (0, "")


def test_neighbors_errors(rig: Rig, daemon: Daemon) -> None:
    res = run_cli(rig, "neighbors")  # self, but the test process is in no pane
    assert res.returncode == 3
    assert "not_in_a_pane" in res.stderr
    res = run_cli(rig, "neighbors", "--pane", "%999")
    assert res.returncode == 1 and "not_found" in res.stderr
    res = run_cli(rig, "neighbors", "--pane", "bogus")
    assert res.returncode == 2


def test_neighbors_from_inside_a_pane(rig: Rig, daemon: Daemon) -> None:
    cmd = " ".join([PYTHON, "-m", "tmuxlocd", "neighbors", "above"])
    run = rig.run_in_pane(cmd, split="%0")
    assert (run.rc, run.out) == (0, "%0 index=0 shared=80\n"), run.err


def test_tree_marks_the_callers_pane(rig: Rig, daemon: Daemon) -> None:
    cmd = " ".join([PYTHON, "-m", "tmuxlocd", "tree"])
    run = rig.run_in_pane(cmd)
    assert run.rc == 0, run.err
    lines = run.out.splitlines()
    assert lines[0].startswith(f"server {rig.tmux.socket_path} (pid ")
    assert lines[1] == "  session $0 main"
    marked = [line for line in lines if line.lstrip().startswith("*")]
    assert len(marked) == 1 and marked[0].lstrip().startswith(f"*pane {run.pane} ")
    assert any(line.lstrip().startswith("pane %0 0 80x48+0+0 ") for line in lines)


def test_tree_json(rig: Rig, daemon: Daemon) -> None:
    res = run_cli(rig, "tree", "--json")
    assert res.returncode == 0
    tree = json.loads(res.stdout)
    (server,) = tree["servers"]
    assert server["socket_path"] == rig.tmux.socket_path and server["running"] is True
    panes = {p["id"] for s in server["sessions"] for w in s["windows"] for p in w["panes"]}
    assert {"%0", "%1"} <= panes


def test_status(rig: Rig, daemon: Daemon) -> None:
    res = run_cli(rig, "status")
    assert res.returncode == 0, res.stderr
    head, *servers = res.stdout.splitlines()
    assert head.startswith("tmuxlocd 0.") and ": ok, up " in head
    assert f"socket {rig.daemon_socket}" in head
    assert servers[0].startswith(f"  {rig.tmux.socket_path}: observer attached, 1 sessions")


def test_commands_without_daemon(rig: Rig) -> None:
    env = rig.env(TMUXLOCD_SOCKET=str(rig.root / "nobody.sock"))
    for args in (["status"], ["tree"], ["neighbors", "--pane", "0"], ["watch"]):
        res = run_cli(rig, *args, env=env)
        assert res.returncode == 1, args
        assert "no daemon answered" in res.stderr


# ----------------------------------------------------------------------------------------------
# watch


class Watch:
    """``tmuxlocd watch`` running; lines are read with a deadline."""

    def __init__(self, rig: Rig, *args: str) -> None:
        self.proc = subprocess.Popen(
            [PYTHON, "-m", "tmuxlocd", "watch", *args],
            env=rig.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=REPO,
        )
        assert self.proc.stdout is not None
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.proc.stdout, selectors.EVENT_READ)
        self.buffer = b""

    def line(self, timeout: float = 10.0) -> str:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self.sel.select(left):
                raise AssertionError(f"no line from watch within {timeout} s")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"watch ended: {self.proc.stderr.read()!r}")  # type: ignore[union-attr]
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode()

    def until(self, predicate: Callable[[str], bool], timeout: float = 10.0) -> list[str]:
        """Lines up to and including the first that satisfies ``predicate``."""
        deadline = time.monotonic() + timeout
        lines: list[str] = []
        while not lines or not predicate(lines[-1]):
            lines.append(self.line(max(0.01, deadline - time.monotonic())))
        return lines

    def stop(self) -> int:
        """Ctrl-C: the watch ends by the signal itself (its exit status, as a shell shows it,
        is 130), however busy it was when the signal came."""
        self.proc.send_signal(signal.SIGINT)
        try:
            return self.proc.wait(timeout=10)
        finally:
            self.sel.close()
            for f in (self.proc.stdout, self.proc.stderr):
                if f is not None:
                    f.close()


def test_watch_text(rig: Rig, daemon: Daemon) -> None:
    watch = Watch(rig, "--window", "@0")
    try:
        assert watch.line().endswith(" snapshot 2 panes")
        pane = rig.tmux.run("split-window", "-d", "-t", "%1", "-P", "-F", "#{pane_id}").strip()
        # The new pane is added and %1 shrinks (and %0 gains a neighbour), in some order.
        seen = watch.until(lambda line: " added " in line)
        seen += (
            watch.until(lambda line: " changed %1 " in line)
            if not any(" changed %1 " in line for line in seen)
            else []
        )
        added = [line for line in seen if " added " in line]
        assert f" added {pane} session main window 0 " in added[0]
        rig.tmux.run("kill-pane", "-t", pane)
        watch.until(lambda line: f" removed {pane} (was session main window 0)" in line)
    finally:
        assert watch.stop() == -signal.SIGINT


def test_watch_ndjson(rig: Rig, daemon: Daemon) -> None:
    watch = Watch(rig, "--format", "ndjson", "--pane", "%0")
    try:
        first = json.loads(watch.line())
        assert first["type"] == "snapshot"
        assert [p["pane"]["id"] for p in first["panes"]] == ["%0"]
        rig.tmux.run("rename-window", "-t", "@0", "renamed")
        change = json.loads(watch.line())
        assert change["type"] == "pane.changed" and change["location"]["pane"]["id"] == "%0"
        assert "window.name" in change["changed"] and change["id"]
    finally:
        rig.tmux.run("rename-window", "-t", "@0", "main0")
        assert watch.stop() == -signal.SIGINT


# ----------------------------------------------------------------------------------------------
# serve, mcp


def test_serve_bad_config_exits_2(rig: Rig, tmp_path: Path) -> None:
    bad = tmp_path / "config.toml"
    bad.write_text('colour = "blue"\n')
    res = run_cli(rig, "serve", "--config", str(bad))
    assert res.returncode == 2
    assert "colour" in res.stderr
    res = run_cli(rig, "serve", "--config", str(tmp_path / "missing.toml"))
    assert res.returncode == 2 and "does not exist" in res.stderr


def test_serve_refuses_tcp_off_loopback(rig: Rig) -> None:
    res = run_cli(rig, "serve", "-S", rig.tmux.socket_path, "--listen", "tcp:0.0.0.0:0")
    assert res.returncode == 2, res.stderr


def test_second_daemon_on_a_live_socket_exits_1(rig: Rig, daemon: Daemon) -> None:
    res = run_cli(rig, "serve", "-S", rig.tmux.socket_path, "--listen", f"unix:{rig.daemon_socket}")
    assert res.returncode == 1
    assert daemon.healthy()


def test_mcp_without_the_extra(rig: Rig) -> None:
    probe = subprocess.run(
        [PYTHON, "-c", "import tmuxlocd.clients.mcp"],
        check=False,
        env=rig.env(),
        capture_output=True,
        cwd=REPO,
    )
    if probe.returncode == 0:
        pytest.skip("tmuxlocd.clients.mcp is importable here")
    res = run_cli(rig, "mcp")
    assert res.returncode == 1
    assert "tmuxlocd[mcp]" in res.stderr


def test_help_texts(rig: Rig) -> None:
    for command in (
        "serve",
        "where",
        "neighbors",
        "watch",
        "tree",
        "notify",
        "status",
        "mcp",
        "doctor",
    ):
        res = run_cli(rig, command, "--help")
        assert res.returncode == 0 and res.stdout.startswith("usage: tmuxlocd " + command)


# ----------------------------------------------------------------------------------------------
# systemd socket activation


def test_socket_activation(rig: Rig) -> None:
    """The daemon serves on an inherited listening socket (fd 3, LISTEN_FDS=1, LISTEN_PID
    naming it) and binds nothing of its own."""
    path = str(rig.root / "activated.sock")
    default = str(rig.root / "default.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    fd = listener.fileno()
    # What systemd does: the socket on fd 3, and LISTEN_PID naming the process that execs the
    # daemon (exec keeps the pid).  A Python wrapper, since sh cannot name an fd above 9.
    wrapper = (
        "import os, sys; "
        f"os.dup2({fd}, 3); os.close({fd}); "
        "os.environ.update(LISTEN_PID=str(os.getpid()), LISTEN_FDS='1'); "
        "os.execv(sys.executable, [sys.executable, '-m', 'tmuxlocd', 'serve', "
        f"'-S', {rig.tmux.socket_path!r}])"
    )
    env = rig.env(TMUXLOCD_SOCKET=default)
    d = Daemon.from_argv(rig, [PYTHON, "-c", wrapper], socket=path, env=env, pass_fds=[fd])
    listener.close()
    try:
        d.wait_ready()
        res = run_cli(rig, "status", env=rig.env(TMUXLOCD_SOCKET=path))
        assert res.returncode == 0, res.stderr
        assert f"  {rig.tmux.socket_path}: observer attached" in res.stdout
        assert not os.path.exists(default)
    finally:
        assert d.stop() == 0, d.logs()


# ----------------------------------------------------------------------------------------------
# doctor: after a real install, in a throwaway home (never the user's)


class Home:
    """A home directory of its own for ``install`` and ``doctor``, and an installation of
    tmuxlocd in a virtualenv there that can be moved away (its interpreter is what the hooks
    run)."""

    def __init__(self, rig: Rig, tmp: Path) -> None:
        self.root = tmp
        self.home = tmp / "home"
        self.work = tmp / "work"
        self.home.mkdir()
        self.work.mkdir()
        self.venv = tmp / "venv"
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(self.venv)], check=True)
        # The virtualenv sees this test run's packages (tmuxlocd among them) through a .pth.
        import sysconfig

        purelib = sysconfig.get_paths()["purelib"]
        (site,) = self.venv.glob("lib/python3*/site-packages")
        (site / "outer.pth").write_text(purelib + "\n" + REPO + "\n")
        self.env = rig.env(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(tmp / "config"),
            XDG_RUNTIME_DIR=str(tmp / "run"),
            TMUXLOCD_SOCKET=str(tmp / "nobody.sock"),
            GEMINI_CLI_SYSTEM_SETTINGS_PATH=str(tmp / "system-settings.json"),
        )
        self.env.pop("CODEX_HOME", None)

    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def cli(self, *args: str, python: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python or self.python(), "-m", "tmuxlocd", *args],
            check=False,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            cwd=self.work,
        )

    def doctor(self, *args: str) -> tuple[int, dict[str, Any]]:
        """``doctor --json`` by the test run's own interpreter (the virtualenv may be gone)."""
        res = self.cli("doctor", *args, "--json", python=PYTHON)
        assert res.stderr == ""
        return res.returncode, json.loads(res.stdout)

    def move_venv(self) -> None:
        self.venv.rename(self.root / "venv-moved")
        self.venv = self.root / "venv-moved"


def statuses(answer: dict[str, Any], harness: str | None) -> dict[str, str]:
    return {f["check"]: f["status"] for f in answer["findings"] if f["harness"] == harness}


@pytest.fixture
def home(rig: Rig, tmp_path: Path) -> Home:
    return Home(rig, tmp_path)


def test_doctor_claude_then_a_moved_virtualenv(home: Home) -> None:
    installed = home.cli("install", "claude")
    assert installed.returncode == 0, installed.stderr
    # install ends with the doctor's verdict; the MCP server is the user's to add.
    assert installed.stdout.splitlines()[-1].startswith("doctor: all is well (")
    rc, answer = home.doctor("claude")
    assert rc == 0, answer
    assert statuses(answer, "claude") == {
        "hooks": "ok",
        "hook-command": "ok",
        "hooks-enabled": "ok",
        "mcp": "warning",
    }
    assert statuses(answer, None) == {"daemon": "warning", "pane": "warning"}
    home.move_venv()
    rc, answer = home.doctor("claude")
    assert rc == 1
    assert statuses(answer, "claude")["hook-command"] == "problem"
    broken = next(f for f in answer["findings"] if f["check"] == "hook-command")
    assert f"{home.root}/venv/bin/python (no such file)" in broken["found"]
    assert broken["fix"].startswith(f"{PYTHON} -m tmuxlocd install claude")
    # Installed again from where it is now: well again.
    assert home.cli("install", "claude").returncode == 0
    assert home.doctor("claude")[0] == 0


def test_doctor_gemini_then_hooks_disabled(home: Home) -> None:
    assert home.cli("install", "gemini").returncode == 0
    rc, answer = home.doctor("gemini")
    assert rc == 0, answer
    assert set(statuses(answer, "gemini").values()) == {"ok"}
    settings = home.home / ".gemini" / "settings.json"
    good = settings.read_text()
    settings.write_text(json.dumps({**json.loads(good), "hooksConfig": {"enabled": False}}))
    rc, answer = home.doctor("gemini")
    assert (rc, statuses(answer, "gemini")["hooks-enabled"]) == (1, "problem")
    settings.write_text(json.dumps({**json.loads(good), "hooksConfig": {"disabled": ["tmuxlocd"]}}))
    assert home.doctor("gemini")[0] == 1
    settings.write_text(good)
    (home.root / "system-settings.json").write_text('{"hooksConfig": {"enabled": false}}')
    assert home.doctor("gemini")[0] == 1
    (home.root / "system-settings.json").unlink()
    data = json.loads(good)
    del data["mcpServers"]
    settings.write_text(json.dumps(data))
    rc, answer = home.doctor("gemini")
    assert (rc, statuses(answer, "gemini")["mcp"]) == (1, "problem")


def trust_as_codex(home: Home) -> None:
    """What trusting the hooks in Codex's /hooks writes: the current hash of each hook under
    its key (computed by the recipe the unit tests hold to Codex's own hashes)."""
    import tomlkit

    from tmuxlocd.clients import doctor

    hooks_json = home.home / ".codex" / "hooks.json"
    config = home.home / ".codex" / "config.toml"
    doc = tomlkit.parse(config.read_text())
    state = tomlkit.table(is_super_table=True)
    for hook in doctor.our_hooks(json.loads(hooks_json.read_text())):
        key = codex.hook_key(str(hooks_json), hook.event, hook.group, hook.index)
        state[key] = {"trusted_hash": codex.hook_hash(hook.event, hook.matcher, hook.entry)}
    doc["hooks"] = {"state": state}
    config.write_text(tomlkit.dumps(doc))


def test_doctor_codex_trust(home: Home) -> None:
    installed = home.cli("install", "codex")
    assert installed.returncode == 0, installed.stderr  # the verdict does not change it
    assert installed.stdout.splitlines()[-1].startswith("doctor: 1 problem")
    rc, answer = home.doctor("codex")
    assert (rc, statuses(answer, "codex")["trust"]) == (1, "problem")
    trust = next(f for f in answer["findings"] if f["check"] == "trust")
    assert trust["found"].startswith("trust state present for 0 of 5 installed hook commands")
    assert "/hooks" in trust["fix"]
    trust_as_codex(home)
    rc, answer = home.doctor("codex")
    assert rc == 0, answer
    assert set(statuses(answer, "codex").values()) == {"ok"}
    # The virtualenv moves and install runs again from there: the commands changed, so the
    # trust recorded for the old ones no longer holds (Codex runs none, silently).
    home.move_venv()
    assert home.cli("install", "codex").returncode == 0
    rc, answer = home.doctor("codex")
    assert (rc, statuses(answer, "codex")["trust"]) == (1, "problem")
    trust = next(f for f in answer["findings"] if f["check"] == "trust")
    assert "present for 5 of 5" in trust["found"] and "another command" in trust["found"]


def test_doctor_every_harness_found(home: Home) -> None:
    rc, answer = home.doctor()
    assert rc == 1
    assert answer["findings"][0]["check"] == "harnesses"
    (home.home / ".codex").mkdir()  # Codex in use, without tmuxlocd: said, not a failure
    assert home.cli("install", "gemini").returncode == 0
    rc, answer = home.doctor()
    assert rc == 0, answer
    assert statuses(answer, "codex") == {"hooks": "warning"}
    assert statuses(answer, "claude") == {}
    text = home.cli("doctor", python=PYTHON)
    assert text.returncode == 0
    assert text.stdout.splitlines()[0] == "Codex"
    assert "~/.gemini/settings.json" in text.stdout
    assert text.stdout.splitlines()[-1] == "verdict: all is well (3 warnings)"


def test_doctor_in_a_pane_with_the_daemon(rig: Rig, daemon: Daemon, home: Home) -> None:
    """Inside a pane, with a daemon: nothing to warn about."""
    assert home.cli("install", "gemini").returncode == 0
    env = " ".join(
        f"{k}={home.env[k]}" for k in ("HOME", "XDG_CONFIG_HOME", "GEMINI_CLI_SYSTEM_SETTINGS_PATH")
    )
    run = rig.run_in_pane(f"cd {home.work} && env {env} {PYTHON} -m tmuxlocd doctor gemini --json")
    assert run.rc == 0, run.err
    answer = json.loads(run.out)
    assert answer["verdict"] == "all is well"
    pane = next(f for f in answer["findings"] if f["check"] == "pane")
    assert f"in pane {run.pane} (session main" in pane["found"]


@pytest.mark.skipif(
    not (os.environ.get("TMUXLOCD_TEST_CODEX") or shutil.which("codex")),
    reason="needs a Codex CLI (TMUXLOCD_TEST_CODEX=<path> or codex on PATH)",
)
def test_doctor_agrees_with_codex(home: Home) -> None:
    """The doctor's trust verdict against Codex's own (``codex app-server``, ``hooks/list``),
    trusting the way Codex's /hooks does (``config/batchWrite`` of each ``currentHash``)."""
    codex = os.environ.get("TMUXLOCD_TEST_CODEX") or shutil.which("codex") or "codex"
    assert home.cli("install", "codex").returncode == 0

    def ask(trust: bool) -> list[str]:
        proc = subprocess.Popen(
            [codex, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=home.env,
            cwd=home.work,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout

        def call(n: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            stdin.write(json.dumps({"id": n, "method": method, "params": params}) + "\n")
            stdin.flush()
            while True:
                message: dict[str, Any] = json.loads(stdout.readline())
                if message.get("id") == n:
                    assert "error" not in message, message
                    result: dict[str, Any] = message["result"]
                    return result

        try:
            call(1, "initialize", {"clientInfo": {"name": "tmuxlocd-tests", "version": "0"}})
            stdin.write(json.dumps({"method": "initialized"}) + "\n")
            hooks = call(2, "hooks/list", {"cwds": [str(home.work)]})["data"][0]["hooks"]
            if trust:
                value = {h["key"]: {"trusted_hash": h["currentHash"]} for h in hooks}
                edit = {"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": value}
                call(3, "config/batchWrite", {"edits": [edit]})
            return sorted(str(h["trustStatus"]) for h in hooks)
        finally:
            proc.kill()
            proc.wait()

    assert ask(trust=False) == ["untrusted"] * 3
    assert statuses(home.doctor("codex")[1], "codex")["trust"] == "problem"
    ask(trust=True)
    assert ask(trust=False) == ["trusted"] * 3
    assert statuses(home.doctor("codex")[1], "codex")["trust"] == "ok"
    home.move_venv()
    assert home.cli("install", "codex").returncode == 0
    assert ask(trust=False) == ["modified"] * 3
    assert statuses(home.doctor("codex")[1], "codex")["trust"] == "problem"


def test_install_claude_allow_sandbox_in_a_throwaway_home(home: Home) -> None:
    """The real command: the daemon's socket (as the CLI resolves it) in the throwaway home's
    settings, the user's sandbox settings kept, and out again with --remove."""
    settings = home.home / ".claude" / "settings.json"
    sock = home.env["TMUXLOCD_SOCKET"]
    dry = home.cli("install", "claude", "--allow-sandbox", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert not settings.exists()
    assert '+      "allowUnixSockets": [' in dry.stdout and f'+        "{sock}"' in dry.stdout
    added = [line for line in dry.stdout.splitlines() if line.startswith("+")]
    assert not [line for line in added if "allowAll" in line or '"enabled"' in line]

    mine = {"sandbox": {"enabled": True, "network": {"allowedDomains": ["github.com"]}}}
    settings.parent.mkdir()
    settings.write_text(json.dumps(mine, indent=2) + "\n")
    plain = home.cli("install", "claude")  # without the flag: the sandbox is left alone
    assert plain.returncode == 0, plain.stderr
    assert json.loads(settings.read_text())["sandbox"] == mine["sandbox"]
    installed = home.cli("install", "claude", "--allow-sandbox")
    assert installed.returncode == 0, installed.stderr
    data = json.loads(settings.read_text())
    assert data["sandbox"] == {
        "enabled": True,
        "network": {"allowedDomains": ["github.com"], "allowUnixSockets": [sock]},
    }
    assert data["hooks"]
    if sys.platform != "darwin":
        assert "which Claude Code applies on macOS only" in installed.stdout
    written = settings.read_bytes()
    assert home.cli("install", "claude", "--allow-sandbox").returncode == 0
    assert settings.read_bytes() == written
    removed = home.cli("install", "claude", "--remove")
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text() == json.dumps(mine, indent=2) + "\n"
