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

Codex's trust (``codex-rs/hooks/src/engine/discovery.rs``, ``codex-rs/hooks/src/lib.rs``
and ``codex-rs/config/src/fingerprint.rs`` in ``openai/codex``; the same hashes as
``codex app-server``'s ``hooks/list`` of Codex 0.169.0): every command hook of a
``hooks.json`` has a key ``<absolute path of hooks.json>:<event label>:<group
index>:<handler index>``, and Codex runs it only when ``[hooks.state."<key>"]`` in the user's
``config.toml`` has a ``trusted_hash`` equal to the hook's current hash (and ``enabled`` is
not false).  The hash is ``sha256:`` and the hex SHA-256 of the compact JSON, keys sorted,
of ``{"event_name": <label>, "matcher": <matcher, events with matchers only>, "hooks":
[{"type": "command", "command": <command>, "timeout": <seconds, 600 if unset, at least 1>,
"async": <bool>, "statusMessage": <if set>}]}``: it covers the command, so a command that
changed (an installation moved, a new ``--min-interval-ms``) is untrusted again, and Codex
says nothing about it.  The recipe is Codex's internal detail, not a published contract: a
hash that does not match is reported as a problem with the way to look (``/hooks``), and
trust is never claimed unless the hash matches.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tmuxlocd.clients.install import (
    HOOK_CONTAINERS,
    HOOK_EVENTS,
    MCP_NAME,
    InstallError,
    config_paths,
    entry_command,
    is_our_mcp,
    is_ours,
    load_json,
    plugin_argv,
    plugin_text,
)
from tmuxlocd.core.harness import HARNESSES

OK = "ok"
WARNING = "warning"
PROBLEM = "problem"

NAMES = {
    "claude": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "copilot": "Copilot CLI",
    "qwen": "Qwen Code",
    "opencode": "opencode",
    "antigravity": "Antigravity CLI",
}
GEMINI_HOOK_NAME = "tmuxlocd"  # install's "name" of each Gemini hook
GEMINI_SYSTEM_SETTINGS = "/etc/gemini-cli/settings.json"

# Codex: the label of each event in hook-state keys and hashes, and the events whose matcher
# Codex ignores (left out of the hash).
CODEX_EVENT_LABELS = {
    "PreToolUse": "pre_tool_use",
    "PermissionRequest": "permission_request",
    "PostToolUse": "post_tool_use",
    "PreCompact": "pre_compact",
    "PostCompact": "post_compact",
    "SessionStart": "session_start",
    "UserPromptSubmit": "user_prompt_submit",
    "SubagentStart": "subagent_start",
    "SubagentStop": "subagent_stop",
    "Stop": "stop",
}
CODEX_NO_MATCHER = frozenset({"UserPromptSubmit", "Stop"})
CODEX_DEFAULT_TIMEOUT_S = 600
# The fields of a command hook whose effect on the hash is known.
CODEX_HASHED_FIELDS = frozenset({"type", "command", "timeout", "async", "statusMessage"})
CODEX_TRUST_FIX = (
    "start `codex` in a terminal, open /hooks and trust the tmuxlocd hooks (t trusts all "
    "listed; Codex also asks at start-up).  `codex exec` never asks: it skips untrusted hooks "
    "silently.  tmuxlocd never writes trust: that is your decision."
)


@dataclass(frozen=True)
class Finding:
    harness: str | None
    check: str
    status: str
    found: str
    fix: str | None = None


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
    ``install`` writes), and ``state`` (Codex: the user's ``config.toml``, where trust is
    kept whichever ``hooks.json``), ``claude_json`` (Claude Code's user MCP servers), and
    ``gemini_*`` (every settings file whose ``hooksConfig`` applies)."""
    found = dict(config_paths(harness, project, home, cwd, dict(env)))
    if harness == "codex":
        found["state"] = Path(env.get("CODEX_HOME") or home / ".codex") / "config.toml"
    elif harness == "claude" and not project:
        found["claude_json"] = home / ".claude.json"
    elif harness == "gemini":
        found["gemini_user"] = home / ".gemini" / "settings.json"
        found["gemini_workspace"] = cwd / ".gemini" / "settings.json"
        found["gemini_system"] = Path(
            env.get("GEMINI_CLI_SYSTEM_SETTINGS_PATH") or GEMINI_SYSTEM_SETTINGS
        )
    return found


def harness_dir(harness: str, home: Path, env: Mapping[str, str]) -> Path:
    """The user's configuration directory of ``harness``: there, the harness is in use."""
    if harness == "codex":
        return Path(env.get("CODEX_HOME") or home / ".codex")
    if harness == "copilot":
        return Path(env.get("COPILOT_HOME") or home / ".copilot")
    if harness == "opencode":
        return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "opencode"
    if harness == "antigravity":
        return home / ".gemini" / "config"
    return home / f".{harness}"


# ----------------------------------------------------------------------------------------------
# Our entries in a hooks file.


@dataclass(frozen=True)
class OurHook:
    event: str
    group: int  # the position of its matcher group in the event's list
    index: int  # its position in the group's hooks
    matcher: str | None
    entry: dict[str, Any]

    @property
    def command(self) -> str:
        return str(entry_command(self.entry) or "")


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
                if is_ours(entry_command(group)):  # a flat entry (Copilot CLI)
                    found.append(OurHook(str(event), g, 0, None, group))
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
    if harness == "opencode":
        text = texts.get(where["hooks"])
        argv = plugin_argv(text) if text else None
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
    path = where.get("mcp") or where.get("claude_json")
    if path is None:
        return None
    if path.suffix == ".toml":
        data, _ = _toml(texts.get(path), path)
        entry = _table(data, "mcp_servers", MCP_NAME)
    else:
        data, _ = _json(texts.get(path), path)
        entry = _table(data, "mcpServers", MCP_NAME)
    return entry if is_our_mcp(entry) else None


# ----------------------------------------------------------------------------------------------
# Codex trust.


def codex_hook_key(hooks_json: str, event: str, group: int, index: int) -> str:
    return f"{hooks_json}:{CODEX_EVENT_LABELS[event]}:{group}:{index}"


def codex_hook_hash(event: str, matcher: str | None, entry: Mapping[str, Any]) -> str | None:
    """The hash Codex trusts a command hook by (module docstring); None when the entry has a
    field whose part in the hash is not known here, or no command."""
    command = entry.get("command")
    if event not in CODEX_EVENT_LABELS or not isinstance(command, str):
        return None
    if not set(entry) <= CODEX_HASHED_FIELDS or entry.get("type", "command") != "command":
        return None
    timeout = entry.get("timeout")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
        return None
    handler: dict[str, Any] = {
        "type": "command",
        "command": command,
        "timeout": max(1, CODEX_DEFAULT_TIMEOUT_S if timeout is None else timeout),
        "async": bool(entry.get("async", False)),
    }
    status = entry.get("statusMessage")
    if status is not None:
        handler["statusMessage"] = status
    identity: dict[str, Any] = {"event_name": CODEX_EVENT_LABELS[event], "hooks": [handler]}
    if matcher is not None and event not in CODEX_NO_MATCHER:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _codex_states(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    states: dict[str, dict[str, Any]] = {}
    for key, value in _table(config, "hooks", "state").items():
        if isinstance(value, dict) and key.strip():
            states[key.strip()] = value
    return states


def codex_trust(
    hooks_json: Path, hooks: Sequence[OurHook], config: Mapping[str, Any], state_path: Path
) -> list[Finding]:
    """The trust and enablement of our hooks in Codex's hook state."""
    states = _codex_states(config)
    # The key carries the path as Codex spells it: absolute, not resolved; a link's target
    # is accepted too.
    spellings = list(dict.fromkeys([os.path.abspath(hooks_json), os.path.realpath(hooks_json)]))
    trusted, modified, untrusted, unknown, disabled = [], [], [], [], []
    present = 0
    for hook in hooks:
        if hook.event not in CODEX_EVENT_LABELS:
            continue
        state: dict[str, Any] | None = None
        for spelling in spellings:
            state = states.get(codex_hook_key(spelling, hook.event, hook.group, hook.index))
            if state is not None:
                break
        name = hook.event
        if state is not None and state.get("enabled") is False:
            disabled.append(name)
        recorded = state.get("trusted_hash") if state is not None else None
        if not isinstance(recorded, str):
            untrusted.append(name)
            continue
        present += 1
        current = codex_hook_hash(hook.event, hook.matcher, hook.entry)
        if current is None:
            unknown.append(name)
        elif recorded == current:
            trusted.append(name)
        else:
            modified.append(name)
    total = len([h for h in hooks if h.event in CODEX_EVENT_LABELS])
    found: list[Finding] = []
    if disabled:
        found.append(
            Finding(
                "codex",
                "hooks-enabled",
                PROBLEM,
                f"disabled in Codex's hook state: {', '.join(disabled)}",
                "start `codex`, open /hooks and enable the tmuxlocd hooks (or delete their "
                f'`enabled = false` under [hooks.state."…"] in {state_path})',
            )
        )
    if total and len(trusted) == total:
        found.append(
            Finding(
                "codex",
                "trust",
                OK,
                f"trusted: {total} of {total} hook commands (each recorded hash matches the "
                "installed command)",
            )
        )
        return found
    parts = [f"trust state present for {present} of {total} installed hook commands"]
    if trusted:
        parts.append(f"matching the installed command: {', '.join(trusted)}")
    if untrusted:
        parts.append(f"never trusted: {', '.join(untrusted)}")
    if modified:
        parts.append(
            f"trusted for another command (changed since, e.g. a moved installation or a new "
            f"floor; Codex lists them as modified and runs none): {', '.join(modified)}"
        )
    if unknown:
        parts.append(
            f"cannot verify (fields whose part in Codex's hash is not known): {', '.join(unknown)}"
        )
    status = PROBLEM if untrusted or modified else WARNING
    fix = CODEX_TRUST_FIX if status == PROBLEM else "start `codex` and open /hooks to review them"
    found.append(Finding("codex", "trust", status, "; ".join(parts), fix))
    return found


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
    app_servers: AppServers | None = None,
) -> list[Finding]:
    """Every finding for one harness.  ``texts``: each file of ``where`` (None: missing);
    ``paths``: the facts of ``named_paths``; ``explicit``: the user named this harness (else
    it was found by its directory, and an installation that is not there is a warning);
    ``mcp_available``: whether this installation has the MCP extra; ``exe_hint`` and
    ``python_hint``: this installation's command and interpreter, for the fixes;
    ``app_servers``: Codex's running shared app-servers and their clients
    (``shared_app_servers``; None: none looked at)."""
    found: list[Finding] = []
    hooks_path = where["hooks"]
    if harness == "opencode":
        return _opencode(where, texts, paths, explicit, project, python_hint)
    data, error = _json(texts.get(hooks_path), hooks_path)
    if data is None:
        if harness == "gemini" and not (texts.get(hooks_path) or "").startswith(UNREADABLE):
            # Gemini CLI reads its settings with comments; this doctor does not.
            return [
                Finding(
                    harness,
                    "config",
                    WARNING,
                    f"{error}: cannot check (Gemini CLI accepts comments in its settings; "
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
                f"tmuxlocd is not installed for {NAMES[harness]} ({hooks_path}: none of its hooks)",
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
    if harness == "codex":
        state_path = where["state"]
        config, error = _toml(texts.get(state_path), state_path)
        if config is None:
            found.append(
                Finding(
                    harness,
                    "trust",
                    PROBLEM,
                    f"{error}: Codex cannot read its hook state either",
                    "fix the file by hand",
                )
            )
        elif ours:
            found += codex_trust(hooks_path, ours, config, state_path)
            found += _codex_features(config, state_path)
            found.append(codex_app_servers(config, state_path, app_servers or list))
        if project and config is not None:
            found.append(_codex_project(config, cwd, state_path))
    found += _mcp(
        harness, project, where, texts, mcp_entry, paths, mcp_available, exe_hint, python_hint
    )
    return found


def _opencode(
    where: Mapping[str, Path],
    texts: Mapping[Path, str | None],
    paths: PathFacts,
    explicit: bool,
    project: bool,
    python_hint: str,
) -> list[Finding]:
    """opencode: the plugin file is ours, the one this version writes, and the command it
    runs exists."""
    path = where["hooks"]
    text = texts.get(path)
    install = "tmuxlocd install opencode" + (" --project" if project else "")
    if text is None or text.startswith(UNREADABLE):
        why = "no such file" if text is None else f"cannot be read ({text[1:]})"
        return [
            Finding(
                "opencode",
                "hooks",
                PROBLEM if explicit else WARNING,
                f"tmuxlocd is not installed for opencode ({path}: {why})",
                install,
            )
        ]
    argv = plugin_argv(text)
    if argv is None:
        return [
            Finding(
                "opencode",
                "hooks",
                PROBLEM,
                f"{path}: not tmuxlocd's plugin (or one this version cannot read)",
                f"move it aside, then {install}",
            )
        ]
    launcher = argv[:-1] if argv and argv[-1] == "opencode" else argv
    if text != plugin_text(launcher):
        # Written by an older tmuxlocd (or edited): it runs the hook, but not as this version
        # would (events it does not send, such as the agent's state).
        found = [
            Finding(
                "opencode",
                "hooks",
                WARNING,
                f"{path}: an older plugin than this tmuxlocd writes (or one edited since)",
                install + " (it rewrites its own plugin)",
            )
        ]
    else:
        found = [
            Finding("opencode", "hooks", OK, f"{path}: the plugin (system prompt, per request)")
        ]
    found += _commands(
        "opencode",
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
    want = HOOK_EVENTS[harness]
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
    if harness in ("claude", "qwen"):
        if data.get("disableAllHooks") is True:
            return [
                Finding(
                    harness,
                    "hooks-enabled",
                    PROBLEM,
                    f"{hooks_path}: disableAllHooks is true: {NAMES[harness]} runs no hook",
                    f'set "disableAllHooks": false in {hooks_path} (or remove it)',
                )
            ]
        return [Finding(harness, "hooks-enabled", OK, "disableAllHooks is not set")]
    if harness == "gemini":
        return _gemini_enabled(data, where, texts)
    return []  # Codex: in its hook state (codex_trust) and [features] (_codex_features)


def _gemini_enabled(
    data: Mapping[str, Any], where: Mapping[str, Path], texts: Mapping[Path, str | None]
) -> list[Finding]:
    """``hooksConfig.enabled`` (false: no hook runs) and ``hooksConfig.disabled`` (names or
    commands of hooks that do not run), in every settings file that applies."""
    files = [
        where["hooks"],
        where["gemini_user"],
        where["gemini_workspace"],
        where["gemini_system"],
    ]
    off: list[str] = []
    listed: list[str] = []
    unread: list[str] = []
    commands = {h.command for h in our_hooks(data)}
    for path in dict.fromkeys(files):
        settings, _ = _json(texts.get(path), path)
        if settings is None:
            unread.append(str(path))
            continue
        config = _table(settings, "hooksConfig")
        if config.get("enabled") is False:
            off.append(str(path))
        disabled = config.get("disabled")
        if isinstance(disabled, list) and (
            GEMINI_HOOK_NAME in disabled or commands & {str(d) for d in disabled}
        ):
            listed.append(str(path))
    found: list[Finding] = []
    if off:
        found.append(
            Finding(
                "gemini",
                "hooks-enabled",
                PROBLEM,
                f"hooksConfig.enabled is false in {', '.join(off)}: Gemini CLI runs no hook",
                f'set "hooksConfig": {{"enabled": true}} in {off[0]} (or remove the false)'
                + (f", and in {', '.join(off[1:])}" if off[1:] else ""),
            )
        )
    if listed:
        found.append(
            Finding(
                "gemini",
                "hooks-enabled",
                PROBLEM,
                f'"{GEMINI_HOOK_NAME}" is in hooksConfig.disabled in {", ".join(listed)}',
                f"in Gemini CLI: /hooks enable {GEMINI_HOOK_NAME} (or take it out of "
                f"hooksConfig.disabled in {listed[0]})",
            )
        )
    if unread:
        found.append(
            Finding(
                "gemini",
                "hooks-enabled",
                WARNING,
                f"cannot read hooksConfig in {', '.join(unread)} (not plain JSON: comments?)",
                "check hooksConfig.enabled and hooksConfig.disabled there by hand",
            )
        )
    if not found:
        found.append(
            Finding(
                "gemini",
                "hooks-enabled",
                OK,
                "hooksConfig.enabled is not false and tmuxlocd is not in hooksConfig.disabled",
            )
        )
    return found


def _codex_features(config: Mapping[str, Any], state_path: Path) -> list[Finding]:
    features = _table(config, "features")
    off = [k for k in ("hooks", "codex_hooks") if features.get(k) is False]
    if off:
        return [
            Finding(
                "codex",
                "hooks-enabled",
                PROBLEM,
                f"[features] {off[0]} = false in {state_path}: Codex runs no hook",
                f"set [features] {off[0]} = true in {state_path} (or remove the line)",
            )
        ]
    return []


AppServers = Callable[[], list[tuple[int, list[tuple[int, str]] | None]]]


def codex_app_servers(config: Mapping[str, Any], state_path: Path, running: AppServers) -> Finding:
    """Whether the Codex TUIs running now will be told their pane (spec §2): each with its
    own app-server (``daemon_auto_start = false``), or, on a shared one, a session begun while
    it has one TUI connected.  ``running``: each shared app-server's pid and its clients
    (pid, tty), None when they cannot be read (``shared_app_servers``)."""
    if _table(config, "features").get("daemon_auto_start") is False:
        return Finding(
            "codex",
            "app-server",
            OK,
            f"[features] daemon_auto_start = false in {state_path}: each TUI runs its own "
            "app-server, and every TUI is told its pane",
        )
    fix = (
        "tmuxlocd install codex --own-app-server (each TUI its own app-server), or run one "
        "Codex TUI at a time"
    )
    parts: list[str] = []
    status = OK
    for pid, clients in running():
        if clients is None:
            status = WARNING
            parts.append(f"app-server {pid}: which TUIs are connected cannot be read")
        elif len(clients) <= 1:
            who = f"TUI {clients[0][0]} on {clients[0][1]}" if clients else "no TUI"
            parts.append(f"app-server {pid}: {who} connected; a session begun now is told its pane")
        else:
            status = WARNING
            tuis = ", ".join(f"{p} on {t}" for p, t in clients)
            parts.append(
                f"app-server {pid}: {len(clients)} TUIs connected ({tuis}); a session begun "
                "now is told nothing (which TUI began it cannot be told), those begun "
                "alone keep their pane"
            )
    if not parts:
        parts.append(
            "no shared app-server runs now; a session begun while one TUI is connected to "
            "it is told its pane, one begun beside another TUI nothing"
        )
    return Finding("codex", "app-server", status, "; ".join(parts), fix if status != OK else None)


def shared_app_servers() -> list[tuple[int, list[tuple[int, str]] | None]]:
    """This user's Codex shared app-servers and their clients, each (pid, its tty's path)."""
    from tmuxlocd.host import shared
    from tmuxlocd.host.identity import read_stat, tty_path

    out: list[tuple[int, list[tuple[int, str]] | None]] = []
    for server in shared.servers():
        if server.kind != "codex_app_server":
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


def _codex_project(config: Mapping[str, Any], cwd: Path, state_path: Path) -> Finding:
    projects = _table(config, "projects")
    here = [str(cwd), *(str(p) for p in cwd.parents)]
    for path in here:
        level = _table(projects, path).get("trust_level")
        if level == "trusted":
            return Finding("codex", "project-trust", OK, f"{path} is a trusted project")
        if level is not None:
            return Finding(
                "codex",
                "project-trust",
                PROBLEM,
                f'{path}: trust_level = "{level}" in {state_path}: Codex does not read its .codex/',
                "start `codex` in this directory and trust it when asked",
            )
    return Finding(
        "codex",
        "project-trust",
        WARNING,
        f"no trusted project for {cwd} in {state_path}: Codex reads .codex/ only in a trusted "
        "project",
        "start `codex` in this directory and trust it when asked",
    )


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
    path = where.get("mcp") or where.get("claude_json")
    if path is None:  # opencode, Antigravity CLI, a repository's Copilot hooks: not written
        return []
    add = " ".join(shlex.quote(a) for a in [*exe_hint, "mcp"])
    if harness == "claude" and not project:
        fix = f"claude mcp add --scope user {MCP_NAME} -- {add}"
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
        status = WARNING if harness == "claude" and not project else PROBLEM
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
            "tmuxlocd serve  (or: tmuxlocd install systemd, then systemctl --user enable "
            "--now tmuxlocd.socket)",
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
        "tmuxlocd is installed for no harness (found none of ~/.claude, ~/.codex, ~/.gemini, "
        "~/.copilot, ~/.qwen, ~/.config/opencode, ~/.gemini/config with its hooks)",
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
        lines.append(NAMES[harness] if harness else "tmuxlocd")
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
