"""The core's import rule: the sans-I/O modules never import I/O or the shell.

The core (parsing, the model, Locations, events, the journal, the mirror, queries, stream
decisions, spelling, the harness rule, errors) is pure: it takes bytes and states and gives
back states, events and bytes.  So none of its modules may import asyncio, aiohttp, socket or
subprocess, or any shell module (the ones that do the I/O), directly or through another
module of the package.  Imports are read with ``ast``, not by importing, so a function-level
import counts too.

One kind of import is allowed: under ``if TYPE_CHECKING:``.  It never runs; ``streams``
names the hub's class that way for its annotations (the hub itself is shell: asyncio).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "tmuxlocd"

CORE = (
    "protocol",
    "names",
    "layout",
    "model",
    "location",
    "events",
    "answers",
    "journal",
    "mirror",
    "queries",
    "streams",
    "spelling",
    "memo",
    "harness",
    "errors",
    "activity",
    "agents",
    "agent_view",
)
SHELL = (
    "activity_watch",
    "observer",
    "control",
    "daemon",
    "api",
    "client",
    "cli",
    "context",
    "install",
    "doctor_probe",
    "systemd",
    "mcp",
)
FORBIDDEN_EXTERNAL = ("asyncio", "aiohttp", "socket", "subprocess")


def _module_file(name: str) -> Path | None:
    """The file of package module ``tmuxlocd.<name>`` (a module or a package)."""
    parts = name.split(".")
    as_module = PACKAGE.joinpath(*parts).with_suffix(".py")
    if as_module.is_file():
        return as_module
    as_package = PACKAGE.joinpath(*parts, "__init__.py")
    return as_package if as_package.is_file() else None


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:``."""
    found: list[ast.AST] = []
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        found.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return found


def imports_of(path: Path) -> tuple[set[str], set[str]]:
    """(top-level external modules, ``tmuxlocd`` submodules) imported at run time."""
    tree = ast.parse(path.read_text(), str(path))
    external: set[str] = set()
    internal: set[str] = set()

    def note(dotted: str) -> None:
        top, _, rest = dotted.partition(".")
        if top == "tmuxlocd":
            if rest:
                internal.add(rest)
        else:
            external.add(top)

    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                note(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package itself
                base = ".".join(path.relative_to(PACKAGE).with_suffix("").parts[: -node.level])
                dotted = ".".join(p for p in ("tmuxlocd", base, node.module or "") if p)
            else:
                dotted = node.module or ""
            if dotted == "__future__":
                continue
            note(dotted)
            for alias in node.names:  # ``from tmuxlocd import protocol``
                sub = f"{dotted}.{alias.name}".removeprefix("tmuxlocd.")
                if dotted.startswith("tmuxlocd") and _module_file(sub) is not None:
                    internal.add(sub)
    return external, internal


def violations(module: str) -> list[str]:
    """Each forbidden import reachable from ``tmuxlocd.<module>``, with the chain to it."""
    found: list[str] = []
    chains: dict[str, list[str]] = {module: [module]}
    todo = [module]
    while todo:
        name = todo.pop()
        path = _module_file(name)
        assert path is not None, f"tmuxlocd.{name} not found"
        external, internal = imports_of(path)
        chain = " -> ".join(chains[name])
        for ext in sorted(external & set(FORBIDDEN_EXTERNAL)):
            found.append(f"{chain} imports {ext}")
        for sub in sorted(internal):
            if sub.split(".")[0] in SHELL:
                found.append(f"{chain} imports the shell module tmuxlocd.{sub}")
            elif sub not in chains:
                chains[sub] = [*chains[name], sub]
                todo.append(sub)
    return found


@pytest.mark.parametrize("module", CORE)
def test_the_core_imports_no_io_and_no_shell(module: str) -> None:
    assert violations(module) == []


def test_every_listed_module_exists() -> None:
    for name in (*CORE, *SHELL):
        assert _module_file(name) is not None, name


def test_the_rule_sees_direct_and_transitive_imports() -> None:
    # The hub is not core (it owns the asyncio side of subscribers): the checker must see it.
    assert any("imports asyncio" in v for v in violations("hub"))
    assert any("daemon imports asyncio" in v for v in violations("daemon"))
    assert any("shell module tmuxlocd.api" in v for v in violations("daemon"))
    # Through a chain: the no-daemon ``where`` reaches a socket through the identity module.
    assert "direct -> identity imports socket" in violations("direct")


def test_type_checking_imports_do_not_count(tmp_path: Path) -> None:
    source = (
        "from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
        "import re\nif TYPE_CHECKING:\n    import asyncio\nelse:\n    import socket\n"
        "def f() -> None:\n    import subprocess\n"
    )
    path = tmp_path / "m.py"
    path.write_text(source)
    external, _ = imports_of(path)
    assert external == {"typing", "re", "socket", "subprocess"}
