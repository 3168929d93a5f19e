"""The import rule is the package's tree: each folder is a layer, and imports only go down.

``tmuxlocd/core/`` (pure: bytes and states in, states, events and bytes out) imports only
itself, the standard library without its I/O modules, and msgspec.  ``tmuxlocd/host/`` (what
the operating system says) imports ``core``.  ``tmuxlocd/daemon/`` (what runs in ``serve``)
and ``tmuxlocd/clients/`` (what runs in the user's process) import ``core`` and ``host`` and
never each other, but for the CLI's commands that are the daemon's (``serve``, ``token``),
which import the daemon inside their functions.  A module at the top of the package is a face
(``tmuxlocd.client``, the hook's old path, ``python -m tmuxlocd``): it may import any layer,
and no layer imports it; ``tmuxlocd/__init__.py`` (the version) imports nothing and anyone
may import it.  No import circle, counting imports under ``if TYPE_CHECKING:`` too: a type
a lower module needs from a higher one is a Protocol of its own.

Imports are read with ``ast``, not by importing, so a function-level import counts.  The
layers come from the folders: no module is listed by hand.  ``bench/`` is a program apart
from the package: it imports only ``tmuxlocd.core`` and has no circle either.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# A folder of the package and its floor: a module may import its own folder and lower floors.
# daemon and clients share a floor, so an import between them is sideways, and refused.
FLOORS = {"core": 0, "host": 1, "daemon": 2, "clients": 2}
# The module whose functions may import the daemon: the CLI's serve and token commands.
ENTRY_POINT = ("clients", "cli")
# The standard library's modules that do I/O or wait: not for the pure core.
IO_MODULES = frozenset(
    {
        "_socket",
        "asyncio",
        "ctypes",
        "fcntl",
        "mmap",
        "os",
        "pathlib",
        "select",
        "selectors",
        "shutil",
        "signal",
        "socket",
        "subprocess",
        "tempfile",
        "threading",
        "time",
    }
)
CORE_EXTERNAL = frozenset({"msgspec"})


@dataclass(frozen=True)
class Import:
    source: tuple[str, ...]  # the importing module, as parts below the root
    target: tuple[str, ...]  # a module of the root package, or () for an outside one
    external: str  # the outside module's top name, "" for one of the root package
    in_function: bool
    line: int


def _module_of(root: Path, path: Path) -> tuple[str, ...]:
    parts = path.relative_to(root).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _modules(root: Path) -> dict[tuple[str, ...], Path]:
    return {_module_of(root, p): p for p in sorted(root.rglob("*.py"))}


def _imports(root: Path, path: Path, known: dict[tuple[str, ...], Path]) -> list[Import]:
    """Every import of ``path``, at any depth (functions, ``if TYPE_CHECKING:``, ``try``)."""
    package = root.name
    source = _module_of(root, path)
    found: list[Import] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import):
                for alias in child.names:
                    note(alias.name.split("."), (), child.lineno, inner)
            elif isinstance(child, ast.ImportFrom):
                if child.level:  # relative: from the importing module's package
                    here = list(source if path.name == "__init__.py" else source[:-1])
                    base = [package, *here[: len(here) - child.level + 1]]
                    dotted = [*base, *(child.module.split(".") if child.module else [])]
                else:
                    dotted = (child.module or "").split(".")
                if dotted != ["__future__"]:
                    note(dotted, tuple(a.name for a in child.names), child.lineno, inner)
            walk(child, inner)

    def note(dotted: list[str], names: tuple[str, ...], line: int, in_function: bool) -> None:
        if dotted[0] != package:
            found.append(Import(source, (), dotted[0], in_function, line))
            return
        target = tuple(dotted[1:])
        # ``from pkg.folder import module`` imports the module; ``from pkg import __version__``
        # the package's face.
        subs = [(*target, n) for n in names if (*target, n) in known]
        for sub in subs or [target]:
            found.append(Import(source, sub, "", in_function, line))

    walk(ast.parse(path.read_text(), str(path)), False)
    return found


def _name(package: str, module: tuple[str, ...]) -> str:
    return ".".join((package, *module))


def layer_violations(root: Path) -> list[str]:
    """Each import of the package at ``root`` that goes up or sideways, or out of the pure
    core to I/O or a third party."""
    package, known = root.name, _modules(root)
    found: list[str] = []
    for module, path in known.items():
        for imp in _imports(root, path, known):
            where = f"{_name(package, module)} (line {imp.line})"
            floor = module[0] if len(module) > 1 and module[0] in FLOORS else None
            if imp.external:
                stdlib = imp.external in sys.stdlib_module_names
                if floor == "core" and (
                    imp.external in IO_MODULES or not (stdlib or imp.external in CORE_EXTERNAL)
                ):
                    found.append(f"{where} imports {imp.external}: the core does no I/O")
                continue
            target = imp.target
            if target == ():
                continue  # the package itself: its __init__ (the version) imports nothing
            into = target[0] if len(target) > 1 and target[0] in FLOORS else None
            if into is None and len(target) > 0 and target[0] not in FLOORS:
                if module != ():
                    found.append(
                        f"{where} imports the face {_name(package, target)}: import its layer"
                    )
                continue
            if floor is None:
                if module == ():
                    found.append(f"{where} imports {_name(package, target)}: __init__ is bare")
                continue  # a face may import any layer
            into = target[0]
            if into == floor or FLOORS[into] < FLOORS[floor]:
                continue
            if module == ENTRY_POINT and into == "daemon" and imp.in_function:
                continue  # the CLI's daemon commands (serve, token)
            way = "up" if FLOORS[into] > FLOORS[floor] else "sideways"
            found.append(f"{where} imports {_name(package, target)}: {floor} -> {into} is {way}")
    return found


def circles(root: Path) -> list[list[str]]:
    """Every import circle among the modules under ``root`` (Tarjan's strongly connected
    components), whatever the kind of import: ``TYPE_CHECKING`` and function level count."""
    package, known = root.name, _modules(root)
    edges: dict[tuple[str, ...], set[tuple[str, ...]]] = {m: set() for m in known}
    for module, path in known.items():
        for imp in _imports(root, path, known):
            if not imp.external and imp.target in known and imp.target != module:
                edges[module].add(imp.target)
    index: dict[tuple[str, ...], int] = {}
    low: dict[tuple[str, ...], int] = {}
    stack: list[tuple[str, ...]] = []
    on_stack: set[tuple[str, ...]] = set()
    found: list[list[str]] = []

    def visit(node: tuple[str, ...]) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component: list[tuple[str, ...]] = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(_name(package, m) for m in component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def outside_imports(root: Path, package: Path, allowed: str, *public: str) -> list[str]:
    """Each import of ``package`` by the program at ``root`` that is not of ``allowed`` nor
    one of the ``public`` modules (the import paths users write)."""
    found: list[str] = []
    for module, path in _modules(root).items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")
                if name in public:
                    continue
                if top[0] == package.name and name != allowed and not name.startswith(allowed):
                    found.append(f"{_name(root.name, module)} imports {name}")
    return found


# ----------------------------------------------------------------------------------------------
# The package and the bench.


def test_the_package_imports_only_down() -> None:
    assert layer_violations(REPO / "tmuxlocd") == []


def test_the_package_has_no_import_circle() -> None:
    assert circles(REPO / "tmuxlocd") == []


def test_every_module_is_in_a_layer_or_a_face() -> None:
    # A new folder is a new layer: it must be given its floor here, not slip past the rule.
    root = REPO / "tmuxlocd"
    folders = {p.parent.relative_to(root).parts[0] for p in root.rglob("*.py") if p.parent != root}
    assert folders == set(FLOORS)


def test_the_bench_imports_only_the_core_and_has_no_circle() -> None:
    # The public client too: the bench measures the daemon as its users reach it.
    assert (
        outside_imports(REPO / "bench", REPO / "tmuxlocd", "tmuxlocd.core", "tmuxlocd.client") == []
    )
    assert circles(REPO / "bench") == []


# ----------------------------------------------------------------------------------------------
# The rule itself, on package trees made for it.


def plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("from __future__ import annotations\n" + text)
    return root


LAYERED = {
    "pkg/__init__.py": "__version__ = '1'\n",
    "pkg/client.py": "from pkg.clients.client import Client\n",
    "pkg/core/__init__.py": "",
    "pkg/core/model.py": "import re\nimport msgspec\nfrom pkg import __version__\n",
    "pkg/core/queries.py": "from pkg.core import model\n",
    "pkg/host/__init__.py": "",
    "pkg/host/proc.py": "import os\nfrom pkg.core.model import X\n",
    "pkg/daemon/__init__.py": "",
    "pkg/daemon/hub.py": "import asyncio\nfrom pkg.host import proc\nfrom .. import core\n",
    "pkg/clients/__init__.py": "",
    "pkg/clients/client.py": "from pkg.core.queries import Q\nclass Client: ...\n",
    "pkg/clients/cli.py": "def serve() -> None:\n    from pkg.daemon import hub\n",
}


def test_a_layered_tree_passes(tmp_path: Path) -> None:
    root = plant(tmp_path, LAYERED) / "pkg"
    assert layer_violations(root) == []
    assert circles(root) == []


TYPE_CHECKING_UP = (
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.daemon import h\n"
)


@pytest.mark.parametrize(
    ("name", "text", "seen"),
    [
        ("core/queries.py", "from pkg.host.proc import read\n", "core -> host is up"),
        ("core/queries.py", "def f() -> None:\n    from pkg.daemon import hub\n", "is up"),
        ("host/proc.py", "from pkg.clients import client\n", "host -> clients is up"),
        ("daemon/hub.py", "from pkg.clients.client import Client\n", "is sideways"),
        ("clients/client.py", "from pkg.daemon.hub import Hub\n", "is sideways"),
        # The CLI's exception is for its commands' functions, not for its module's import.
        ("clients/cli.py", "from pkg.daemon import hub\n", "clients -> daemon is sideways"),
        ("daemon/hub.py", "from pkg.client import Client\n", "imports the face pkg.client"),
        ("core/model.py", "import socket\n", "imports socket: the core does no I/O"),
        ("core/model.py", "def f() -> None:\n    import subprocess\n", "imports subprocess"),
        ("core/model.py", "import aiohttp\n", "imports aiohttp: the core does no I/O"),
        ("core/model.py", "from ..host import proc\n", "core -> host is up"),
        (
            "core/model.py",
            TYPE_CHECKING_UP,
            "core -> daemon is up",
        ),
    ],
)
def test_a_planted_upward_or_sideways_import_fails(
    tmp_path: Path, name: str, text: str, seen: str
) -> None:
    root = plant(tmp_path, {**LAYERED, f"pkg/{name}": text + LAYERED[f"pkg/{name}"]}) / "pkg"
    found = layer_violations(root)
    assert len(found) == 1 and seen in found[0], found


def test_a_planted_circle_fails(tmp_path: Path) -> None:
    # queries -> model is allowed by the layers; model -> queries closes a circle.
    root = plant(tmp_path, {**LAYERED, "pkg/core/model.py": "from pkg.core import queries\n"})
    assert layer_violations(root / "pkg") == []
    assert circles(root / "pkg") == [["pkg.core.model", "pkg.core.queries"]]


def test_a_type_checking_circle_fails_too(tmp_path: Path) -> None:
    text = "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from pkg.core.queries import Q\n"
    root = plant(tmp_path, {**LAYERED, "pkg/core/model.py": text}) / "pkg"
    assert circles(root) == [["pkg.core.model", "pkg.core.queries"]]


def test_a_longer_circle_through_a_function_import(tmp_path: Path) -> None:
    files = {
        **LAYERED,
        "pkg/daemon/a.py": "from pkg.daemon import b\n",
        "pkg/daemon/b.py": "from pkg.daemon import c\n",
        "pkg/daemon/c.py": "def f() -> None:\n    from pkg.daemon.a import x\n",
    }
    root = plant(tmp_path, files) / "pkg"
    assert circles(root) == [["pkg.daemon.a", "pkg.daemon.b", "pkg.daemon.c"]]


def test_a_program_beside_the_package_imports_only_the_core(tmp_path: Path) -> None:
    plant(tmp_path, LAYERED)
    bench = plant(
        tmp_path,
        {
            "prog/__init__.py": "",
            "prog/run.py": "from pkg.core.model import X\nfrom pkg.daemon.hub import Hub\n",
        },
    )
    found = outside_imports(bench / "prog", bench / "pkg", "pkg.core")
    assert found == ["prog.run imports pkg.daemon.hub"]
