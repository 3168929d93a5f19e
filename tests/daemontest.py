"""Test support for the command line: a daemon as a subprocess, commands run inside panes.

Everything here is private to one test: the tmux server lives on its own socket under a
temporary directory laid out like a tmux socket directory (``<root>/tmux-<uid>/<name>``, so
that ``TMUX_TMPDIR=<root>`` makes it the only server a scan can find), the daemon listens on a
socket in the same directory, and its configuration directory is empty.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.tmuxbin import before_new_session
from tests.tmuxtest import TmuxServer, poll
from tmuxlocd.clients.rawhttp import NoDaemon, raw_request

PYTHON = sys.executable
SCRIPT = str(Path(sys.executable).parent / "tmuxlocd")
REPO = str(Path(__file__).resolve().parent.parent)


@dataclass(frozen=True)
class PaneRun:
    pane: str
    tty: str
    rc: int
    out: str
    err: str


class Rig:
    """A private tmux server in a private socket directory, plus paths for one daemon."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tlc-", dir="/tmp"))
        sockdir = self.root / f"tmux-{os.getuid()}"
        sockdir.mkdir(mode=0o700)
        self.tmux = TmuxServer(sockdir)
        self.daemon_socket = str(self.root / "d.sock")
        (self.root / "config").mkdir()

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of every process of a test: nothing can reach the user's tmux,
        the user's daemon or the user's config."""
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        env.update(
            TMUXLOCD_SOCKET=self.daemon_socket,
            TMUX_TMPDIR=str(self.root),
            XDG_CONFIG_HOME=str(self.root / "config"),
            PYTHONPATH=REPO,
        )
        env.update(extra)
        return env

    def start_tmux(self, **env: str) -> None:
        """Start the tmux server with this environment (panes and hook jobs inherit it)."""
        subprocess.run(
            self.tmux.argv(
                *before_new_session(), "new-session", "-d", "-s", "main", "-x", "160", "-y", "48"
            ),
            env=self.env(**env),
            check=True,
            timeout=20,
        )
        self.tmux.record_pid()
        self.tmux.run("set-option", "-g", "automatic-rename", "off")
        self.tmux.run("set-window-option", "-g", "automatic-rename", "off")
        self.tmux.run("set-option", "-g", "default-shell", "/bin/sh")

    def cleanup(self) -> None:
        self.tmux.kill()
        shutil.rmtree(self.root, ignore_errors=True)

    def run_in_pane(
        self, command: str, *, split: str | None = None, timeout: float = 20.0
    ) -> PaneRun:
        """Run a shell command in a new pane (a new window, or a split of ``split``) and wait
        for it to finish and for its pane to close."""
        tag = f"r{time.monotonic_ns()}"
        out, err, rc = (self.root / f"{tag}.{x}" for x in ("out", "err", "rc"))
        script = f"{command} >{out} 2>{err}; echo $? >{rc}.tmp; mv {rc}.tmp {rc}"
        how = ["split-window", "-d", "-t", split] if split else ["new-window", "-d"]
        pane, tty = self.tmux.run(*how, "-P", "-F", "#{pane_id} #{pane_tty}", script).split()
        poll(rc.exists, timeout, f"the command in pane {pane}")
        # The pane closes once its shell exits: wait for that, then let a running daemon
        # catch up (POST /v1/sync is a barrier), so the next test starts from a known layout.
        poll(
            lambda: pane not in self.tmux.run("list-panes", "-a", "-F", "#{pane_id}").split(),
            timeout,
            f"pane {pane} to close",
        )
        self.sync()
        return PaneRun(pane, tty, int(rc.read_text()), out.read_text(), err.read_text())

    def sync(self) -> None:
        try:
            raw_request(self.daemon_socket, "POST", "/v1/sync", 10.0)
        except (NoDaemon, OSError, ValueError):
            pass


class Daemon:
    """``python -m tmuxlocd serve`` as a subprocess; its log goes to a file."""

    def __init__(self, rig: Rig, *args: str, env: Mapping[str, str] | None = None) -> None:
        self.rig = rig
        self.socket = rig.daemon_socket
        self.log = rig.root / f"daemon-{time.monotonic_ns()}.log"
        argv = [
            PYTHON,
            "-m",
            "tmuxlocd",
            "serve",
            "-S",
            rig.tmux.socket_path,
            "--listen",
            f"unix:{rig.daemon_socket}",
            "--log-level",
            "debug",
            *args,
        ]
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                argv,
                env=dict(env) if env is not None else rig.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=REPO,
            )

    @classmethod
    def from_argv(
        cls,
        rig: Rig,
        argv: Sequence[str],
        *,
        socket: str,
        env: Mapping[str, str],
        pass_fds: Sequence[int] = (),
    ) -> Daemon:
        """A daemon started by an arbitrary command line, answering on ``socket``."""
        self = cls.__new__(cls)
        self.rig = rig
        self.socket = socket
        self.log = rig.root / f"daemon-{time.monotonic_ns()}.log"
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                list(argv),
                env=dict(env),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=REPO,
                pass_fds=tuple(pass_fds),
            )
        return self

    def healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the daemon exited ({self.proc.returncode}):\n{self.logs()}")
        try:
            resp = raw_request(self.socket, "GET", "/v1/health", 2.0)
        except (NoDaemon, OSError, ValueError):
            return False
        return resp is not None and resp.status == 200

    def wait_ready(self, timeout: float = 20.0) -> Daemon:
        poll(self.healthy, timeout, "the daemon to answer /v1/health")
        return self

    def logs(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def run_cli(
    rig: Rig, *args: str, env: Mapping[str, str] | None = None, timeout: float = 20.0
) -> subprocess.CompletedProcess[str]:
    """``python -m tmuxlocd ARGS`` from the test process, in a new session: no controlling
    tty, whatever terminal the test run has."""
    return subprocess.run(
        [PYTHON, "-m", "tmuxlocd", *args],
        check=False,
        env=dict(env) if env is not None else rig.env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        cwd=REPO,
    )


# ----------------------------------------------------------------------------------------------
# The one way tests get a rig and a daemon (the fixtures of tests/integration/conftest.py, and
# the module-scoped fixtures of the modules that share one across their tests).


@contextlib.contextmanager
def private_rig(*, start: bool = False, split: bool = False) -> Iterator[Rig]:
    """A private rig, cleaned up after: its server started if ``start`` (window ``main``),
    split into ``%0`` left and ``%1`` right if ``split``."""
    rig = Rig()
    try:
        if start or split:
            rig.start_tmux()
        if split:
            rig.tmux.run("split-window", "-h", "-t", "main")
        yield rig
    finally:
        rig.cleanup()


@contextlib.contextmanager
def running_daemon(rig: Rig) -> Iterator[Daemon]:
    """A daemon on ``rig``, answering; it must stop cleanly (exit 0) after."""
    d = Daemon(rig).wait_ready()
    try:
        yield d
    finally:
        assert d.stop() == 0, d.logs()


def start_in_pane(rig: Rig, pane: str, command: str) -> None:
    """Types ``command`` into the shell of ``pane`` and returns once tmux itself shows it in
    front.  A new pane's login shell may still be running its profile (``mesg``, say), which
    is busy too: a test that waits for busy must find *its* command there."""
    rig.tmux.run("send-keys", "-t", pane, command, "Enter")
    poll(
        lambda: rig.tmux.display(pane, "#{pane_current_command}") == command,
        20,
        f"{command} in front in {pane}",
    )
