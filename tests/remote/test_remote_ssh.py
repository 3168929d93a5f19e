"""Remote agents: the daemon's socket forwarded with ``ssh -R`` from a pane to a real sshd,
and a remote process asking it where it is (docs/remote.md).

The daemon's peer on a forwarded connection is the local ``ssh`` that accepted it, so the
remote process is told the pane that ``ssh`` has for its controlling tty: its own pane for a
plain session, nothing for an ssh with no tty (``setsid``, a ``ControlPersist`` master), and
never another pane, including under connection sharing, where every forwarded connection of
every session comes from the one master process (SPEC §2: ``shared_ssh_master``).

The "remote" host is this one (the sshd listens on 127.0.0.1), so the remote sockets and the
answers the remote commands write are files the test reads directly.  Each session's ssh is
typed into a pane's shell; an interactive one runs ``sh`` on the remote side, which reads the
lines typed into the pane after it.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemontest import SCRIPT, Daemon, Rig
from tests.remote import report
from tests.remote.sshd import Sshd, alive, end, master_pid
from tests.tmuxtest import poll
from tmuxlocd.host.system import HOST

TIMEOUT = 20.0


class Remote:
    """One test's panes, ssh sessions and remote sockets."""

    def __init__(self, rig: Rig, server: Sshd) -> None:
        self.rig = rig
        self.server = server
        # sshd does not make a socket's directory: the remote side makes it first (mkdtemp:
        # 0700).  A short name: a ControlPath (cm-%C, 43 bytes) in it must fit a socket
        # address (108 bytes).
        self.dir = Path(tempfile.mkdtemp(prefix="r", dir=rig.root))
        self.windows: list[str] = []
        self.masters: list[str] = []  # ControlPaths to end with ssh -O exit
        self.pids: list[int] = []  # remote processes started in the background

    # Panes.

    def window(self) -> str:
        """A new window's pane (its shell is /bin/sh)."""
        out = self.rig.tmux.run("new-window", "-d", "-P", "-F", "#{pane_id} #{window_id}")
        pane, window = out.split()
        self.windows.append(window)
        self.wait(lambda: self.command(pane) == "sh", f"the shell of {pane}", pane)
        return pane

    def split(self, pane: str) -> str:
        new = self.rig.tmux.run("split-window", "-d", "-t", pane, "-P", "-F", "#{pane_id}")
        new = new.strip()
        self.wait(lambda: self.command(new) == "sh", f"the shell of {new}", new)
        return new

    def command(self, pane: str) -> str:
        return self.rig.tmux.display(pane, "#{pane_current_command}")

    def type(self, pane: str, line: str) -> None:
        self.rig.tmux.run("send-keys", "-t", pane, "-l", line)
        self.rig.tmux.run("send-keys", "-t", pane, "Enter")

    def wait(
        self, predicate: Callable[[], bool], what: str, *panes: str, interval: float = 0.01
    ) -> None:
        """``poll``, and on a timeout what the panes show and what sshd logged."""
        try:
            poll(predicate, TIMEOUT, what, interval=interval)
        except AssertionError as exc:
            screens = "".join(
                f"\n--- pane {p}:\n" + self.rig.tmux.run("capture-pane", "-p", "-t", p, check=False)
                for p in panes
            )
            raise AssertionError(f"{exc}{screens}\n--- sshd:\n{self.server.logs()}") from None

    # Sessions.

    def ssh_line(self, *options: str, remote: str = "sh") -> str:
        return shlex.join([*self.server.ssh(*options), remote])

    def forward(self, name: str) -> tuple[Path, list[str]]:
        """A remote socket path and the -R that forwards it to the daemon."""
        sock = self.dir / f"{name}.sock"
        return sock, ["-R", f"{sock}:{self.rig.daemon_socket}"]

    def open(self, pane: str, name: str, *options: str) -> Path:
        """An interactive session in ``pane`` forwarding a remote socket; its path once the
        remote sshd listens on it."""
        sock, fwd = self.forward(name)
        self.type(pane, self.ssh_line(*options, *fwd))
        self.wait(sock.exists, f"remote socket {sock.name} (ssh in {pane})", pane)
        return sock

    def close(self, pane: str) -> None:
        """End the remote shell of ``pane``'s session, and wait for its ssh to exit."""
        self.type(pane, "exit")
        self.wait(lambda: self.command(pane) != "ssh", f"ssh in {pane} to exit", pane)

    def where(self, sock: Path, out: Path) -> str:
        """The remote command: ``tmuxlocd where --json`` through ``sock`` into ``out``.
        TMUX_TMPDIR names the test's socket directory: were the daemon not to answer, the
        fallback would look there, never at the user's tmux."""
        return (
            f"TMUXLOCD_SOCKET={sock} TMUX_TMPDIR={self.rig.root} {SCRIPT} where --json "
            f">{out}.tmp 2>{out}.err; mv {out}.tmp {out}"
        )

    def answer(self, out: Path, *panes: str) -> dict[str, Any]:
        self.wait(out.exists, f"the remote answer {out.name}", *panes)
        # Nothing on stderr: the daemon answered (no note of the no-daemon fallback, whose
        # answer to a remote process with no tty is also "no_controlling_tty").
        assert Path(f"{out}.err").read_text() == ""
        answer: dict[str, Any] = json.loads(out.read_text())
        return answer

    def ask(self, pane: str, sock: Path, name: str) -> dict[str, Any]:
        """Type the remote ``where`` into ``pane``'s remote shell; its answer."""
        out = self.dir / f"{name}.json"
        self.type(pane, self.where(sock, out))
        return self.answer(out, pane)

    def end_master(self, control_path: str) -> None:
        """``ssh -O exit`` on a master, and wait for its process to go."""
        argv = self.server.ssh("-o", f"ControlPath={control_path}")
        check = subprocess.run(
            [*argv[:-1], "-O", "check", argv[-1]],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        pid = master_pid(check.stderr + check.stdout)
        subprocess.run(
            [*argv[:-1], "-O", "exit", argv[-1]], capture_output=True, timeout=TIMEOUT, check=False
        )
        if pid is not None:
            poll(lambda: not alive(pid), TIMEOUT, f"ssh master {pid} to exit")

    def cleanup(self) -> None:
        end(self.pids)
        for path in self.masters:
            self.end_master(path)
        for window in self.windows:
            self.rig.tmux.run("kill-window", "-t", window, check=False)
        self.rig.sync()


@pytest.fixture
def remote(rig: Rig, server: Sshd, daemon: Daemon) -> Iterator[Remote]:
    r = Remote(rig, server)
    try:
        yield r
    finally:
        r.cleanup()


def told(answer: dict[str, Any]) -> str:
    location = answer.get("location")
    if location is not None:
        return f"pane {location['pane']['id']} ({answer['verified_by']})"
    return f"nothing ({answer['reason']})"


def pane_of(answer: dict[str, Any]) -> str | None:
    location = answer.get("location")
    return None if location is None else str(location["pane"]["id"])


def assert_in_pane(answer: dict[str, Any], pane: str, rig: Rig) -> None:
    if HOST.name != "linux":
        # The portable host cannot tell an ssh from a connection master (no view of its
        # listening sockets): every forwarded request is answered nothing, never a pane.
        assert_nothing(answer)
        assert answer["reason"] == "shared_ssh_master", answer
        return
    assert pane_of(answer) == pane, answer
    assert answer["inside_tmux"] is True and answer["verified_by"] == "tty", answer
    # The proof: the forwarding ssh's controlling tty is the pane's.
    assert answer["caller"]["tty"] == rig.tmux.display(pane, "#{pane_tty}"), answer


def assert_nothing(answer: dict[str, Any]) -> None:
    assert answer["inside_tmux"] is False, answer
    assert answer["location"] is None and answer["verified_by"] is None, answer


# ----------------------------------------------------------------------------------------------
# Two sessions at once, each told its own pane.


def test_two_sessions_each_told_its_own_pane(remote: Remote, rig: Rig) -> None:
    a = remote.window()
    b = remote.split(a)  # the same window: only the tty tells them apart
    sock_a = remote.open(a, "a")
    sock_b = remote.open(b, "b")
    # Both sessions are up while each is asked.
    answer_a = remote.ask(a, sock_a, "a")
    answer_b = remote.ask(b, sock_b, "b")
    answer_a_again = remote.ask(a, sock_a, "a2")
    for session, pane, answer in (("A", a, answer_a), ("B", b, answer_b), ("A", a, answer_a_again)):
        report.record(report.Row("two sessions", f"{session} in {pane}", "ssh -R", told(answer)))
    assert_in_pane(answer_a, a, rig)
    assert_in_pane(answer_b, b, rig)
    assert_in_pane(answer_a_again, a, rig)
    remote.close(a)
    remote.close(b)


# ----------------------------------------------------------------------------------------------
# A split in the session's window reaches a remote `tmuxlocd watch`.


@pytest.mark.linux_host("a remote watch of its own pane needs its ssh placed by its tty")
def test_split_reaches_a_remote_watch(remote: Remote, rig: Rig) -> None:
    a = remote.window()
    sock = remote.open(a, "w")
    out, pidfile = remote.dir / "watch.out", remote.dir / "watch.pid"
    remote.type(
        a,
        f"TMUXLOCD_SOCKET={sock} {SCRIPT} watch --pane self >{out} 2>{out}.err & "
        f"echo $! >{pidfile}.tmp; mv {pidfile}.tmp {pidfile}",
    )
    remote.wait(pidfile.exists, "the remote watch's pid", a)
    remote.pids.append(int(pidfile.read_text()))

    def lines() -> list[str]:
        return out.read_text().splitlines() if out.exists() else []

    # Subscribed: its snapshot (of this one pane, the ssh's) has arrived.
    remote.wait(lambda: any(" snapshot 1 pane" in x for x in lines()), "the watch's snapshot", a)
    start = time.monotonic()
    rig.tmux.run("split-window", "-d", "-t", a)
    remote.wait(
        lambda: any(f" changed {a} " in x for x in lines()),
        f"the remote watch to see {a} change",
        a,
        interval=0.001,
    )
    took_ms = (time.monotonic() - start) * 1000
    assert Path(f"{out}.err").read_text() == ""
    report.record(
        report.Row(
            "split",
            f"A in {a}",
            "ssh -R; remote `tmuxlocd watch --pane self`",
            f"changed {a}",
            f"split-window to the remote line: {took_ms:.1f} ms",
        )
    )
    end(remote.pids)
    remote.pids.clear()
    remote.close(a)


# ----------------------------------------------------------------------------------------------
# An ssh with no controlling tty: told nothing.


def test_setsid_ssh_is_told_nothing(remote: Remote) -> None:
    c = remote.window()
    sock, fwd = remote.forward("c")
    out = remote.dir / "c.json"
    remote.type(c, "setsid " + remote.ssh_line("-n", *fwd, remote=remote.where(sock, out)))
    answer = remote.answer(out, c)
    report.record(report.Row("no tty", f"C in {c}", "setsid ssh -n -R", told(answer)))
    assert_nothing(answer)
    # The portable host takes any ssh for a possible master before its tty is looked at.
    want = "no_controlling_tty" if HOST.name == "linux" else "shared_ssh_master"
    assert answer["reason"] == want, answer


# ----------------------------------------------------------------------------------------------
# Connection sharing: every session's forwarded connections come from the master.


def test_shared_master_never_tells_another_pane(remote: Remote, rig: Rig) -> None:
    a, b, c, d = (remote.window() for _ in range(4))
    control = f"{remote.dir}/cm-%C"
    remote.masters.append(control)
    sessions = [
        # A's ssh is the master; B's finds it and becomes its client: B's -R is opened by the
        # master, and so are the connections to B's remote socket.
        ("A", a, "ssh -o ControlMaster=yes -R", ("-o", "ControlMaster=yes")),
        ("B", b, "ssh -o ControlMaster=auto -R (A's master)", ("-o", "ControlMaster=auto")),
        # ControlMaster=no only keeps an ssh from becoming a master: with the ControlPath of a
        # running one (a ControlPath in ~/.ssh/config, say) it is that master's client too.
        ("C", c, "ssh -o ControlMaster=no -R (A's master)", ("-o", "ControlMaster=no")),
    ]
    answers = {}
    for name, pane, _, options in sessions:
        sock = remote.open(pane, name, *options, "-o", f"ControlPath={control}")
        answers[name] = remote.ask(pane, sock, name)
    # Sharing off: a connection of its own, beside the running master.
    sock_d = remote.open(d, "D", "-o", "ControlMaster=auto", "-o", "ControlPath=none")
    answer_d = remote.ask(d, sock_d, "D")
    for name, pane, started, _ in sessions:
        report.record(
            report.Row("ControlMaster", f"{name} in {pane}", started, told(answers[name]))
        )
    report.record(
        report.Row("ControlMaster", f"D in {d}", "ssh -o ControlPath=none -R", told(answer_d))
    )
    # The must-never first: a session told another session's pane.
    for name, pane, _, _ in sessions:
        assert pane_of(answers[name]) in (pane, None), (
            f"the session in {pane} was told {pane_of(answers[name])}, not its own pane or "
            f"nothing: {answers[name]}"
        )
    assert_in_pane(answer_d, d, rig)
    # The contract (SPEC §2): a master serves several sessions, so none of them is told a
    # pane, and the answer says how to have one.
    for answer in answers.values():
        assert_nothing(answer)
        assert answer["reason"] == "shared_ssh_master", answer
        assert isinstance(answer["hint"], str) and answer["hint"], answer
    for pane in (d, c, b, a):
        remote.close(pane)


# ----------------------------------------------------------------------------------------------
# ControlPersist: the master detaches, with no tty.


def test_control_persist_master_tells_nothing(remote: Remote) -> None:
    e = remote.window()
    f = remote.window()
    control = f"{remote.dir}/cp-%C"
    remote.masters.append(control)
    sharing = (
        "-o",
        "ControlMaster=auto",
        "-o",
        "ControlPersist=yes",
        "-o",
        f"ControlPath={control}",
    )
    sock_e = remote.open(e, "pe", *sharing)
    sock_f = remote.open(f, "pf", *sharing)
    answer_e = remote.ask(e, sock_e, "pe")
    answer_f = remote.ask(f, sock_f, "pf")
    report.record(
        report.Row("ControlPersist", f"E in {e}", "ssh -o ControlPersist=yes -R", told(answer_e))
    )
    report.record(
        report.Row("ControlPersist", f"F in {f}", "the same, E's master reused", told(answer_f))
    )
    for answer in (answer_e, answer_f):
        assert_nothing(answer)
        # The detached master has no tty; it serves sessions too: either reason is nothing.
        assert answer["reason"] in ("no_controlling_tty", "shared_ssh_master"), answer
    remote.close(f)
    remote.close(e)


# ----------------------------------------------------------------------------------------------
# `ssh -t` to this host, the daemon's socket used directly: the chain of processes goes through
# sshd, not the pane, so there is no ancestor pane either (docs/troubleshooting.md).


def test_ssh_t_to_the_same_host_has_no_ancestor_pane(remote: Remote, rig: Rig) -> None:
    p = remote.window()
    out = remote.dir / "t.json"
    remote.type(p, remote.ssh_line("-t", remote=remote.where(Path(rig.daemon_socket), out)))
    answer = remote.answer(out, p)
    report.record(
        report.Row("ssh -t, no -R", f"T in {p}", "ssh -t, socket used directly", told(answer))
    )
    assert_nothing(answer)
    assert answer["reason"] == "tty_not_a_pane", answer
    assert answer["caller"]["tty"] is not None, answer  # sshd's pty, in no pane
    assert answer["caller"]["ancestor_pane"] is None, answer
