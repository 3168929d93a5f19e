"""``tmuxlocd doctor``: the I/O around ``tmuxlocd.clients.doctor`` (SPEC §7).

Reads the harnesses' files (never writes one), looks at the paths their commands name, asks
the daemon for its health and where this process is, and hands everything to the pure
``tmuxlocd.clients.doctor`` for the findings.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tmuxlocd.clients import doctor
from tmuxlocd.clients.doctor import Finding, PathFacts
from tmuxlocd.clients.install import script_interpreter
from tmuxlocd.clients.rawhttp import NoDaemon, raw_request
from tmuxlocd.core.harness import HARNESSES
from tmuxlocd.core.urls import self_target
from tmuxlocd.host.paths import client_socket_path

HEALTH_TIMEOUT = 2.0
SELF_TIMEOUT = 3.0


def read(path: Path) -> str | None:
    """The file's text; None when there is none; ``doctor.UNREADABLE`` and why when it
    cannot be read."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        return doctor.UNREADABLE + "not UTF-8 text"
    except OSError as exc:
        return doctor.UNREADABLE + (exc.strerror or str(exc))


def look(needs: Sequence[tuple[str, str]], env: Mapping[str, str]) -> PathFacts:
    executables: set[str] = set()
    files: set[str] = set()
    which: dict[str, str | None] = {}
    stale: dict[str, str] = {}
    for path, kind in needs:
        if kind == "which":
            which[path] = shutil.which(path, path=env.get("PATH", os.defpath))
            continue
        if os.path.isfile(path):
            files.add(path)
            if os.access(path, os.X_OK):
                executables.add(path)
                interpreter = script_interpreter(path)
                if interpreter is not None and not os.access(interpreter, os.X_OK):
                    stale[path] = interpreter
    return PathFacts(frozenset(executables), frozenset(files), which, stale)


def check_harness(
    harness: str,
    *,
    project: bool,
    explicit: bool,
    home: Path,
    cwd: Path,
    env: Mapping[str, str],
    exe: Sequence[str],
) -> list[Finding]:
    where = doctor.sources(harness, project, home, cwd, env)
    texts = {p: read(p) for p in dict.fromkeys(where.values())}
    facts = look(doctor.named_paths(harness, where, texts), env)
    return doctor.diagnose(
        harness,
        project=project,
        where=where,
        texts=texts,
        paths=facts,
        cwd=cwd,
        explicit=explicit,
        mcp_available=importlib.util.find_spec("mcp") is not None,
        exe_hint=exe,
        python_hint=os.path.abspath(sys.executable),
        shared=doctor.shared_servers,
        env=env,
    )


def check_daemon(env: Mapping[str, str]) -> list[Finding]:
    """The daemon's health, and where this process is (GET /v1/self, by the rule hooks use)."""
    socket = client_socket_path(env)
    try:
        resp = raw_request(socket, "GET", "/v1/health", HEALTH_TIMEOUT)
    except (NoDaemon, OSError, ValueError) as exc:
        return [doctor.daemon_finding(socket, None, str(exc)), doctor.pane_finding(None, False)]
    assert resp is not None
    found = doctor.daemon_finding(socket, resp.status, None)
    answer: dict[str, Any] | None = None
    try:
        me = raw_request(socket, "GET", self_target(accept_ancestor=True), SELF_TIMEOUT)
        assert me is not None
        if me.status == 200:
            value = json.loads(me.body)
            answer = value if isinstance(value, dict) else None
    except (NoDaemon, OSError, ValueError):
        return [found, doctor.pane_finding(None, False)]
    return [found, doctor.pane_finding(answer, True)]


def collect(
    harness: str | None,
    *,
    project: bool = False,
    home: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    exe: Sequence[str] | None = None,
    daemon: bool = True,
) -> list[Finding]:
    """Every finding: of ``harness`` (None: of every harness whose configuration exists),
    then (``daemon``) of the daemon and the caller."""
    from tmuxlocd.clients.install import config_paths, this_tmuxlocd

    env = os.environ if env is None else env
    home = home or Path.home()
    cwd = cwd or Path.cwd()
    exe = list(exe or this_tmuxlocd())
    if harness is not None:
        chosen = [harness]
    elif project:
        # The directory a project's hooks file is in (.claude, .codex, .gemini, .github/hooks,
        # .qwen, .opencode/plugins, .agents).
        chosen = [
            h
            for h in HARNESSES
            if config_paths(h, True, home, cwd, dict(env))["hooks"].parent.is_dir()
        ]
    else:
        chosen = [h for h in HARNESSES if doctor.harness_dir(h, home, env).is_dir()]
    findings: list[Finding] = []
    seen = False
    for name in chosen:
        mine = check_harness(
            name,
            project=project,
            explicit=harness is not None,
            home=home,
            cwd=cwd,
            env=env,
            exe=exe,
        )
        seen = seen or doctor.installed(mine)
        findings += mine
    if harness is None and not seen:
        findings.append(doctor.no_harness_finding())
    return findings + (check_daemon(env) if daemon else [])


def run(
    harness: str | None,
    *,
    project: bool = False,
    as_json: bool = False,
    out: Callable[[str], None] = print,
) -> int:
    """``tmuxlocd doctor``: print the report; 0 when no problem was found, 1 otherwise."""
    findings = collect(harness, project=project)
    if as_json:
        out(doctor.as_json(findings))
    else:
        for line in doctor.report(findings, Path.home()):
            out(line)
    return doctor.exit_status(findings)


def after_install(harness: str, *, project: bool, out: Callable[[str], None] = print) -> None:
    """The doctor's verdict on what ``install`` just wrote (that harness alone): what is
    not ok, then the verdict."""
    findings = collect(harness, project=project, daemon=False)
    lines = doctor.report(findings, Path.home(), only_trouble=True)
    for line in lines[:-1]:
        out(f"doctor: {line}")
    how = f"tmuxlocd doctor {harness}" + (" --project" if project else "")
    out(f"doctor: {lines[-1].removeprefix('verdict: ')} (details: {how})")
