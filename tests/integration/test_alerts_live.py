"""Alerts on agents, end to end (SPEC §14): a stand-in harness in a pane of a private tmux
server posts its hook events to a real daemon with alerts on; a recording ``gdbus`` on PATH
stands for the notification service (it appends its argv to a file, answers Notify with an
id, and ``gdbus monitor`` follows a file the test writes actions to).

Nothing waits on a sleep: each channel delivers in order, so once a wait's clear is
recorded, every alert before it has been delivered or never will be.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemontest import PYTHON, Daemon, Rig, private_rig, run_cli
from tests.integration.test_agents_live import Harness, agent_in, payload, permission
from tests.tmuxbin import version_of
from tests.tmuxtest import TMUX, TmuxServer, poll
from tmuxlocd.clients.rawhttp import raw_request

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(TMUX is None, reason="needs tmux"),
]

DELAY = 1.5  # longer than two hook runs (an approved permission), short for a test

GDBUS = """#!{python}
import json, os, sys
d = {dir!r}
args = sys.argv[1:]
with open(os.path.join(d, "gdbus.log"), "a") as f:
    f.write(json.dumps(args) + "\\n")
if args[0] == "monitor":
    os.execvp("tail", ["tail", "-n", "0", "-F", os.path.join(d, "actions")])
method = args[args.index("--method") + 1] if "--method" in args else ""
if method.endswith(".GetCapabilities"):
    print("(['actions', 'body'],)")
elif method.endswith(".Notify"):
    with open(os.path.join(d, "gdbus.log")) as f:
        print(f"(uint32 {{sum(1 for _ in f)}},)")
else:
    print("()")
"""


def recorder(rig: Rig) -> Path:
    """A directory holding the recording ``gdbus``, first on the daemon's PATH."""
    bin_dir = rig.root / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "gdbus"
    script.write_text(GDBUS.format(python=PYTHON, dir=str(bin_dir)))
    script.chmod(0o755)
    (bin_dir / "actions").touch()
    return bin_dir


def calls(bin_dir: Path) -> list[list[str]]:
    log = bin_dir / "gdbus.log"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def methods(bin_dir: Path) -> list[str]:
    out = []
    for argv in calls(bin_dir):
        if "--method" in argv:
            name = argv[argv.index("--method") + 1].rsplit(".", 1)[1]
            if name != "GetCapabilities":
                out.append(name)
    return out


def notified(bin_dir: Path) -> list[list[str]]:
    return [
        a
        for a in calls(bin_dir)
        if "--method" in a and a[a.index("--method") + 1].endswith(".Notify")
    ]


def health(rig: Rig) -> dict[str, Any]:
    resp = raw_request(rig.daemon_socket, "GET", "/v1/health", 5.0)
    assert resp is not None and resp.status == 200
    body: dict[str, Any] = json.loads(resp.body)
    return body


def channel(rig: Rig, name: str) -> dict[str, Any]:
    alerts = health(rig)["alerts"]
    assert alerts is not None
    found: dict[str, Any] = next(c for c in alerts["channels"] if c["name"] == name)
    return found


def daemon_env(rig: Rig, bin_dir: Path) -> dict[str, str]:
    return rig.env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    with private_rig(start=True) as rig:
        yield rig


@pytest.fixture(scope="module")
def bin_dir(rig: Rig) -> Path:
    return recorder(rig)


@pytest.fixture(scope="module")
def daemon(rig: Rig, bin_dir: Path) -> Iterator[Daemon]:
    record = rig.root / "command.log"
    command = f"sh -c 'echo \"$TMUXLOCD_ALERT $TMUXLOCD_PANE $TMUXLOCD_AGENT_REASON\" >>{record}'"
    d = Daemon(
        rig,
        "--alerts",
        "--alert-delay",
        str(DELAY),
        "--alert-channel",
        "desktop",
        "--alert-channel",
        "tmux",
        "--alert-command",
        command,
        env=daemon_env(rig, bin_dir),
    ).wait_ready()
    yield d
    assert d.stop() == 0, d.logs()


def window_alert(rig: Rig, pane: str) -> str:
    return rig.tmux.run("show-options", "-q", "-w", "-v", "-t", pane, "@tmuxlocd_alert").strip()


def test_one_alert_per_wait_none_for_a_short_one_cleared_when_it_ends(
    rig: Rig, daemon: Daemon, bin_dir: Path
) -> None:
    h = Harness(rig, "claude", "alert-once")
    h.event("SessionStart", source="startup")
    h.event("UserPromptSubmit", prompt="go")
    start = len(methods(bin_dir))

    # An approved permission (its tool's after-event at once): shorter than the delay.
    h.send(permission("claude", h.session))
    h.event("PostToolUse", tool_name="Bash")
    found = agent_in(rig, h.pane)
    assert found is not None and found["state"] == "working"

    # A wait that lasts: one alert, after the delay.
    asked = time.monotonic()
    h.send(permission("claude", h.session))
    poll(lambda: len(methods(bin_dir)) > start, 10, "the desktop notification")
    took = time.monotonic() - asked
    assert took >= DELAY
    (notify,) = notified(bin_dir)[-1:]
    assert "'claude is waiting'" in notify
    assert any("permission: Bash" in arg and h.pane in arg for arg in notify), notify
    assert "['default', 'Go to pane']" in notify  # the service has the actions capability
    poll(lambda: window_alert(rig, h.pane) == "claude is waiting", 10, "@tmuxlocd_alert")

    # The same dialog told again while it waits (Claude Code's permission_prompt): the
    # same wait, no other alert.
    h.send(payload("claude", "Notification", h.session, notification_type="permission_prompt"))
    h.event("PostToolUse", tool_name="Bash")  # approved: the wait ends, its alert cleared
    poll(lambda: methods(bin_dir)[-1:] == ["CloseNotification"], 10, "the clear")
    assert methods(bin_dir)[start:] == ["Notify", "CloseNotification"]
    notify_id = next(i + 1 for i, a in enumerate(calls(bin_dir)) if a == notify)
    assert calls(bin_dir)[-1][-1] == f"uint32 {notify_id}"  # the recorder's id: its line
    poll(lambda: window_alert(rig, h.pane) == "", 10, "@tmuxlocd_alert to go")
    record = rig.root / "command.log"
    poll(lambda: record.exists() and "clear" in record.read_text(), 10, "the command's clear")
    assert record.read_text().splitlines()[-2:] == [
        f"waiting {h.pane} permission: Bash",
        f"clear {h.pane} permission: Bash",
    ]

    # Waiting anew: a new alert.
    h.send(permission("claude", h.session))
    poll(
        lambda: methods(bin_dir)[start:] == ["Notify", "CloseNotification", "Notify"],
        10,
        "the second alert",
    )
    h.event("Stop")
    poll(lambda: methods(bin_dir)[-1:] == ["CloseNotification"], 10, "the second clear")
    assert methods(bin_dir)[start:] == ["Notify", "CloseNotification"] * 2
    desktop = channel(rig, "desktop")
    assert desktop["failed"] == 0 and desktop["sent"] >= 2
    assert health(rig)["alerts"]["standing"] == 0
    h.kill()


def test_alert_test_sends_one_through_each_channel(rig: Rig, daemon: Daemon, bin_dir: Path) -> None:
    done = run_cli(rig, "alert", "--test")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["desktop: sent", "tmux: sent", "command: sent"]
    notify = notified(bin_dir)[-1]
    assert "'tmuxlocd test alert'" in notify and "@as []" in notify  # no pane to go to
    status = run_cli(rig, "status")
    assert "  alerts: after 1.5 s waiting; 0 pending, 0 standing" in status.stdout


def test_alert_test_without_alerts_says_they_are_off(rig: Rig) -> None:
    other = Rig()
    try:
        other.start_tmux()
        d = Daemon(other).wait_ready()
        try:
            done = run_cli(other, "alert", "--test")
            assert done.returncode == 1 and "alerts are off" in done.stderr
            assert health(other)["alerts"] is None
        finally:
            assert d.stop() == 0
    finally:
        other.cleanup()


def test_a_failing_and_a_hanging_channel_are_reported_once_and_block_nothing() -> None:
    with private_rig(start=True) as rig:
        bin_dir = recorder(rig)
        marker = rig.root / "hung"
        # The command hangs past its deadline on the first alert, fails on the others.
        command = (
            f"sh -c 'if [ -e {marker} ]; then echo nope >&2; exit 3; fi; "
            f"echo $$ >{marker}; exec sleep 600'"
        )
        d = Daemon(
            rig,
            "--alerts",
            "--alert-delay",
            "0",
            "--alert-timeout",
            "1",
            "--alert-channel",
            "desktop",
            "--alert-command",
            command,
            env=daemon_env(rig, bin_dir),
        ).wait_ready()
        try:
            h = Harness(rig, "claude", "alert-fail")
            h.event("SessionStart", source="startup")
            h.send(permission("claude", h.session))
            poll(lambda: marker.exists() and marker.read_text().strip() != "", 10, "the command")
            # The command hangs; the daemon answers and the desktop channel delivered.
            poll(lambda: "Notify" in methods(bin_dir), 10, "the desktop notification")
            assert health(rig)["status"] == "ok"
            poll(lambda: channel(rig, "command")["failing"], 10, "the command's deadline")
            assert channel(rig, "command")["last_error"] == "no answer within 1 s"
            # Its process was killed with its group: no sleep left behind.
            pid = int(marker.read_text())
            assert not Path(f"/proc/{pid}").exists()
            h.event("PostToolUse", tool_name="Bash")  # the clear: the command fails (exit 3)
            poll(lambda: channel(rig, "command")["failed"] >= 2, 10, "the second failure")
            command_health = channel(rig, "command")
            assert command_health["last_error"].startswith("sh exited with status 3: nope")
            assert command_health["sent"] == 0
            assert channel(rig, "desktop")["failed"] == 0
            status = run_cli(rig, "status")
            assert "    command: 0 sent, 2 failed" in status.stdout, status.stdout
            assert "      error: sh exited with status 3: nope" in status.stdout
            h.kill()
        finally:
            assert d.stop() == 0, d.logs()
        logs = d.logs()
        assert logs.count("the command channel failed:") == 1, logs
        assert logs.count("the command channel failed again:") >= 1


def test_no_desktop_is_a_failure_said_once() -> None:
    """The real gdbus (where there is one) with no session bus: a failure, said once."""
    with private_rig(start=True) as rig:
        env = rig.env()
        for name in ("DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY"):
            env.pop(name, None)
        env["XDG_RUNTIME_DIR"] = str(rig.root)  # no bus socket there either
        args = ("--alerts", "--alert-delay", "0", "--alert-channel", "desktop")
        d = Daemon(rig, *args, env=env).wait_ready()
        try:
            done = run_cli(rig, "alert", "--test")
            assert done.returncode == 1
            assert done.stdout.startswith("desktop: failed: "), done.stdout
            assert "cannot run gdbus" in done.stdout or "gdbus exited with status" in done.stdout
            run_cli(rig, "alert", "--test")
            assert channel(rig, "desktop")["failed"] == 2
        finally:
            assert d.stop() == 0, d.logs()
        assert d.logs().count("the desktop channel failed:") == 1


# ----------------------------------------------------------------------------------------------
# An attached client: the terminal channel's OSC on its tty, the desktop action, the picker.


class Client:
    """``tmux attach`` on a pty this test reads (a terminal of its own)."""

    def __init__(self, rig: Rig, session: str = "main") -> None:
        self.master, slave = pty.openpty()
        os.set_blocking(self.master, True)
        import fcntl
        import struct
        import termios

        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        self.tty = os.ttyname(slave)
        env = rig.env(TERM="xterm-256color")
        self.proc = subprocess.Popen(
            rig.tmux.argv("attach-session", "-t", session),
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.data = bytearray()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        poll(
            lambda: self.tty in rig.tmux.run("list-clients", "-F", "#{client_tty}"),
            10,
            "the client to attach",
        )

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.data += chunk

    def seen(self) -> bytes:
        with self.lock:
            return bytes(self.data)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self.master)


def test_terminal_osc_and_tmux_message_reach_the_attached_client_and_the_action_switches() -> None:
    with private_rig(start=True) as rig:
        bin_dir = recorder(rig)
        client = Client(rig)
        d = Daemon(
            rig,
            "--alerts",
            "--alert-delay",
            "0",
            "--alert-channel",
            "terminal",
            "--alert-channel",
            "tmux",
            "--alert-channel",
            "desktop",
            env=daemon_env(rig, bin_dir),
        ).wait_ready()
        try:
            h = Harness(rig, "claude", "alert-terminal")  # a new window, not in front
            h.event("SessionStart", source="startup")
            h.send(permission("claude", h.session))
            osc = f"\x1b]9;claude is waiting: permission: Bash, in main:1.0 ({h.pane})\x07".encode()
            poll(lambda: osc in client.seen(), 10, "the OSC 9 on the client's terminal")
            if version_of(TMUX) < (3, 3):
                # 3.2a's display-message takes no client (its -c is a flag): the channel's
                # message fails there, and says so.
                poll(lambda: channel(rig, "tmux")["failing"], 10, "the tmux channel to fail")
                assert "refused display-message" in channel(rig, "tmux")["last_error"]
                return
            poll(
                lambda: b"claude is waiting: permission: Bash" in client.seen().replace(osc, b""),
                10,
                "the message",
            )
            assert client.seen().count(osc) == 1
            # The notification's action: the client goes to the agent's pane.
            poll(lambda: "Notify" in methods(bin_dir), 10, "the notification")
            poll(lambda: any(a[0] == "monitor" for a in calls(bin_dir)), 10, "gdbus monitor")
            # The recorder's id: its log's line count once the Notify was written.
            notify_at = next(
                i
                for i, a in enumerate(calls(bin_dir))
                if "--method" in a and a[a.index("--method") + 1].endswith(".Notify")
            )
            number = notify_at + 1
            assert rig.tmux.display(h.pane, "#{pane_active}#{window_active}") == "10"
            with open(bin_dir / "actions", "a") as f:
                f.write(
                    "/org/freedesktop/Notifications: org.freedesktop.Notifications."
                    f"ActionInvoked (uint32 {number}, 'default')\n"
                )
            poll(
                lambda: (
                    rig.tmux.run("display-message", "-p", "-c", client.tty, "#{pane_id}").strip()
                    == h.pane
                ),
                10,
                "the client to show the agent's pane",
            )
            h.kill()
        finally:
            assert d.stop() == 0, d.logs()
            client.close()


@pytest.mark.skipif(
    version_of(TMUX) < (3, 3), reason="3.2a's popup, driven this way, is not yet understood"
)
def test_the_picker_in_a_popup_goes_to_the_pane_picked() -> None:
    with private_rig(start=True) as rig:
        d = Daemon(rig).wait_ready()
        outer = TmuxServer()
        try:
            one = Harness(rig, "claude", "pick-one")
            one.event("SessionStart", source="startup")
            two = Harness(rig, "codex", "pick-two")
            two.event("SessionStart", source="startup")
            two.send(permission("codex", two.session))
            # A client of the rig's server inside a pane of another private server, whose
            # capture-pane shows what the client shows, popups included.
            env = " ".join(
                f"{k}={v}"
                for k, v in rig.env().items()
                if k.startswith("TMUXLOCD") or k == "PYTHONPATH"
            )
            attach = " ".join(rig.tmux.argv("attach-session", "-t", "main"))
            outer.run(
                "new-session",
                "-d",
                "-s",
                "o",
                "-x",
                "120",
                "-y",
                "30",
                f"env -u TMUX {env} {attach}",
            )
            poll(
                lambda: rig.tmux.run("list-clients", "-F", "#{client_tty}").strip() != "",
                10,
                "the client",
            )
            tty = rig.tmux.run("list-clients", "-F", "#{client_tty}").strip()
            # display-popup returns when the popup closes.
            popup = subprocess.Popen(
                rig.tmux.argv(
                    "display-popup", "-c", tty, "-E", "-w", "100", "-h", "12",
                    f"{PYTHON} -m tmuxlocd agents --pick",
                ),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip

            def screen() -> str:
                return outer.run("capture-pane", "-p", "-t", "o")

            poll(lambda: "to go there" in screen() and "waiting" in screen(), 10, "the picker")
            shown = screen()
            lines = [ln for ln in shown.splitlines() if one.pane in ln or two.pane in ln]
            assert len(lines) == 2, shown
            assert "codex" in lines[0] and "waiting" in lines[0] and "permission: Bash" in lines[0]
            assert "claude" in lines[1] and "idle" in lines[1]
            (Path(rig.root) / "picker.txt").write_text(shown)
            print(shown)
            outer.run("send-keys", "-t", "o", "j")
            outer.run("send-keys", "-t", "o", "Enter")
            poll(
                lambda: (
                    rig.tmux.run("display-message", "-p", "-c", tty, "#{pane_id}").strip()
                    == one.pane
                ),
                10,
                "the client to show the picked pane",
            )
            poll(lambda: "to go there" not in screen(), 10, "the popup to close")
            assert popup.wait(10) == 0
        finally:
            outer.kill()
            assert d.stop() == 0, d.logs()
