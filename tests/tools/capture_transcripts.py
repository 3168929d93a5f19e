"""Capture real tmux control-mode transcripts for the protocol tests.

Each transcript is the raw stdout of one control client, attached the way the daemon attaches
(``tmux -u -C attach-session -E -t '$0' -f no-output,ignore-size,read-only``), while a script
of tmux operations runs.  Every server is private (``-L tmuxlocd-capture-<pid>-<n>``, started
with ``-f /dev/null``, panes running ``cat`` so that nothing depends on a shell or prompt) and
is killed at the end.

Run from the repository root:  python tests/tools/capture_transcripts.py [OUTDIR]
(default OUTDIR: tests/data/transcripts).  Times, command numbers and client names differ
from run to run; the tests only rely on the structure.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tmuxlocd.core.names import unvis  # noqa: E402
from tmuxlocd.core.protocol import (  # noqa: E402
    ControlParser,
    Event,
    Exit,
    ExtendedOutput,
    Output,
    Reply,
    SubscriptionChanged,
    Unknown,
    WindowRenamed,
    command,
)

TMUX = os.environ.get("TMUX_BIN", "tmux")
ENV = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
ENV["SHELL"] = "/bin/sh"
OBSERVER_FLAGS = "no-output,ignore-size,read-only"

# Names that exercise every escape tmux's vis encoding writes.  No '#': rename-window and
# rename-session format-expand the name they are given.
WINDOW_NAMES = [
    "tab\there",
    "nl\nhere",
    "cr\rbs\bbel\avt\vff\f",
    "esc\x1bx del\x7fx c1\x01",
    "back\\slash \\t not a tab",
    "$HOME ${x} $_y $1 $",
    "quotes 'sq' \"dq\" ; {} %p ~",
    "ü日本 CJK 中文",
    "trailing space ",
]
SESSION_NAMES = ["sess.with:colon tab\there", "s$HOME\\x"]


class Server:
    """A private tmux server; all its clients use the same -L name."""

    count = 0

    def __init__(self) -> None:
        Server.count += 1
        self.name = f"tmuxlocd-capture-{os.getpid()}-{Server.count}"
        self.socket_path = ""
        self.clients: list[subprocess.Popen[bytes]] = []

    def tmux(self, *args: str, check: bool = True) -> str:
        result = subprocess.run(
            [TMUX, "-u", "-L", self.name, "-f", "/dev/null", *args],
            capture_output=True,
            env=ENV,
            check=False,
        )
        if check and result.returncode != 0:
            raise RuntimeError(f"tmux {args}: {result.stderr!r}")
        return result.stdout.decode("utf-8", "replace")

    def start(self, *sessions: str) -> None:
        for name in sessions:
            self.tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", "cat")
        self.tmux("set-option", "-g", "default-command", "cat")
        self.socket_path = self.tmux("display-message", "-p", "#{socket_path}").strip()

    def kill(self) -> None:
        # A control client still connected (after a failed capture) would keep the dying
        # server waiting for it, so those go first.
        for proc in self.clients:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.tmux("kill-server", check=False)
        # tmux leaves its socket file behind.
        if self.socket_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)


class Recorder:
    """One control client whose stdout is kept byte for byte and parsed as it arrives."""

    def __init__(self, server: Server, target: str = "$0", flags: str = OBSERVER_FLAGS) -> None:
        argv = [TMUX, "-u", "-L", server.name, "-f", "/dev/null", "-C"]
        argv += ["attach-session", "-E", "-t", target]
        if flags:
            argv += ["-f", flags]
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV
        )
        server.clients.append(self.proc)
        self.raw = bytearray()
        self.parser = ControlParser()
        self.events: list[Event] = []
        self.eof = False
        self.expected_replies = 0
        # The attach-session from argv answers first, with a flags-0 block.
        self.pump(lambda: any(isinstance(e, Reply) for e in self.events))

    def pump(self, until: Callable[[], bool], timeout: float = 10.0) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while not until():
            if self.eof:
                raise RuntimeError("control client ended while waiting")
            ready, _, _ = select.select([self.proc.stdout], [], [], deadline - time.monotonic())
            if not ready:
                raise TimeoutError("tmux did not send what was expected")
            data = os.read(self.proc.stdout.fileno(), 1 << 16)
            self.raw += data
            self.parser.receive_data(data)
            self.events.extend(self.parser.events())
            self.eof = not data

    def replies(self) -> list[Reply]:
        return [e for e in self.events if isinstance(e, Reply) and e.flags == 1]

    def send(self, line: bytes, replies: int = 1) -> list[Reply]:
        """Write one raw input line; wait for the `replies` flags-1 blocks it produces."""
        assert self.proc.stdin is not None
        first = self.expected_replies
        self.expected_replies += replies
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        self.pump(lambda: len(self.replies()) >= self.expected_replies)
        return self.replies()[first : self.expected_replies]

    def run(self, *args: str) -> Reply:
        return self.send(command(*args))[0]

    def wait(self, predicate: Callable[[Event], bool], timeout: float = 10.0) -> None:
        self.pump(lambda: any(predicate(e) for e in self.events), timeout)

    def detach(self) -> None:
        """EOF on stdin detaches; tmux answers %exit and the client ends."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.pump(lambda: self.eof)
        self.proc.wait(5)

    def save(self, path: Path) -> None:
        path.write_bytes(bytes(self.raw))
        print(f"{path.name}: {len(self.raw)} bytes, {len(self.events)} events")


def capture_startup(out: Path) -> None:
    """Attach, query, fail, several commands on one line, detach."""
    server = Server()
    try:
        server.start("A", "B")
        rec = Recorder(server)
        rec.run("split-window", "-t", "A:0")
        rec.run(
            "list-panes", "-a", "-F", "P\t#{session_id}\t#{window_id}\t#{pane_id}\t#{pane_index}"
        )
        rec.run("list-windows", "-a", "-F", "W\t#{session_id}\t#{window_id}\t#{window_layout}")
        rec.run("list-panes", "-a", "-F", "#{pane_id}")  # content lines that start with %
        rec.run("list-sessions", "-F", "#{session_id} #{session_name}")
        rec.send(b"bogus-command\n")  # parse error
        rec.run("kill-pane", "-t", "%9999")  # command error
        rec.send(b"display-message -p one ; display-message -p two\n", replies=2)
        # Content that looks like guards (through an option: display-message would strftime
        # a literal "%e" or "%b").
        for guard in ["%end 1 2 1", "%begin 1 2 1", "%error 1 2 1"]:
            rec.run("set-option", "-g", "@guard", guard)
            rec.run("display-message", "-p", "#{@guard}")
        rec.detach()
        assert isinstance(rec.events[-1], Exit)
        rec.save(out / "startup.bin")
    finally:
        server.kill()


def capture_notifications(out: Path) -> None:
    """Location changes in the attached session A and in session B, and other clients."""
    server = Server()
    try:
        server.start("A", "B")
        rec = Recorder(server)
        for op in [
            ("split-window", "-t", "A:0"),
            ("split-window", "-t", "B:0"),
            ("split-window", "-d", "-h", "-t", "A:0"),
            ("select-pane", "-t", "A:0.0"),
            ("select-pane", "-t", "B:0.0"),
            ("resize-pane", "-t", "A:0.0", "-D", "2"),
            ("resize-pane", "-Z", "-t", "A:0.0"),
            ("resize-pane", "-Z", "-t", "A:0.0"),
            ("rename-window", "-t", "A:0", "alpha"),
            ("rename-window", "-t", "B:0", "beta"),
            ("new-window", "-t", "A:"),
            ("new-window", "-t", "B:"),
            ("select-window", "-t", "B:0"),
            ("select-window", "-t", "A:0"),
            ("break-pane", "-d", "-s", "A:0.1"),
            ("join-pane", "-s", "A:2.0", "-t", "A:0"),
            ("swap-pane", "-s", "A:0.0", "-t", "A:0.1"),
            ("move-window", "-s", "B:1", "-t", "A:5"),
            ("swap-window", "-s", "A:0", "-t", "A:1"),
            ("link-window", "-s", "A:5", "-t", "B:7"),
            ("unlink-window", "-t", "B:7"),
            ("kill-pane", "-t", "A:1.1"),
            ("kill-window", "-t", "A:5"),
            ("copy-mode", "-t", "A:0.0"),
            ("send-keys", "-X", "-t", "A:0.0", "cancel"),
            ("new-session", "-d", "-s", "C"),
            ("rename-session", "-t", "C", "C2"),
            ("kill-session", "-t", "C2"),
        ]:
            reply = rec.run(*op)
            assert reply.ok, (op, reply)
        # Another control client: it switches session, then detaches.
        other = subprocess.Popen(
            [TMUX, "-u", "-L", server.name, "-C", "attach-session", "-t", "B", "-f", "no-output"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=ENV,
        )
        server.clients.append(other)
        assert other.stdin is not None
        other.stdin.write(b"switch-client -t A\n")
        other.stdin.flush()
        rec.wait(lambda e: type(e).__name__ == "ClientSessionChanged")
        other.stdin.write(b"\n")  # an empty line detaches
        other.stdin.flush()
        rec.wait(lambda e: type(e).__name__ == "ClientDetached")
        other.wait(5)
        rec.detach()
        rec.save(out / "notifications.bin")
    finally:
        server.kill()


def capture_output(out: Path) -> None:
    """%output (no no-output flag), then %extended-output, %pause and %continue."""
    server = Server()
    try:
        server.start("A")
        rec = Recorder(server, flags="ignore-size,read-only")
        printf = r"printf 'a\\b\tc \303\251 \377\033[1m end\r\n'; exec cat"
        pane = rec.run("split-window", "-P", "-F", "#{pane_id}", "-t", "A:0", printf).lines[0]
        rec.wait(lambda e: isinstance(e, Output) and e.pane_id == pane and b"end" in e.data)
        rec.run("refresh-client", "-f", "pause-after=5")
        pane2 = rec.run("split-window", "-P", "-F", "#{pane_id}", "-t", "A:0", printf).lines[0]
        rec.wait(
            lambda e: isinstance(e, ExtendedOutput) and e.pane_id == pane2 and b"end" in e.data
        )
        # tmux 3.3a writes %pause / %continue from inside the refresh-client block, so they
        # arrive as content lines of its reply, not as notifications.
        paused = rec.run("refresh-client", "-A", f"{pane2}:pause")
        assert paused.lines == (f"%pause {pane2}",), paused
        rec.run("refresh-client", "-A", f"{pane2}:continue")
        rec.detach()
        rec.save(out / "output.bin")
    finally:
        server.kill()


def capture_hooks(out: Path) -> None:
    """A flags-0 block from an after-* hook, and a bare line from a notification hook."""
    server = Server()
    try:
        server.start("A")
        server.tmux("set-hook", "-g", "after-list-windows", "display-message -p HOOKOUT")
        server.tmux("set-hook", "-g", "window-renamed", "display-message -p BARE-LINE")
        rec = Recorder(server)
        rec.run("list-windows", "-F", "#{window_id}")
        rec.wait(lambda e: isinstance(e, Reply) and e.flags == 0 and e.lines == ("HOOKOUT",))
        rec.run("rename-window", "-t", "A:0", "renamed")
        rec.wait(lambda e: isinstance(e, Unknown) and e.line == b"BARE-LINE")
        rec.detach()
        rec.save(out / "hooks.bin")
    finally:
        server.kill()


def capture_subscriptions(out: Path) -> None:
    """%subscription-changed for session, all-panes and all-windows subscriptions."""
    server = Server()
    try:
        server.start("A")
        rec = Recorder(server)
        rec.run("split-window", "-t", "A:0")
        rec.run("refresh-client", "-B", "sess::#{session_name} : #{session_windows}")
        rec.run("refresh-client", "-B", "panes:%*:#{pane_id} #{pane_index}")
        rec.run("refresh-client", "-B", "wins:@*:#{window_id}")
        names = {"sess", "panes", "wins"}
        # tmux checks subscriptions once a second, so this takes about a second.
        rec.pump(
            lambda: names <= {e.name for e in rec.events if isinstance(e, SubscriptionChanged)},
            timeout=5.0,
        )
        rec.detach()
        rec.save(out / "subscriptions.bin")
    finally:
        server.kill()


def capture_kill_server(out: Path) -> None:
    """%exit when the server is killed under the client."""
    server = Server()
    try:
        server.start("A", "B")
        rec = Recorder(server)
        rec.run("display-message", "-p", "#{session_id}")
        server.tmux("kill-server")
        rec.pump(lambda: rec.eof)
        rec.proc.wait(5)
        assert isinstance(rec.events[-1], Exit)
        rec.save(out / "kill_server.bin")
    finally:
        server.kill()


def capture_names(out: Path) -> None:
    """Hostile window and session names, as notifications and as list-* rows."""
    server = Server()
    try:
        server.start("A", "B")
        rec = Recorder(server)
        # Renamed from argv, which is not parsed as a command line, so names may hold LF.
        for name in WINDOW_NAMES:
            server.tmux("rename-window", "-t", "A:0", name)

            def renamed(event: Event, name: str = name) -> bool:
                return isinstance(event, WindowRenamed) and unvis(event.name) == name

            rec.wait(renamed)
        server.tmux("rename-window", "-t", "B:0", WINDOW_NAMES[0])
        for name in SESSION_NAMES:
            server.tmux("rename-session", "-t", "$1", name)
        rec.run("list-windows", "-a", "-F", "#{window_id}\t#{window_name}")
        rec.run("list-sessions", "-F", "#{session_id}\t#{session_name}")
        rec.detach()
        rec.save(out / "names.bin")
        (out / "names.expected.json").write_text(
            json.dumps(
                {"window_names": WINDOW_NAMES, "session_names": SESSION_NAMES},
                ensure_ascii=True,
                indent=1,
            )
            + "\n"
        )
    finally:
        server.kill()


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "tests" / "data" / "transcripts"
    out.mkdir(parents=True, exist_ok=True)
    for capture in [
        capture_startup,
        capture_notifications,
        capture_output,
        capture_hooks,
        capture_subscriptions,
        capture_kill_server,
        capture_names,
    ]:
        capture(out)


if __name__ == "__main__":
    main()
