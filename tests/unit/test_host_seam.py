"""The seam between the hosts: Linux's names live in Linux's leaves only.

``/proc``, ``/dev/pts``, pidfds, ``SO_PEERCRED``, epoll and netlink are named only in
``tmuxlocd/host/linux*.py`` (the ``linux`` host, and the portable host's reads on Linux) and in
the pure parsers of Linux's formats that those leaves hand their bytes to.  Anywhere else such a
name would be code that macOS's portable host never replaces: a silent failure there.

Read with ``ast``, as the import rule is: string constants (docstrings and other lone strings
left out: they explain, they do not run) and attribute or imported names.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "tmuxlocd"

LINUX_STRINGS = ("/proc", "/dev/pts")
LINUX_NAMES = frozenset(
    {"pidfd_open", "pidfd_send_signal", "SO_PEERCRED", "epoll", "AF_NETLINK", "SOCK_CLOEXEC"}
)
# The leaves, and the pure parsers of Linux's formats (bytes in, facts out: they read
# nothing themselves).
ALLOWED = frozenset(
    {
        "host/linux.py",
        "host/linux_shared.py",
        "core/procstat.py",  # the stat line
        "core/caller.py",  # its changing fields, the /dev/pts form of a tty number
    }
)


def linux_names(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    explaining = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in explaining:
                continue
            for word in LINUX_STRINGS:
                if word in node.value:
                    found.append(f"{path.name}:{node.lineno}: {node.value!r}")
        elif isinstance(node, ast.Attribute) and node.attr in LINUX_NAMES:
            found.append(f"{path.name}:{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.alias) and node.name in LINUX_NAMES:
            found.append(f"{path.name}:{node.lineno}: import {node.name}")
    return found


def test_linux_names_only_in_linux_leaves() -> None:
    bad: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel in ALLOWED:
            continue
        found = linux_names(path)
        if found:
            bad[rel] = found
    assert bad == {}, "Linux's names outside tmuxlocd/host/linux*.py (use tmuxlocd.host.system)"


def test_the_rule_sees_what_it_forbids(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text(
        '"""/proc in a docstring is fine."""\n'
        "import os\n"
        "from socket import SO_PEERCRED\n"
        "def f(pid: int) -> int:\n"
        '    """and /dev/pts here too"""\n'
        "    os.pidfd_open(pid)\n"
        '    return len(f"/proc/{pid}/stat")\n'
    )
    assert [x.split(": ", 1)[1] for x in linux_names(sample)] == [
        "import SO_PEERCRED",
        ".pidfd_open",
        "'/proc/'",
    ]
