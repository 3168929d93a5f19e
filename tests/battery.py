"""What scripts and agent tools run from outside tmux, run on a private server with and without
the daemon attached, and the outcome of each (exit status, output, what tmux shows after).

``tests/integration/test_script_battery.py`` compares the two on the tmux under test;
``python -m tests.battery`` prints the table of ``docs/reliability.md`` for it.

Every command runs as a script would: a tmux client from outside tmux (no ``TMUX`` or
``TMUX_PANE``), on the private socket.  Two scenarios: nobody else attached (a headless
server, an agent orchestrator's), and a terminal client attached after the daemon (a person at
the keyboard: the most recently active client).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from tests.daemontest import Daemon, Rig
from tests.tmuxtest import poll

SHELL = "env PS1='$ ' /bin/sh"  # a prompt that reads the same on every run
CLIENT_FORMATS = (
    "#{client_name}|#{client_tty}|#{client_termname}|#{client_width}x#{client_height}"
    "|#{client_session}|#{client_control_mode}|#{client_readonly}"
)


@dataclass(frozen=True)
class Outcome:
    rc: int
    out: str
    err: str
    shown: str = ""  # what tmux showed after it (a line the step looks for, a format)

    def brief(self) -> str:
        text = self.shown or self.out.strip() or self.err.strip()
        return f"{self.rc}: {', '.join(text.splitlines())}"[:60]


class Server:
    """A private tmux server laid out the same for every run: session ``work`` (window 0:
    ``%0`` left, ``%1`` right) and a later session ``other``."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig

    def run(self, *args: str) -> Outcome:
        done = subprocess.run(
            self.rig.tmux.argv(*args),
            capture_output=True,
            text=True,
            env=self.rig.env(),
            timeout=20,
            check=False,
        )
        # A terminal's pty number is the machine's, not tmux's answer: the same on both runs.
        out, err = (re.sub(r"/dev/pts/\d+", "/dev/pts/N", t) for t in (done.stdout, done.stderr))
        return Outcome(done.returncode, out, err)

    def display(self, target: str, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", target, fmt).out.rstrip("\n")

    def lines(self, target: str) -> list[str]:
        return self.run("capture-pane", "-p", "-t", target).out.splitlines()

    def shown_in(self, line: str, *targets: str) -> str:
        """The panes of ``targets`` that show ``line`` as a line of its own, once one does
        (5 s at most), comma-separated; ``not shown`` when none did."""
        deadline = time.monotonic() + 5.0
        while True:
            where = [t for t in targets if line in self.lines(t)]
            if where or time.monotonic() >= deadline:
                return ",".join(where) or "not shown"
            time.sleep(0.02)  # polling tmux for a condition with a deadline

    def shows(self, target: str, line: str) -> str:
        """``line`` once the pane shows it as a line of its own within 5 s, else ``not shown``."""
        return line if self.shown_in(line, target) == target else "not shown"


Step = Callable[[Server], Outcome]


def _send_keys(srv: Server) -> Outcome:
    done = srv.run("send-keys", "-t", "work:0.0", "echo sent-$((6*7))", "Enter")
    return Outcome(done.rc, done.out, done.err, srv.shows("work:0.0", "sent-42"))


def _send_keys_literal(srv: Server) -> Outcome:
    done = srv.run("send-keys", "-l", "-t", "work:0.0", "echo literal-$((5*5))")
    srv.run("send-keys", "-t", "work:0.0", "Enter")
    return Outcome(done.rc, done.out, done.err, srv.shows("work:0.0", "literal-25"))


def _paste_buffer(srv: Server) -> Outcome:
    srv.run("set-buffer", "echo pasted-$((2*21))")
    done = srv.run("paste-buffer", "-p", "-t", "work:0.0")
    enter = srv.run("send-keys", "-t", "work:0.0", "Enter")
    shown = srv.shows("work:0.0", "pasted-42")
    return Outcome(done.rc + enter.rc, done.out, done.err + enter.err, shown)


def _then_show(args: tuple[str, ...], target: str, fmt: str) -> Step:
    """Run ``args``; what tmux says of ``target`` after it (``fmt``) is the outcome's."""

    def step(srv: Server) -> Outcome:
        done = srv.run(*args)
        return Outcome(done.rc, done.out, done.err, srv.display(target, fmt))

    return step


def _send_keys_untargeted(srv: Server) -> Outcome:
    done = srv.run("send-keys", "echo untargeted-$((3*3))", "Enter")
    where = srv.shown_in("untargeted-9", "work:0.0", "work:0.1", "other:0.0")
    return Outcome(done.rc, done.out, done.err, where)


def _format(*args: str) -> Step:
    return lambda srv: srv.run("display-message", "-p", *args)


def _new_window(srv: Server) -> Outcome:
    return srv.run("new-window", "-d", "-P", "-F", "#{session_name}:#{window_index}", SHELL)


def _split_window(srv: Server) -> Outcome:
    return srv.run(
        "split-window", "-d", "-P", "-F", "#{session_name}:#{window_index}.#{pane_index}", SHELL
    )


def _capture_pane(srv: Server) -> Outcome:
    return srv.run("capture-pane", "-p", "-t", "work:0.1", "-S", "0", "-E", "0")


def _display_message(srv: Server) -> Outcome:
    return srv.run("display-message", "a message for the status line")


def _list_clients(srv: Server) -> Outcome:
    return srv.run("list-clients", "-F", "#{client_control_mode}")


# What differs with the daemon attached, per scenario, and nothing else (docs/side-effects.md's
# side-effects section says why): with nobody else attached the daemon's control client is the
# most recently active client, which formats of a client read; and it is listed.
DIFFERS = {
    "alone": {"#{client_*} (no -t)", "#{client_*} -t", "list-clients"},
    "with a client": {"list-clients"},
}
STEPS: list[tuple[str, Step]] = [
    ("send-keys", _send_keys),
    ("send-keys -l", _send_keys_literal),
    ("paste-buffer -p, send-keys Enter", _paste_buffer),
    ("copy-mode", _then_show(("copy-mode", "-t", "work:0.1"), "work:0.1", "#{pane_in_mode}")),
    (
        "send-keys -X cancel",
        _then_show(("send-keys", "-X", "-t", "work:0.1", "cancel"), "work:0.1", "#{pane_in_mode}"),
    ),
    ("send-keys (no -t)", _send_keys_untargeted),
    ("display-message -p (no -t)", _format("#{session_name}:#{window_index}.#{pane_index}")),
    ("display-message -p -t", _format("-t", "work:0.1", "#{session_name} #{pane_index}")),
    ("#{client_*} (no -t)", _format(CLIENT_FORMATS)),
    ("#{client_*} -t", _format("-t", "work:0.0", CLIENT_FORMATS)),
    ("display-message (no -p)", _display_message),
    ("new-window (no -t)", _new_window),
    ("split-window (no -t)", _split_window),
    ("select-pane", _then_show(("select-pane", "-t", "work:0.1"), "work:0", "#{pane_index}")),
    (
        "resize-pane",
        _then_show(("resize-pane", "-t", "work:0.0", "-x", "50"), "work:0.0", "#{pane_width}"),
    ),
    ("capture-pane", _capture_pane),
    ("session_attached", _format("-t", "work", "#{session_attached}")),
    ("list-clients", _list_clients),
]
SCENARIOS = ("alone", "with a client")


@contextlib.contextmanager
def terminal_client(rig: Rig) -> Iterator[subprocess.Popen[bytes]]:
    """A terminal client attached to ``work`` (``script`` gives it a pty), as a person's."""
    tmux = " ".join(rig.tmux.argv("attach-session", "-t", "work"))
    proc = subprocess.Popen(
        ["script", "-qfec", tmux, "/dev/null"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**rig.env(), "TERM": "xterm"},
    )
    try:
        poll(lambda: "0" in clients(rig), 20, "the terminal client")
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def prompted(srv: Server, target: str) -> Callable[[], bool]:
    return lambda: "$" in "".join(srv.lines(target))


def clients(rig: Rig) -> list[str]:
    return Server(rig).run("list-clients", "-F", "#{client_control_mode}").out.split()


def run_battery(scenario: str, with_daemon: bool) -> dict[str, Outcome]:
    """Every step's outcome on a fresh private server, in order."""
    rig = Rig()
    srv = Server(rig)
    try:
        for args in (
            ("new-session", "-d", "-s", "work", "-x", "120", "-y", "40", SHELL),
            ("split-window", "-h", "-t", "work:0", SHELL),
            ("new-session", "-d", "-s", "other", "-x", "120", "-y", "40", SHELL),
        ):
            done = srv.run(*args)
            assert done.rc == 0, done
        rig.tmux.record_pid()
        for target in ("work:0.0", "work:0.1", "other:0.0"):
            poll(prompted(srv, target), 20, f"the prompt in {target}")
        with contextlib.ExitStack() as stack:
            if with_daemon:
                daemon = Daemon(rig).wait_ready()
                stack.callback(daemon.stop)
                poll(lambda: "1" in clients(rig), 20, "the daemon's control client")
            if scenario == "with a client":
                stack.enter_context(terminal_client(rig))
            return {name: step(srv) for name, step in STEPS}
    finally:
        rig.cleanup()


def battery(scenario: str) -> tuple[dict[str, Outcome], dict[str, Outcome]]:
    """(without the daemon, with it) for one scenario."""
    return run_battery(scenario, False), run_battery(scenario, True)


def main() -> None:
    tmux = shutil.which("tmux") or "tmux"
    done = subprocess.run([tmux, "-V"], capture_output=True, text=True, check=False)
    version = done.stdout.strip()
    print(f"{version}\n")
    print("| command | scenario | without the daemon | with it | same |")
    print("|---|---|---|---|---|")
    for scenario in SCENARIOS:
        without, with_ = battery(scenario)
        for name, _ in STEPS:
            a, b = without[name], with_[name]
            same = "yes" if a == b else "**no**"
            cells = (name, scenario, a.brief(), b.brief(), same)
            print("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    sys.stdout.flush()


if __name__ == "__main__":
    os.environ.pop("TMUX", None)
    main()
