"""Every tmux client the package starts can never start a server, and every one the daemon
starts ends with the daemon (SPEC §1).

Read from the source with ``ast``: each process the package spawns must take its command
line from ``invoke.client_argv`` (directly, or through ``waiter_argv``/``query_argv``, which
are checked to begin with it), and each the daemon spawns must run it through
``lifeline.tied``.  A new spawn that does neither fails here, not in a user's socket
directory.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tmuxlocd.core import oneshot, spelling
from tmuxlocd.core.attach import channel, waiter_argv
from tmuxlocd.core.invoke import NO_START, client_argv

PACKAGE = Path(__file__).resolve().parents[2] / "tmuxlocd"
# Spawning anywhere; and the subprocess module's helpers, whose names are common words.
SPAWNERS = {"create_subprocess_exec", "create_subprocess_shell", "Popen", "posix_spawn"}
SUBPROCESS_HELPERS = {"run", "call", "check_call", "check_output"}
# Spawns that run no tmux, and why.
NOT_TMUX = {
    "host/lifeline.py": "runs `setpriv --pdeathsig KILL -- true` once, to know it",
    "daemon/alert_channels.py": "runs gdbus and the user's alert command, never tmux",
    "host/system.py": "the portable host runs lsof, never tmux",
    "clients/doctor_host.py": "runs a child python that connects to a socket, never tmux",
}
# Functions that build a whole command line on client_argv (checked below).
BUILDERS = {"client_argv", "waiter_argv", "query_argv"}


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def spawns() -> list[tuple[str, int, ast.Call]]:
    """Every call of a process-spawning function in the package (file, line, call)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            owner = node.func.value if isinstance(node.func, ast.Attribute) else None
            helper = (
                isinstance(owner, ast.Name)
                and owner.id == "subprocess"
                and _name(node.func) in SUBPROCESS_HELPERS
            )
            if not helper and _name(node.func) not in SPAWNERS:
                continue
            if str(path.relative_to(PACKAGE)) not in NOT_TMUX:
                found.append((str(path.relative_to(PACKAGE)), node.lineno, node))
    return found


def _unstar(node: ast.expr) -> ast.expr:
    return node.value if isinstance(node, ast.Starred) else node


def tied(call: ast.Call) -> bool:
    first = _unstar(call.args[0]) if call.args else None
    return isinstance(first, ast.Call) and _name(first) == "tied"


def first_argument_builder(call: ast.Call) -> str | None:
    """What the command line starts with: the builder called (through ``tied``, and the
    first item of a list literal)."""
    first = _unstar(call.args[0]) if call.args else None
    while True:
        if isinstance(first, ast.Call) and _name(first) == "tied" and first.args:
            first = _unstar(first.args[0])
        elif isinstance(first, ast.List) and first.elts:
            first = _unstar(first.elts[0])
        else:
            break
    return _name(first) if isinstance(first, ast.Call) else None


def test_the_package_spawns_tmux_only_through_client_argv() -> None:
    found = spawns()
    assert found, "the scan found no spawn at all: it is broken"
    wrong = [f"{p}:{n}" for p, n, call in found if first_argument_builder(call) not in BUILDERS]
    assert wrong == [], f"a process started without invoke.client_argv: {wrong}"


def test_the_daemon_ties_every_client_to_its_life() -> None:
    daemon = [(p, line, call) for p, line, call in spawns() if p.startswith("daemon/")]
    assert daemon
    untied = [f"{path}:{line}" for path, line, call in daemon if not tied(call)]
    assert untied == [], f"a tmux client of the daemon that would outlive it: {untied}"


def test_the_builders_begin_with_client_argv() -> None:
    head = client_argv("tmux", "/s", "-u")
    assert head == ["tmux", NO_START, "-u", "-S", "/s"]
    assert oneshot.query_argv("tmux", "/s")[: len(head)] == head
    assert waiter_argv("tmux", "/s", spelling.PLAIN, channel(1), "c")[: len(head)] == head
