"""``tmuxlocd doctor``: is each harness's installation of tmuxlocd whole and will it run
(SPEC §7)?

Pure: every function here takes file texts and facts about paths (which exist, which are
executable) and gives back findings; nothing is read, run or asked here.  The files and
facts are gathered by ``tmuxlocd.clients.doctor_probe`` (the shell), in two steps: ``sources`` says
which files to read, ``named_paths`` which paths their commands name, and ``diagnose``
decides.  The entries are recognised as ``tmuxlocd.clients.install`` writes and recognises them (its
planning functions are pure too).

Each finding names its harness (None for the daemon and the caller), a check, a status
(``ok``, ``warning``, ``problem``), what was found and, unless it is ok, what to do: an
exact command or setting.  A problem means a hook or the MCP server will not run; a warning,
something that works but not as well as it could, or that cannot be verified.  tmuxlocd
never changes a harness's trust or enablement itself: that is the user's decision, and the
finding says how to make it.

What each harness adds to the common checks is its description's ``doctor_checks``
(``tmuxlocd/core/harnesses/<name>.py``: Codex's trust, Gemini CLI's ``hooksConfig``).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tmuxlocd.clients.install import (
    HOOK_CONTAINERS,
    MCP_NAME,
    InstallError,
    config_paths,
    entry_command,
    is_our_mcp,
    is_ours,
    load_json,
    plugin_argv,
    plugin_text,
    resolve,
)
from tmuxlocd.core import harnesses
from tmuxlocd.core.findings import OK, PROBLEM, WARNING, DoctorContext, Finding, OurHook
from tmuxlocd.core.harnesses.base import PLUGIN

__all__ = ["OK", "PROBLEM", "WARNING", "Finding", "OurHook"]
HARNESSES = harnesses.NAMES


@dataclass(frozen=True)
class PathFacts:
    """What the shell found out about the paths ``named_paths`` listed: the absolute paths
    that are executable files, those that are regular files, where each bare command name
    resolves on ``PATH`` (None: nowhere), and the scripts whose interpreter is gone."""

    executables: frozenset[str] = frozenset()
    files: frozenset[str] = frozenset()
    which: Mapping[str, str | None] = field(default_factory=dict)
    # Executable scripts whose ``#!`` interpreter does not exist (a moved virtualenv's
    # console scripts still name the old one), with that interpreter.
    stale: Mapping[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------------------------
# Which files.


def sources(
    harness: str, project: bool, home: Path, cwd: Path, env: Mapping[str, str]
) -> dict[str, Path]:
    """The files the doctor reads for ``harness``, by role: ``hooks`` and ``mcp`` (where
    ``install`` writes), and those its description adds (``doctor_files``: Codex's hook
    state, Claude Code's user MCP servers, every Gemini CLI settings file that applies)."""
    found = dict(config_paths(harness, project, home, cwd, dict(env)))
    extra = harnesses.get(harness).doctor_files.get("project" if project else "user", {})
    found.update(resolve(dict(extra), home, cwd, dict(env)))
    return found


def harness_dir(harness: str, home: Path, env: Mapping[str, str]) -> Path:
    """The user's configuration directory of ``harness``: there, the harness is in use."""
    template = harnesses.get(harness).home_dir
    return resolve({"dir": template}, home, home, dict(env))["dir"]


# ----------------------------------------------------------------------------------------------
# Our entries in a hooks file.


def our_hooks(data: Mapping[str, Any]) -> list[OurHook]:
    """Every hook entry of ours (by its command, as ``install`` recognises them), under
    "hooks" or Antigravity CLI's named hook (``install.HOOK_CONTAINERS``)."""
    found: list[OurHook] = []
    for key in HOOK_CONTAINERS:
        hooks = data.get(key)
        if isinstance(hooks, dict):
            found += _ours_in(hooks)
    return found


def _ours_in(hooks: Mapping[str, Any]) -> list[OurHook]:
    found: list[OurHook] = []
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for g, group in enumerate(groups):
            if isinstance(group, dict) and "hooks" not in group:
                if is_ours(entry_command(group)):  # a flat entry (Copilot CLI, Crush)
                    matcher = group.get("matcher")
                    found.append(
                        OurHook(
                            str(event), g, 0, matcher if isinstance(matcher, str) else None, group
                        )
                    )
                continue
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                continue
            matcher = group.get("matcher")
            for i, entry in enumerate(entries):
                if isinstance(entry, dict) and is_ours(entry_command(entry)):
                    found.append(
                        OurHook(
                            str(event), g, i, matcher if isinstance(matcher, str) else None, entry
                        )
                    )
    return found


def launch_paths(command: str) -> list[tuple[str, str]] | None:
    """What a hook or MCP command needs to exist, as (path, kind): ``exe`` an executable
    (absolute), ``file`` a file (absolute), ``which`` a bare name looked up on ``PATH``.
    None: the command does not parse as a shell command line."""
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv:
        return None
    first = argv[0]
    needs = [(first, "exe" if "/" in first else "which")]
    if len(argv) > 2 and argv[1] == "-S" and argv[2].endswith(".py"):  # python -S context.py
        needs.append((argv[2], "file"))
    return needs


def mcp_argv(entry: Mapping[str, Any]) -> list[str]:
    command = entry.get("command")
    args = entry.get("args")
    words = [str(command)] if isinstance(command, str) else []
    return words + ([str(a) for a in args] if isinstance(args, list) else [])


# ----------------------------------------------------------------------------------------------
# Parsing, never raising.


UNREADABLE = "\0"  # a text that starts so stands for a file that could not be read (why follows)


def _json(text: str | None, path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the object, None), ({} for a missing or empty file), or (None, why not)."""
    if text is None:
        return {}, None
    if text.startswith(UNREADABLE):
        return None, f"{path}: cannot be read ({text[1:]})"
    try:
        return load_json(text, str(path)), None
    except InstallError as exc:
        return None, str(exc).removesuffix("; left untouched")


def _toml(text: str | None, path: Path) -> tuple[dict[str, Any] | None, str | None]:
    if text is None:
        return {}, None
    if text.startswith(UNREADABLE):
        return None, f"{path}: cannot be read ({text[1:]})"
    try:
        return tomllib.loads(text), None
    except tomllib.TOMLDecodeError as exc:
        return None, f"{path}: not valid TOML ({exc})"


def _table(value: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def named_paths(
    harness: str, where: Mapping[str, Path], texts: Mapping[Path, str | None]
) -> list[tuple[str, str]]:
    """Every (path, kind) that the installed hook and MCP commands need (``launch_paths``):
    what the shell has to look at before ``diagnose``."""
    needs: list[tuple[str, str]] = []
    if harness_of(harness).layout == PLUGIN:
        text = texts.get(where["hooks"])
        argv = plugin_argv(text, harness) if text else None
        return (launch_paths(shlex.join(argv)) or []) if argv else []
    hooks, _ = _json(texts.get(where["hooks"]), where["hooks"])
    for hook in our_hooks(hooks or {}):
        needs += launch_paths(hook.command) or []
    entry = _mcp_entry(harness, where, texts)
    if entry is not None:
        argv = mcp_argv(entry)
        if argv:
            needs.append((argv[0], "exe" if "/" in argv[0] else "which"))
    return list(dict.fromkeys(needs))


def _mcp_entry(
    harness: str, where: Mapping[str, Path], texts: Mapping[Path, str | None]
) -> dict[str, Any] | None:
    """Our MCP server's entry (``mcpServers.tmux`` / ``[mcp_servers.tmux]``), if any."""
    path = _mcp_path(harness, where)
    if path is None:
        return None
    if path.suffix == ".toml":
        data, _ = _toml(texts.get(path), path)
        entry = _table(data, "mcp_servers", MCP_NAME)
    else:
        data, _ = _json(texts.get(path), path)
        entry = _table(data, "mcpServers", MCP_NAME)
    return entry if is_our_mcp(entry) else None


def _mcp_path(harness: str, where: Mapping[str, Path]) -> Path | None:
    """Where our MCP entry is: the file install writes it to, else the user's own (the
    description's ``user_mcp_role``: Claude Code's ~/.claude.json)."""
    role = harness_of(harness).user_mcp_role
    return where.get("mcp") or (where.get(role) if role else None)


def harness_of(harness: str) -> harnesses.base.Harness:
    return harnesses.get(harness)


def _spellings(path: Path) -> list[str]:
    """A path as written (absolute, not resolved) and as resolved."""
    return list(dict.fromkeys([os.path.abspath(path), os.path.realpath(path)]))


# ----------------------------------------------------------------------------------------------
# Decisions, per harness.


def diagnose(
    harness: str,
    *,
    project: bool,
    where: Mapping[str, Path],
    texts: Mapping[Path, str | None],
    paths: PathFacts,
    cwd: Path,
    explicit: bool = True,
    mcp_available: bool = True,
    exe_hint: Sequence[str] = ("tmuxlocd",),
    python_hint: str = "python3",
    shared: SharedServers | None = None,
    env: Mapping[str, str] | None = None,
) -> list[Finding]:
    """Every finding for one harness.  ``texts``: each file of ``where`` (None: missing);
    ``paths``: the facts of ``named_paths``; ``explicit``: the user named this harness (else
    it was found by its directory, and an installation that is not there is a warning);
    ``mcp_available``: whether this installation has the MCP extra; ``exe_hint`` and
    ``python_hint``: this installation's command and interpreter, for the fixes; ``env``: the
    environment a harness started from here gets (for its own checks); ``shared``: the running
    shared servers of a kind and their clients (``shared_servers``, which the probe passes;
    None: none looked at, as in the unit tests)."""
    found: list[Finding] = []
    spec = harness_of(harness)
    hooks_path = where["hooks"]

    def own_checks(data: dict[str, Any], ours: Sequence[OurHook]) -> list[Finding]:
        if spec.doctor_checks is None:
            return []
        return spec.doctor_checks(
            DoctorContext(
                harness,
                project=project,
                where=where,
                texts=texts,
                data=data,
                ours=ours,
                cwd=cwd,
                parse_json=_json,
                parse_toml=_toml,
                spellings=_spellings,
                shared_servers=shared if shared is not None else _none_running,
                env=env,
            )
        )

    if spec.layout == PLUGIN:
        found = _plugin(harness, where, texts, paths, explicit, project, python_hint)
        return found + own_checks({}, []) if installed(found) else found
    data, error = _json(texts.get(hooks_path), hooks_path)
    if data is None:
        if spec.comments and not (texts.get(hooks_path) or "").startswith(UNREADABLE):
            # Gemini CLI reads its settings with comments; this doctor does not.
            return [
                Finding(
                    harness,
                    "config",
                    WARNING,
                    f"{error}: cannot check ({spec.title} accepts comments in its settings; "
                    "this doctor does not)",
                    f"check its hooks by hand, or take the comments out and run `tmuxlocd "
                    f"doctor {harness}` again",
                )
            ]
        return [
            Finding(
                harness,
                "config",
                PROBLEM,
                f"{error}: the harness cannot read its hooks either",
                f"fix the file by hand, then `tmuxlocd install {harness}` again",
            )
        ]
    ours = our_hooks(data)
    mcp_entry = _mcp_entry(harness, where, texts)
    install = f"tmuxlocd install {harness}" + (" --project" if project else "")
    # From this installation, by its interpreter: a moved virtualenv's scripts name the old
    # one, its interpreter still runs.
    reinstall = f"{shlex.quote(python_hint)} -m {install}"
    if not ours and mcp_entry is None:
        return [
            Finding(
                harness,
                "hooks",
                PROBLEM if explicit else WARNING,
                f"tmuxlocd is not installed for {spec.title} ({hooks_path}: none of its hooks)",
                install,
            )
        ]
    found += _hooks_present(harness, ours, hooks_path, install)
    found += _commands(
        harness,
        "hook-command",
        [h.command for h in ours],
        paths,
        reinstall,
        "the harness runs no tmuxlocd hook",
    )
    found += _enabled(harness, data, where, texts, hooks_path)
    found += own_checks(data, ours)
    found += _mcp(
        harness, project, where, texts, mcp_entry, paths, mcp_available, exe_hint, python_hint
    )
    return found


def _plugin(
    harness: str,
    where: Mapping[str, Path],
    texts: Mapping[Path, str | None],
    paths: PathFacts,
    explicit: bool,
    project: bool,
    python_hint: str,
) -> list[Finding]:
    """A plugin (opencode's): the plugin file is ours, the one this version writes, and the
    command it runs exists."""
    path = where["hooks"]
    text = texts.get(path)
    title = harness_of(harness).title
    install = f"tmuxlocd install {harness}" + (" --project" if project else "")
    if text is None or text.startswith(UNREADABLE):
        why = "no such file" if text is None else f"cannot be read ({text[1:]})"
        return [
            Finding(
                harness,
                "hooks",
                PROBLEM if explicit else WARNING,
                f"tmuxlocd is not installed for {title} ({path}: {why})",
                install,
            )
        ]
    argv = plugin_argv(text, harness)
    if argv is None:
        return [
            Finding(
                harness,
                "hooks",
                PROBLEM,
                f"{path}: not tmuxlocd's plugin (or one this version cannot read)",
                f"move it aside, then {install}",
            )
        ]
    launcher = argv[:-1] if argv and argv[-1] == harness else argv
    if text != plugin_text(launcher, harness):
        # Written by an older tmuxlocd (or edited): it runs the hook, but not as this version
        # would (events it does not send, such as the agent's state).
        found = [
            Finding(
                harness,
                "hooks",
                WARNING,
                f"{path}: an older plugin than this tmuxlocd writes (or one edited since)",
                install + " (it rewrites its own plugin)",
            )
        ]
    else:
        found = [Finding(harness, "hooks", OK, f"{path}: the plugin this tmuxlocd writes")]
    found += _commands(
        harness,
        "hook-command",
        [shlex.join(argv)],
        paths,
        f"{shlex.quote(python_hint)} -m {install}",
        "the plugin runs no tmuxlocd hook",
    )
    return found


def _hooks_present(
    harness: str, ours: Sequence[OurHook], path: Path, install: str
) -> list[Finding]:
    want = harness_of(harness).installed_events
    have = {(h.event, h.matcher) for h in ours}
    missing = [_event_name(e, m) for e, m in want if (e, m) not in have]
    if missing:
        return [
            Finding(
                harness,
                "hooks",
                PROBLEM,
                f"{path}: missing {', '.join(missing)} (of "
                f"{', '.join(_event_name(e, m) for e, m in want)})",
                install,
            )
        ]
    counts: dict[tuple[str, str | None], int] = {}
    for h in ours:
        counts[(h.event, h.matcher)] = counts.get((h.event, h.matcher), 0) + 1
    twice = [_event_name(e, m) for (e, m), n in counts.items() if n > 1]
    if twice:
        return [
            Finding(
                harness,
                "hooks",
                WARNING,
                f"{path}: more than one tmuxlocd hook for {', '.join(twice)} (each runs)",
                f"{install} (it replaces its own entries)",
            )
        ]
    return [
        Finding(
            harness,
            "hooks",
            OK,
            f"{path}: {', '.join(_event_name(e, m) for e, m in want)}",
        )
    ]


def _event_name(event: str, matcher: str | None) -> str:
    return f"{event} ({matcher})" if matcher else event


def _commands(
    harness: str, check: str, commands: Sequence[str], paths: PathFacts, fix: str, what: str
) -> list[Finding]:
    """Whether what each command starts exists (the first word, and the script of
    ``python -S <script>``)."""
    missing: list[str] = []
    unparsed: list[str] = []
    seen: list[str] = []
    for command in dict.fromkeys(commands):
        needs = launch_paths(command)
        if needs is None:
            unparsed.append(command)
            continue
        for path, kind in needs:
            if kind == "which":
                resolved = paths.which.get(path)
                if resolved is None:
                    missing.append(f"{path} (not on PATH)")
                else:
                    seen.append(f"{path} (on this PATH: {resolved})")
            elif kind == "exe" and path not in paths.executables:
                why = "not executable" if path in paths.files else "no such file"
                missing.append(f"{path} ({why})")
            elif kind == "exe" and path in paths.stale:
                missing.append(f"{path} (its #! interpreter {paths.stale[path]} does not exist)")
            elif kind == "file" and path not in paths.files:
                missing.append(f"{path} (no such file)")
            else:
                seen.append(path)
    seen = list(dict.fromkeys(seen))
    if unparsed:
        return [Finding(harness, check, PROBLEM, f"not a command line: {unparsed[0]!r}", fix)]
    if missing:
        return [
            Finding(
                harness,
                check,
                PROBLEM,
                f"{', '.join(dict.fromkeys(missing))}: {what} (the installation moved or "
                "was removed?)",
                f"{fix}  (or the same from the installation the harness should run)",
            )
        ]
    if not seen:
        return []
    if any("(on this PATH" in s for s in seen):
        return [
            Finding(
                harness,
                check,
                WARNING,
                f"found only by name: {', '.join(seen)}; the harness's PATH may differ",
                f"{fix} (it writes absolute paths)",
            )
        ]
    return [Finding(harness, check, OK, f"exist: {', '.join(seen)}")]


def _enabled(
    harness: str,
    data: Mapping[str, Any],
    where: Mapping[str, Path],
    texts: Mapping[Path, str | None],
    hooks_path: Path,
) -> list[Finding]:
    key = harness_of(harness).disable_all_key
    if key:
        if data.get(key) is True:
            return [
                Finding(
                    harness,
                    "hooks-enabled",
                    PROBLEM,
                    f"{hooks_path}: {key} is true: {harness_of(harness).title} runs no hook",
                    f'set "{key}": false in {hooks_path} (or remove it)',
                )
            ]
        return [Finding(harness, "hooks-enabled", OK, f"{key} is not set")]
    return []  # its own (``doctor_checks``), or none


SharedServers = Callable[[str], list[tuple[int, list[tuple[int, str]] | None]]]


def _none_running(kind: str) -> list[tuple[int, list[tuple[int, str]] | None]]:
    return []


def shared_servers(kind: str) -> list[tuple[int, list[tuple[int, str]] | None]]:
    """This user's shared servers of a kind (``host.shared``: a harness's server of several
    sessions) and their clients, each (pid, its tty's path)."""
    from tmuxlocd.host import shared
    from tmuxlocd.host.identity import read_stat, tty_path

    out: list[tuple[int, list[tuple[int, str]] | None]] = []
    for server in shared.servers():
        if server.kind != kind:
            continue
        pids = shared.clients_of(server.pid)
        if pids is None:
            out.append((server.pid, None))
            continue
        clients = []
        for pid in pids:
            stat = read_stat(pid)
            tty = (tty_path(pid, stat.tty_nr) if stat and stat.tty_nr else None) or "no tty"
            clients.append((pid, tty))
        out.append((server.pid, clients))
    return out


def _mcp(
    harness: str,
    project: bool,
    where: Mapping[str, Path],
    texts: Mapping[Path, str | None],
    entry: dict[str, Any] | None,
    paths: PathFacts,
    mcp_available: bool,
    exe_hint: Sequence[str],
    python_hint: str,
) -> list[Finding]:
    path = _mcp_path(harness, where)
    if path is None:  # opencode, Antigravity CLI, a repository's Copilot hooks: not written
        return []
    add = " ".join(shlex.quote(a) for a in [*exe_hint, "mcp"])
    user_command = harness_of(harness).user_mcp_command
    if user_command and not project:
        fix = user_command.format(name=MCP_NAME, command=add)
    else:
        install = f"tmuxlocd install {harness}" + (" --project" if project else "")
        fix = f"{shlex.quote(python_hint)} -m {install}"
    if entry is None:
        data, error = (_toml if path.suffix == ".toml" else _json)(texts.get(path), path)
        if data is None:
            return [Finding(harness, "mcp", PROBLEM, f"{error}", "fix the file by hand")]
        other = (
            _table(data, "mcp_servers", MCP_NAME)
            if path.suffix == ".toml"
            else _table(data, "mcpServers", MCP_NAME)
        )
        what = (
            f'an MCP server named "{MCP_NAME}" in {path} is not tmuxlocd\'s'
            if other
            else f'no MCP server "{MCP_NAME}" in {path}'
        )
        # Claude Code's user servers are added by the user (install prints the command).
        status = WARNING if user_command and not project else PROBLEM
        return [Finding(harness, "mcp", status, what, fix)]
    found: list[Finding] = []
    if entry.get("enabled") is False:  # Codex: [mcp_servers.tmux] enabled = false
        found.append(
            Finding(
                harness,
                "mcp",
                PROBLEM,
                f"{path}: the {MCP_NAME} server is there but enabled = false",
                f"set enabled = true under [mcp_servers.{MCP_NAME}] in {path} (or remove it)",
            )
        )
    else:
        argv = mcp_argv(entry)
        found.append(Finding(harness, "mcp", OK, f"{path}: {' '.join(argv)}"))
    checked = _commands(
        harness,
        "mcp-command",
        [shlex.join(mcp_argv(entry))],
        paths,
        fix,
        "the harness cannot start the MCP server",
    )
    found += checked
    if not mcp_available and mcp_argv(entry)[: len(exe_hint)] == list(exe_hint):
        found.append(
            Finding(
                harness,
                "mcp-command",
                WARNING,
                "this installation lacks the MCP extra: `tmuxlocd mcp` fails to start",
                f"{shlex.quote(python_hint)} -m pip install 'tmuxlocd[mcp]'",
            )
        )
    return found


# ----------------------------------------------------------------------------------------------
# The daemon and the caller.


def service_advice(platform: str = sys.platform) -> str:
    """How to have the daemon run, by the system's service manager."""
    if platform == "darwin":
        return (
            "tmuxlocd serve  (or: tmuxlocd install launchd, then launchctl bootstrap "
            "gui/$(id -u) ~/Library/LaunchAgents/tmuxlocd.plist)"
        )
    return (
        "tmuxlocd serve  (or: tmuxlocd install systemd, then systemctl --user enable "
        "--now tmuxlocd.socket)"
    )


def daemon_finding(socket: str, status: int | None, error: str | None) -> Finding:
    """``status``: the HTTP status of ``GET /v1/health`` (None: no answer, ``error`` says
    why)."""
    if status == 200:
        return Finding(None, "daemon", OK, f"answered on {socket}")
    if status is None:
        return Finding(
            None,
            "daemon",
            WARNING,
            f"no daemon answered on {socket} ({error}): hooks and the MCP server compute "
            "from tmux directly (slower, no live updates)",
            service_advice(),
        )
    return Finding(
        None,
        "daemon",
        WARNING,
        f"the daemon on {socket} answered {status} to /v1/health",
        "tmuxlocd status",
    )


def pane_finding(answer: Mapping[str, Any] | None, daemon_up: bool) -> Finding:
    """``answer``: the JSON of ``GET /v1/self`` (None for 204 or no answer)."""
    if not daemon_up:
        return Finding(
            None,
            "pane",
            WARNING,
            "cannot tell whether this process is in a tmux pane: no daemon to ask",
            "tmuxlocd where  (it computes the answer from tmux without a daemon)",
        )
    location = answer.get("location") if answer else None
    if answer and answer.get("inside_tmux") is True and isinstance(location, dict):
        pane = _table(location, "pane")
        session = _table(location, "session")
        window = _table(location, "window")
        return Finding(
            None,
            "pane",
            OK,
            f"this process is in pane {pane.get('id')} (session {session.get('name')}, "
            f"window {window.get('index')}), by {answer.get('verified_by')}",
        )
    reason = answer.get("reason") if answer else None
    return Finding(
        None,
        "pane",
        WARNING,
        "this process is not in a tmux pane"
        + (f" ({reason})" if reason else "")
        + ": a harness started here gets no location",
        "start the harness from a shell inside a tmux pane",
    )


def no_harness_finding() -> Finding:
    return Finding(
        None,
        "harnesses",
        PROBLEM,
        "tmuxlocd is installed for no harness (found none of "
        + ", ".join(dict.fromkeys(h.home_dir for h in harnesses.every()))
        + " with its hooks)",
        "tmuxlocd install " + "|".join(HARNESSES),
    )


def installed(findings: Sequence[Finding]) -> bool:
    """Whether these findings of one harness saw an installation (not just its absence)."""
    return not (
        len(findings) == 1
        and findings[0].check == "hooks"
        and findings[0].found.startswith("tmuxlocd is not installed")
    )


# ----------------------------------------------------------------------------------------------
# The report.


def exit_status(findings: Sequence[Finding]) -> int:
    return 1 if any(f.status == PROBLEM for f in findings) else 0


def verdict(findings: Sequence[Finding]) -> str:
    problems = sum(f.status == PROBLEM for f in findings)
    warnings = sum(f.status == WARNING for f in findings)
    w = f"{warnings} warning{'s' if warnings != 1 else ''}"
    if problems:
        return f"{problems} problem{'s' if problems != 1 else ''}" + (f", {w}" if warnings else "")
    return "all is well" + (f" ({w})" if warnings else "")


def shorten(text: str, home: Path) -> str:
    """``text`` with the home directory written ``~``."""
    prefix = str(home).rstrip("/")
    return text.replace(prefix + "/", "~/") if prefix else text


def report(findings: Sequence[Finding], home: Path, *, only_trouble: bool = False) -> list[str]:
    """The human report: a block per harness, then the daemon and the caller, then the
    verdict."""
    lines: list[str] = []
    order = [h for h in (*HARNESSES, None) if any(f.harness == h for f in findings)]
    for harness in order:
        shown = [
            f for f in findings if f.harness == harness and not (only_trouble and f.status == OK)
        ]
        if not shown:
            continue
        lines.append(harness_of(harness).title if harness else "tmuxlocd")
        for f in shown:
            lines.append(f"  {f.status:<8} {f.check}: {shorten(f.found, home)}")
            if f.fix:
                lines.append(f"  {'':<8} fix: {shorten(f.fix, home)}")
    lines.append(f"verdict: {verdict(findings)}")
    return lines


def as_json(findings: Sequence[Finding]) -> str:
    return json.dumps(
        {
            "ok": exit_status(findings) == 0,
            "verdict": verdict(findings),
            "findings": [asdict(f) for f in findings],
        },
        indent=2,
        ensure_ascii=False,
    )
