"""No test and no benchmark can reach a tmux server it did not start.

Two guards.  At run time ``tests/conftest.py`` removes ``TMUX``, ``TMUX_PANE`` and
``TMUX_TMPDIR`` from the test process before any test module loads (see there), so a tmux
client run without a socket cannot find the user's server through them.  Here, statically:
every tmux command line written in ``tests/`` or ``bench/`` names its own server with ``-S``
(a socket in a private directory) or ``-L`` (a private name), read with ``ast``:

- an argument list (a list or tuple literal, or the arguments of a process-starting call
  such as ``create_subprocess_exec``) whose first element is tmux: a string ``tmux`` or a
  path ending in ``/tmux``, or a name such as ``TMUX``, ``tmux``, ``self.tmux``, ``_tmux()``;
- a shell command in a string (``"tmux kill-server"``, ``"x; tmux ls"``, ``"$(tmux ...)"``):
  tmux at the start of a string (docstrings aside) or after ``;``, ``&``, ``|``, ``(``.

``tmux -V`` reaches no server and is allowed, and so is a literal that is not a command line
(a tuple of names with no string argument, a word list such as ``["tmux", "session"]``).  A
line the scan misreads says why in a ``# tmux: <reason>`` comment: a script run inside a pane
of a private server (it finds its server through that pane's ``$TMUX``), or a label that
only reads like a command.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THIS = Path(__file__).resolve()
SCANNED = sorted(  # this file aside: its probes below are strings that must be found
    p for d in ("tests", "bench") for p in (ROOT / d).rglob("*.py") if p != THIS
)
MARK = "# tmux: "  # then why the line is not a client of a server it did not start
SPAWNERS = {
    "run",
    "Popen",
    "call",
    "check_call",
    "check_output",
    "create_subprocess_exec",
    "execv",
    "execvp",
    "execve",
    "execvpe",
    "spawnv",
    "spawnvp",
}
SERVER_FLAGS = {"-S", "-L"}
# A tmux client in a shell string: ``tmux`` at a word start, its flags, then a command.
SHELL_TMUX = re.compile(
    r"(?:^|[;&|(]|\$\()\s*tmux"  # at the start of a command
    r"((?:\s+-[A-Za-z]+(?:\s+(?!-)[^\s;&|]+)?)*)"  # its flags, some with a value
    r"\s+([a-z]+(?:-[a-z]+)+|ls|new)\b"  # a command
)
SHELL_FLAGS = re.compile(r"(?:^|\s)-[A-Za-z]*[SL]\b")


def names_tmux(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value == "tmux" or node.value.endswith("/tmux")
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id.lower().lstrip("_") == "tmux"
    if isinstance(node, ast.Attribute):
        return node.attr.lower().lstrip("_") == "tmux"
    return False


def argv_problem(elements: list[ast.expr]) -> bool:
    """Whether an argument list starting with tmux names no private server."""
    if not elements or not names_tmux(elements[0]):
        return False
    rest = [e.value for e in elements[1:] if isinstance(e, ast.Constant)]
    if not any(isinstance(e, ast.Starred) for e in elements) and not any(
        isinstance(v, str) and (v.startswith("-") or "-" in v[1:]) for v in rest
    ):
        return False  # no flag and no command: a tuple of values, a word list
    if SERVER_FLAGS & set(rest):
        return False
    return rest != ["-V"] or len(rest) != len(elements) - 1


def _func_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def findings(path: Path) -> list[str]:
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source, str(path))
    found: list[tuple[int, str]] = []
    docstrings = {
        id(body[0].value)
        for body in (
            getattr(n, "body", None)
            for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        )
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.List | ast.Tuple)
            and isinstance(node.ctx, ast.Load)
            and argv_problem(node.elts)
        ):
            found.append((node.lineno, "an argument list"))
        elif (
            isinstance(node, ast.Call) and _func_name(node) in SPAWNERS and argv_problem(node.args)
        ):
            found.append((node.lineno, f"{_func_name(node)}()"))
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            for m in SHELL_TMUX.finditer(node.value):
                if not SHELL_FLAGS.search(m[1]):
                    found.append((node.lineno, f"the shell command {m[0].strip()!r}"))
    rel = path.relative_to(ROOT)
    return [
        f"{rel}:{line}: {what} runs tmux without -S/-L"
        for line, what in sorted(set(found))
        if MARK not in lines[line - 1]
    ]


def test_the_scan_covers_the_tests_and_the_benchmarks() -> None:
    rels = {str(p.relative_to(ROOT)) for p in SCANNED}
    assert {"tests/tmuxtest.py", "tests/soak.py", "bench/tmuxfarm.py"} <= rels


@pytest.mark.parametrize("path", SCANNED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_tmux_command_names_a_private_server(path: Path) -> None:
    assert findings(path) == []


@pytest.mark.parametrize(
    ("source", "bad"),
    [
        ('subprocess.run([TMUX, "kill-server"])', True),
        ('subprocess.run(["tmux", "list-sessions"])', True),
        ('subprocess.run(["/usr/bin/tmux", "-f", "/dev/null", "new-session"])', True),
        ("asyncio.create_subprocess_exec(self.tmux, 'list-panes', '-a')", True),
        ("argv = (_tmux(), 'display-message', '-p', 'x')", True),
        ('os.system("tmux kill-server")', True),
        ('script = f"sleep 1; tmux -f /dev/null new-session -d {x}"', True),
        ("yield tmux, server, version", False),
        ("tmux, sock = job['tmux'], job['sock']", False),
        ('words = ["tmux", "session", "window"]', False),
        ('subprocess.run([TMUX, "-S", path, "kill-server"])', False),
        ('subprocess.run([tmux, "-u", "-L", name, "-f", "/dev/null"])', False),
        ("asyncio.create_subprocess_exec(TMUX, '-S', sock, *args)", False),
        ('subprocess.run([TMUX, "-V"])', False),
        ('os.system("tmux -S /tmp/x/s kill-server")', False),
        ('os.system("tmux -uL name kill-server")', False),
        ('script = "tmux break-pane"  ' + MARK + "a label", False),
        ('text = "run `tmux split-window` to see"', False),
        ('"the tmux server answers"', False),
        ('what = "the model == tmux list-panes"', False),
        ('"""`tmux kill-server` in a docstring is prose."""', False),
        ('script = "cd /tmp && tmux kill-server"', True),
        ('script = "x=$(tmux display-message -p x)"', True),
        ("shutil.which('tmux')", False),
    ],
)
def test_the_scan_finds_what_it_should(tmp_path: Path, source: str, bad: bool) -> None:
    path = ROOT / "tests" / f"_scan_probe_{tmp_path.name}.py"
    try:
        path.write_text(source + "\n")
        assert bool(findings(path)) == bad
    finally:
        path.unlink()


def test_no_unit_test_starts_tmux() -> None:
    """Tests that start tmux live in ``tests/integration`` (all marked ``integration``, so the
    per-version CI runs select them); ``tests/unit`` and ``tests/api`` never run tmux."""
    for path in sorted((ROOT / "tests" / "unit").glob("*.py")) + sorted(
        (ROOT / "tests" / "api").glob("*.py")
    ):
        if path == THIS:
            continue
        source = path.read_text()
        assert "capture_layouts" not in source and "TmuxServer" not in source, path
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (
                (_func_name(node) in SPAWNERS and node.args and names_tmux(node.args[0]))
                or (_func_name(node) == "which" and node.args and names_tmux(node.args[0]))
            ):
                raise AssertionError(f"{path.relative_to(ROOT)}:{node.lineno} runs tmux")
