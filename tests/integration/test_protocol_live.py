"""command() against a real tmux: the quoting of every hostile text, read back through a control
client on a private server (moved from the unit tests: these start tmux)."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import select
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmuxlocd.core.protocol import (
    ControlParser,
    Reply,
    command,
)

HOSTILE = [
    "",
    " ",
    "  leading",
    "trailing  ",
    "'",
    "''",
    "a'b",
    "'\\''",
    '"',
    '"\'"',
    "\\",
    "\\'",
    "\\\\",
    "\\n \\t \\033 \\u00e9 \\e",
    "#",
    "#{session_name}",
    "# comment",
    "a #b",
    ";",
    "a;b",
    "a ; b",
    "\\;",
    ";;",
    "{",
    "}",
    "{ display-message x }",
    "%if 1",
    "%endif",
    "%hidden X=1",
    "%0:pause",
    "%",
    "%%",
    "%1",
    "~",
    "~root",
    "a'~b",
    "$HOME",
    "${HOME}",
    "'$HOME'",
    "$",
    "X=1",
    "-x",
    "\t",
    "a\tb",
    "\tTAB\tseparated\t",
    "\x01\x02\x0b\x0c\x1b[1m\x1f\x7f",
    "ü日本 中文 🙂",
    "x" * 10000,
]


def _tmux() -> str:
    path = shutil.which("tmux")
    if path is None:
        pytest.skip("no tmux binary")
    return path


class _Observer:
    """A control client on a private server, attached as the daemon attaches."""

    def __init__(self, tmux: str, server: str) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        self.proc = subprocess.Popen(
            [
                tmux,
                "-u",
                "-L",
                server,
                "-f",
                "/dev/null",
                "-C",
                "attach-session",
                "-E",
                "-t",
                "$0",
                "-f",
                "no-output,ignore-size,read-only",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.parser = ControlParser()
        self.ours: list[Reply] = []
        self.sent = 0
        self.attached = False
        self._pump(lambda: self.attached)  # the flags-0 reply to attach-session

    def _pump(self, until: Callable[[], bool], timeout: float = 10.0) -> None:
        assert self.proc.stdout is not None
        deadline = time.monotonic() + timeout
        while not until():
            ready, _, _ = select.select([self.proc.stdout], [], [], deadline - time.monotonic())
            assert ready, "tmux did not answer in time"
            data = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert data, "control client ended"
            self.parser.receive_data(data)
            for event in self.parser.events():
                if isinstance(event, Reply):
                    if event.flags == 1:
                        self.ours.append(event)
                    else:
                        self.attached = True

    def send(self, line: bytes, replies: int = 1) -> list[Reply]:
        assert self.proc.stdin is not None
        first = self.sent
        self.sent += replies
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        self._pump(lambda: len(self.ours) >= self.sent)
        return self.ours[first : self.sent]

    def run(self, *args: str) -> Reply:
        return self.send(command(*args))[0]

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # EOF detaches; tmux answers %exit and the client ends
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def observer() -> Iterator[_Observer]:
    tmux = _tmux()
    server = f"tmuxlocd-proto-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    client = None
    socket_path = ""
    try:
        new_session = ["new-session", "-d", "-s", "A", "-P", "-F", "#{socket_path}", "cat"]
        socket_path = subprocess.run(
            [tmux, "-L", server, "-f", "/dev/null", *new_session],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        client = _Observer(tmux, server)
        yield client
    finally:
        if client is not None:
            client.close()
        subprocess.run(
            [tmux, "-L", server, "kill-server"], env=env, capture_output=True, check=False
        )
        # tmux leaves its socket file behind; a stale one would look like a server that is down.
        if socket_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(socket_path)


def echo(observer: _Observer, text: str) -> Reply:
    """tmux's parse of `text`, as an option value read back through a format.

    A user option is stored as given, and `#{@opt}` substitutes it without expanding it again
    (display-message's strftime only applies to the template), so what comes back is exactly
    what the parser produced, as tmux prints it (``printed``).
    """
    observer.run("set-option", "-g", "@tmuxlocd_echo", text)
    return observer.run("display-message", "-p", "#{@tmuxlocd_echo}")


@functools.cache
def _tmux_version() -> tuple[int, int]:
    out = subprocess.run([_tmux(), "-V"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"(\d+)\.(\d+)", out)
    return (int(match[1]), int(match[2])) if match else (0, 0)


_OUTPUT_CSTYLE = {"\a": "\\a", "\b": "\\b", "\v": "\\v", "\f": "\\f", "\r": "\\r"}


def printed(text: str, version: tuple[int, int]) -> str:
    """``text`` as a command's output line.  3.3 writes it as it is; 3.4 and 3.5 pass it
    through utf8_strvis(VIS_OCTAL | VIS_CSTYLE | VIS_NOSLASH) (``server_client_print``):
    valid UTF-8, printable ASCII, space, TAB, LF and backslash stay; the other control
    characters become C-style or octal escapes; and 3.4 (not 3.5, where the rule needs
    VIS_DQ) writes ``\\$`` before a letter, ``_`` or ``{``.  3.6 writes it as it is again
    (``cmdq_print`` asks ``server_client_print`` for no vis pass: ``parse`` is 1)."""
    if version < (3, 4) or version >= (3, 6):
        return text
    out: list[str] = []
    for i, ch in enumerate(text):
        after = text[i + 1 : i + 2]
        if (
            ch == "$"
            and version == (3, 4)
            and after
            and ((after.isascii() and after.isalpha()) or after in "_{")
        ):
            out.append("\\$")
        elif ch in "\t\n" or " " <= ch < "\x7f" or ch >= "\x80":
            out.append(ch)
        else:
            out.append(_OUTPUT_CSTYLE.get(ch) or f"\\{ord(ch):03o}")
    return "".join(out)


@pytest.mark.integration
@pytest.mark.parametrize("text", HOSTILE, ids=lambda s: repr(s)[:30])
def test_command_quoting_against_tmux(observer: _Observer, text: str) -> None:
    reply = echo(observer, text)
    assert reply.ok and reply.lines == (printed(text, _tmux_version()),)


@pytest.mark.integration
@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_characters="\n\r\0"), max_size=40))
def test_command_quoting_any_text(observer: _Observer, text: str) -> None:
    reply = echo(observer, text)
    assert reply.ok and reply.lines == (printed(text, _tmux_version()),)


@pytest.mark.integration
def test_command_keeps_tabs_in_formats(observer: _Observer) -> None:
    reply = observer.run("list-windows", "-a", "-F", "W\t#{session_id}\t#{window_id}")
    assert reply.ok and reply.lines == ("W\t$0\t@0",)


@pytest.mark.integration
def test_command_is_one_command_per_line(observer: _Observer) -> None:
    # The unquoted line really is two commands (two replies); quoted, ';' is just text.
    assert [
        r.lines for r in observer.send(b"display-message -p a ; display-message -p b\n", 2)
    ] == [("a",), ("b",)]
    assert observer.run("display-message", "-p", "a ; display-message -p b").lines == (
        "a ; display-message -p b",
    )
    assert observer.run("display-message", "-p", "x", ";", "display-message", "-p", "y").ok is False
    assert observer.run("display-message", "-p", "still in step").lines == ("still in step",)


@pytest.mark.integration
def test_command_name_is_quoted_too(observer: _Observer) -> None:
    assert observer.run("display-message", "-p", "ok").lines == ("ok",)
    bad = observer.run("no-such-command")
    assert not bad.ok and bad.lines == ("parse error: unknown command: no-such-command",)
