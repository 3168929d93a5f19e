"""Names as a real tmux stores and prints them, against the model of its encoder in
``tests/unit/test_names.py`` (moved from the unit tests: these start tmux)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from tests.tmuxbin import refuses_name, stored_session_name
from tests.unit.test_names import HOSTILE_NAMES, as_printed, decoded, tmux_vis


@pytest.fixture(scope="module")
def tmux_server() -> Iterator[tuple[str, str, bool, str]]:
    """(tmux binary, private server name, whether it stores names with the $ rule (3.4 and
    older), its version)."""
    tmux = shutil.which("tmux")
    if tmux is None:
        pytest.skip("no tmux binary")
    version = subprocess.run([tmux, "-V"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"(\d+)\.(\d+)", version)
    dollar_rule = match is not None and (int(match[1]), int(match[2])) < (3, 5)
    server = f"tmuxlocd-names-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    socket_path = b""
    try:
        socket_path = run_tmux(
            tmux, server, "new-session", "-d", "-s", "A", "-P", "-F", "#{socket_path}", "cat"
        ).strip()
        yield tmux, server, dollar_rule, version
    finally:
        subprocess.run([tmux, "-L", server, "kill-server"], capture_output=True, check=False)
        # tmux leaves its socket file behind; a stale one would look like a server that is down.
        if socket_path:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(socket_path)


def run_tmux(tmux: str, server: str, *args: str) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    # Arguments are passed as argv, which tmux does not parse as a command line; only an
    # argument ending in ';' would be special, and no name here ends in one.
    argv = [os.fsencode(a) for a in (tmux, "-u", "-L", server, "-f", "/dev/null", *args)]
    result = subprocess.run(argv, capture_output=True, env=env, check=True)
    return result.stdout


def refused(tmux: str, server: str, what: str, *args: str) -> bool:
    """Run a rename that ``refuses_name`` says this tmux refuses: True when tmux refused it
    with its own error (so the model of which names a version takes is checked too)."""
    try:
        run_tmux(tmux, server, *args)
    except subprocess.CalledProcessError as exc:
        stderr: bytes = exc.stderr
        return stderr.startswith(f"invalid {what} name: ".encode())
    return False


@pytest.mark.integration
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=lambda s: repr(s)[:30])
def test_window_name_round_trip(tmux_server: tuple[str, str, bool, str], name: str) -> None:
    tmux, server, dollar_rule, version = tmux_server
    if refuses_name(name, tmux):  # 3.7+: control characters and bad UTF-8 never reach a name
        assert refused(tmux, server, "window", "rename-window", "-t", "A:0", name)
        return
    run_tmux(tmux, server, "rename-window", "-t", "A:0", name)
    stored = run_tmux(tmux, server, "display-message", "-p", "-t", "A:0", "#{window_name}")
    assert stored.endswith(b"\n")
    text = stored[:-1].decode("utf-8")
    raw = os.fsencode(name)
    assert text == as_printed(tmux_vis(raw, dollar_rule=dollar_rule), version)
    assert decoded(text, version) == raw.decode("utf-8", "replace")


@pytest.mark.integration
@pytest.mark.parametrize("name", [*HOSTILE_NAMES[:6], "s.with:colon and $x"])
def test_session_name_round_trip(tmux_server: tuple[str, str, bool, str], name: str) -> None:
    tmux, server, dollar_rule, version = tmux_server
    if refuses_name(name, tmux):
        assert refused(tmux, server, "session", "rename-session", "-t", "$0", name)
        return
    run_tmux(tmux, server, "rename-session", "-t", "$0", name)
    stored = run_tmux(tmux, server, "display-message", "-p", "-t", "$0", "#{session_name}")
    text = stored[:-1].decode("utf-8")
    expected = stored_session_name(name, tmux)
    assert text == as_printed(tmux_vis(expected.encode(), dollar_rule=dollar_rule), version)
    assert decoded(text, version) == expected
