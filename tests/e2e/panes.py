"""A rig for running a real harness in a pane: a private tmux server (``tests.daemontest.Rig``:
its own socket directory, ``-f /dev/null``), a real daemon on a private socket, a throwaway
HOME holding the harness's configuration as ``tmuxlocd install <harness>`` wrote it, and ways
to run the harness in a pane (or in no pane at all) and wait for it to exit.

Hook timings: after the install, each hook command in the harness's configuration is
wrapped in ``hookclock.py``, which runs the command unchanged (same stdin, same stdout, a
child of the harness as before, on the same tty) and appends one JSON line per run to
``hooks.jsonl``: the event, the wall time of the hook and the bytes it printed.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.daemontest import Daemon, Rig
from tests.tmuxtest import TMUX, poll
from tmuxlocd.clients.rawhttp import raw_request

TMUXLOCD = str(Path(sys.executable).parent / "tmuxlocd")  # the project's CLI in the venv
HOOKCLOCK = Path(__file__).resolve().parent / "hookclock.py"


def _ci_mark(name: str) -> bool:
    """A variable by which a program tells it runs under CI (ink's is-in-ci, among others)."""
    return name in ("CI", "CONTINUOUS_INTEGRATION") or name.startswith("CI_")


@dataclass(frozen=True)
class Run:
    rc: int
    out: str
    err: str
    started: float  # time.monotonic() when it was started
    took: float  # seconds until its exit was seen


@dataclass(frozen=True)
class HookRun:
    event: str
    session: str
    ms: float
    out_bytes: int
    out: str


class HarnessRig:
    """One test's world.  ``env()`` is the environment of everything started in it."""

    def __init__(self) -> None:
        self.rig = Rig()
        self.root = self.rig.root
        self.home = self.root / "home"
        self.work = self.home / "proj"
        self.work.mkdir(parents=True)
        self.hook_log = self.root / "hooks.jsonl"
        self.debug_log = self.root / "context.log"
        self.daemon: Daemon | None = None
        # What a harness left running beyond its own exit, ended first at cleanup.
        self.cleanups: list[Callable[[], None]] = []
        self.rig.start_tmux(**self._env_base())
        self.first_pane = self.rig.tmux.display("main", "#{pane_id}")

    def _env_base(self) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "TMUXLOCD_CONTEXT_LOG": str(self.debug_log),
            # Run state and caches inside the throwaway HOME, never the user's.
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_RUNTIME_DIR": str(self.root / "run"),
        }

    def env(self, **extra: str) -> dict[str, str]:
        (self.root / "run").mkdir(mode=0o700, exist_ok=True)
        return self.rig.env(**self._env_base(), **extra)

    # -- daemon -----------------------------------------------------------------------------

    def start_daemon(self, *args: str, path_first: str | None = None) -> Daemon:
        """The daemon, with ``tmuxlocd serve`` arguments; ``path_first``: a directory put
        first on its PATH (a recording program for a channel of its alerts)."""
        assert self.daemon is None
        env = self.env()
        if path_first is not None:
            env["PATH"] = f"{path_first}:{env.get('PATH', os.defpath)}"
        self.daemon = Daemon(self.rig, *args, env=env).wait_ready()
        return self.daemon

    def stop_daemon(self) -> None:
        if self.daemon is not None:
            rc = self.daemon.stop()
            logs = self.daemon.logs()
            self.daemon = None
            assert rc == 0, logs

    def agents(self) -> list[dict[str, Any]]:
        """``GET /v1/agents`` on this rig's daemon: every agent it keeps (SPEC §13)."""
        resp = raw_request(self.rig.daemon_socket, "GET", "/v1/agents", 5.0)
        assert resp is not None and resp.status == 200, resp and resp.body
        found: list[dict[str, Any]] = json.loads(resp.body)["agents"]
        return found

    def state_within(self, want: str, timeout: float = 10.0) -> tuple[str, float]:
        """Poll until the daemon keeps one agent and it is ``want``, or ``timeout`` passed:
        the state last seen (``"<n> agents"`` when not one) and the seconds it took.  For a
        stub's answer, which must not raise (a failed assertion there would only turn the
        model's answer into an error): the test asserts on what it returns."""
        start = time.monotonic()
        state = ""
        while time.monotonic() - start < timeout:
            found = self.agents()
            state = found[0]["state"] if len(found) == 1 else f"{len(found)} agents"
            if state == want:
                break
            time.sleep(0.01)  # the next poll of the condition, not a wait for it
        return state, time.monotonic() - start

    def kill_agent_process(self, pid: int) -> tuple[float, float]:
        """``kill -9`` an agent's harness process, then poll as fast as one request allows:
        the seconds until the kernel tells its end on a pidfd (as it tells the daemon) and
        until the daemon lists no agent.  The first is the kernel's tearing down of a large
        process: its main thread is a zombie long before its last thread is gone on a busy
        machine; the difference is the daemon's."""
        fd = os.pidfd_open(pid)
        try:
            start = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            ended: float | None = None
            while True:
                now = time.monotonic() - start
                if ended is None and select.select([fd], [], [], 0)[0]:
                    ended = now
                if not self.agents():
                    return (now if ended is None else ended), now
                assert now < 10, f"still listed: {self.agents()}"
        finally:
            os.close(fd)

    def cleanup(self) -> None:
        try:
            for step in self.cleanups:
                step()
        finally:
            try:
                self.stop_daemon()
            finally:
                self.rig.cleanup()

    # -- install ----------------------------------------------------------------------------

    def tmuxlocd(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        """The project's CLI, as a user would run it, with this rig's HOME."""
        return subprocess.run(
            [TMUXLOCD, *args],
            env=self.env(),
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            start_new_session=True,
        )

    def install(self, harness: str, *config_files: Path) -> list[str]:
        """``tmuxlocd install <harness>`` in this HOME; then the hooks of ``config_files``
        (the files it wrote) are wrapped to be timed.  The ``next:`` steps it printed."""
        proc = self.tmuxlocd("install", harness)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for path in config_files:
            wrap_hooks(path, self.hook_log)
        return [line[6:] for line in proc.stdout.splitlines() if line.startswith("next: ")]

    # -- panes ------------------------------------------------------------------------------

    def split(self, pane: str, *how: str) -> str:
        """Split ``pane`` from outside (``-h`` side by side by default); the new pane's id."""
        return self.rig.tmux.run(
            "split-window", "-d", *(how or ("-h",)), "-t", pane, "-P", "-F", "#{pane_id}"
        ).strip()

    def panes(self) -> list[str]:
        return self.rig.tmux.run("list-panes", "-a", "-F", "#{pane_id}").split()

    def _script(
        self, argv: Sequence[str], env: Mapping[str, str], tag: str, interactive: bool = False
    ) -> Path:
        lines = ["cd " + shlex.quote(str(self.work))]
        # Not the CI runner's marks: Gemini CLI's TUI (ink's is-in-ci: CI, CONTINUOUS_INTEGRATION,
        # CI_*) runs otherwise in a CI mode no user has, where the prompt typed into it never
        # reached the model.  A pane's shell has them from the tmux server's environment.
        ci = sorted(k for k in (*env, *os.environ) if _ci_mark(k))
        if ci:
            lines.append("unset " + " ".join(dict.fromkeys(ci)))
        for k, v in sorted(env.items()):
            if k in ("TMUX", "TMUX_PANE") or not k.isidentifier() or _ci_mark(k):
                continue  # a pane's own, set by tmux; a CI runner's
            lines.append(f"export {k}={shlex.quote(v)}")
        out, err, rc = (self.root / f"{tag}.{x}" for x in ("out", "err", "rc"))
        cmd = " ".join(shlex.quote(a) for a in argv)
        if interactive:  # on the pane's tty, as a user runs it; stderr kept for a failure
            lines.append(f"{cmd} 2>{err}; s=$?; : >{out}; (exit $s)")
        else:
            lines.append(f"{cmd} </dev/null >{out} 2>{err}")
        lines.append(f"echo $? >{rc}.tmp; mv {rc}.tmp {rc}")
        script = self.root / f"{tag}.sh"
        script.write_text("\n".join(lines) + "\n")
        return script

    def start_in_pane(
        self,
        pane: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        *,
        interactive: bool = False,
    ) -> str:
        """Type ``sh <script>`` into ``pane``'s shell: the harness runs in the foreground of
        that pane, on its tty (``interactive``: stdin and stdout too, for a TUI driven with
        ``send_keys``).  Returns a tag for ``wait``."""
        tag = f"r{time.monotonic_ns()}"
        script = self._script(argv, env if env is not None else self.env(), tag, interactive)
        (self.root / f"{tag}.start").write_text(str(time.monotonic()))
        self.rig.tmux.run("send-keys", "-t", pane, f"sh {script}", "Enter")
        return tag

    def send_keys(self, pane: str, *keys: str) -> None:
        self.rig.tmux.run("send-keys", "-t", pane, *keys)

    def screen(self, pane: str) -> str:
        return self.rig.tmux.run("capture-pane", "-p", "-t", pane)

    def wait_screen(self, pane: str, text: str, timeout: float = 60.0) -> None:
        poll(lambda: text in self.screen(pane), timeout, f"{text!r} on {pane}", interval=0.1)

    def wait(self, tag: str, timeout: float = 180.0) -> Run:
        rc = self.root / f"{tag}.rc"
        poll(rc.exists, timeout, f"the harness run {tag} to exit", interval=0.05)
        started = float((self.root / f"{tag}.start").read_text())
        took = time.monotonic() - started
        return Run(
            int(rc.read_text()),
            (self.root / f"{tag}.out").read_text(errors="replace"),
            (self.root / f"{tag}.err").read_text(errors="replace"),
            started,
            took,
        )

    def run_in_pane(
        self,
        pane: str,
        argv: Sequence[str],
        env: Mapping[str, str] | None = None,
        timeout: float = 180.0,
    ) -> Run:
        return self.wait(self.start_in_pane(pane, argv, env), timeout)

    def run_outside(
        self, argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 180.0
    ) -> Run:
        """The harness in no pane: a new session (no controlling tty), stdin from /dev/null,
        no ``$TMUX``; the private server is still there to be found."""
        started = time.monotonic()
        proc = subprocess.run(
            list(argv),
            env=dict(env if env is not None else self.env()),
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
            start_new_session=True,
        )
        return Run(proc.returncode, proc.stdout, proc.stderr, started, time.monotonic() - started)

    def tmux_argv(self, *args: str) -> list[str]:
        """A tmux command line on this rig's private server (for a model's shell call)."""
        assert TMUX is not None
        return self.rig.tmux.argv(*args)

    # -- what the hooks did ---------------------------------------------------------------

    def hook_runs(self) -> list[HookRun]:
        try:
            lines = self.hook_log.read_text().splitlines()
        except FileNotFoundError:
            return []
        runs = []
        for line in lines:
            d = json.loads(line)
            runs.append(HookRun(d["event"], d["session"], d["ms"], d["out_bytes"], d["out"]))
        return runs

    def debug_lines(self) -> list[str]:
        try:
            return self.debug_log.read_text().splitlines()
        except FileNotFoundError:
            return []

    def diagnostics(self) -> str:
        """What to print when an assertion fails: the hooks' runs and the debug log."""
        runs = "\n".join(
            f"  {r.event} {r.ms:.0f} ms {r.out_bytes} B {r.out[:200]!r}" for r in self.hook_runs()
        )
        debug = "\n".join("  " + line for line in self.debug_lines())
        return f"hook runs:\n{runs or '  none'}\ncontext debug log:\n{debug or '  empty'}"


def process_ended(pid: int) -> bool:
    """Gone, or a zombie: it has exited (its parent may be gone too, or not reap it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] == b"Z"
    except OSError:
        return True


def wrap_hooks(path: Path, log: Path) -> None:
    """Prefix every command hook in the JSON configuration ``path`` (the ``hooks`` shape of
    Claude Code, Gemini CLI and Codex) with ``hookclock.py <log>``."""
    data = json.loads(path.read_text())
    prefix = [sys.executable, "-S", str(HOOKCLOCK), str(log)]
    for groups in data.get("hooks", {}).values():
        for group in groups:
            for hook in group.get("hooks", []):
                if hook.get("type") == "command" and "hookclock" not in hook["command"]:
                    hook["command"] = shlex.join(prefix) + " " + hook["command"]
    path.write_text(json.dumps(data, indent=2) + "\n")


PLUGIN_ARGV = "const ARGV = "


def wrap_plugin(path: Path, log: Path) -> None:
    """Prefix the hook command of a plugin ``tmuxlocd install`` wrote (opencode's, pi's,
    Cline's: the line ``const ARGV = [...];``) with ``hookclock.py <log>``."""
    prefix = [sys.executable, "-S", str(HOOKCLOCK), str(log)]
    lines = path.read_text().split("\n")
    for i, line in enumerate(lines):
        if line.startswith(PLUGIN_ARGV) and "hookclock" not in line:
            argv = json.loads(line[len(PLUGIN_ARGV) :].rstrip(";"))
            lines[i] = f"{PLUGIN_ARGV}{json.dumps([*prefix, *argv])};"
            break
    else:
        raise AssertionError(f"{path}: no hook command to time")
    path.write_text("\n".join(lines))


def report(record: Mapping[str, Any]) -> None:
    """Append one row to ``$TMUXLOCD_E2E_REPORT`` (rendered by ``tests/e2e/report.py``)."""
    path = os.environ.get("TMUXLOCD_E2E_REPORT")
    if not path:
        return
    with open(path, "a") as f:
        f.write(json.dumps(dict(record)) + "\n")
