"""The remote tests: tmuxlocd's socket forwarded over ``ssh -R`` to a real sshd the tests
start on 127.0.0.1 (``tests/remote/sshd.py``).

Every test here is marked ``ssh``.  They run in the default ``pytest`` run, against the first
tmux (what sshd does is the same whichever tmux runs the panes, so the per-version runs of
``-m integration`` leave them out), and are skipped, saying why, only when OpenSSH's server or
client is not installed.  The table of what each remote session was told is printed at the
end of the run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemontest import Daemon, Rig, private_rig, running_daemon
from tests.remote import report, sshd

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    why = sshd.missing()
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.ssh)
            if why is not None:
                item.add_marker(pytest.mark.skip(reason=why))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if report.ROWS:
        terminalreporter.section("remote sessions over ssh -R: what each was told")
        terminalreporter.write_line(report.render(report.ROWS))


@pytest.fixture(scope="module")
def server() -> Iterator[sshd.Sshd]:
    with sshd.running_sshd() as s:
        yield s


@pytest.fixture(scope="module")
def rig(server: sshd.Sshd) -> Iterator[Rig]:
    """A private tmux server (started) and its daemon's paths, shared by a module's tests;
    after the sshd, so that it goes first (its panes' ssh clients with it)."""
    with private_rig(start=True) as r:
        yield r


@pytest.fixture(scope="module")
def daemon(rig: Rig) -> Iterator[Daemon]:
    with running_daemon(rig) as d:
        yield d
