"""``tmuxlocd install <harness>``: the hooks of ``tmuxlocd context`` and the MCP server entry in
a harness's configuration (SPEC §10).

The edits are pure functions of the file's text (``plan_files``); ``main`` reads, diffs and
writes.  Every entry is recognised by its command (``tmuxlocd context <harness>``,
``tmuxlocd mcp``), so installing twice changes nothing the second time, installing again
with other options replaces what was there, and ``--remove`` takes out exactly those entries
and the containers it left empty.  A file that cannot be parsed is never touched.

``--allow-sandbox`` adds the daemon's socket, and nothing else, to the one per-socket allow
list a harness has (Claude Code's ``sandbox.network.allowUnixSockets``), so that the sandboxed
shell tool can ask the daemon where it is: the daemon answers read-only questions and checks
its peer.  Nothing else of the sandbox is changed; ``--remove`` takes that entry out with the
rest.  A harness without such a list gets nothing written and is told why (SPEC §7, §8).

Formatting: JSON files are written back with their own indentation, key order and final
newline (byte for byte what they were when they were written as ``JSON.stringify(x, null,
2)`` is, as these harnesses write them); TOML (``~/.codex/config.toml``) is edited with
``tomlkit``, which keeps comments, ordering and spacing.

``tmuxlocd install systemd`` writes the user units shipped in the package
(``tmuxlocd/data/tmuxlocd.service`` and ``.socket``) to ``~/.config/systemd/user/``.  A unit
already there that differs from the packaged one is never overwritten (nor removed): the
diff is shown and the command fails, for the user to merge by hand.
"""

from __future__ import annotations

import copy
import difflib
import importlib.resources
import json
import os
import re
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tmuxlocd.core import harnesses
from tmuxlocd.core.harnesses.base import FLAT, PLUGIN, Harness, Toggle, expand

HARNESSES = harnesses.NAMES
MCP_NAME = "tmux"


def __getattr__(name: str) -> Any:
    """The tables earlier versions kept here, from the descriptions."""
    if name not in ("HOOK_EVENTS",):  # (``hasattr`` asks for others: load nothing)
        raise AttributeError(name)
    if name == "HOOK_EVENTS":
        return {h.name: h.installed_events for h in harnesses.every()}
    raise AttributeError(name)


# Where the events are: under "hooks", or under a hook's name at the top level (Antigravity
# CLI's, ``Harness.hooks_key``).  ``remove_hooks`` takes ours out of every one of them (an
# earlier install may have written a harness's under another).
HOOK_CONTAINERS = ("hooks", *sorted({h.hooks_key for h in harnesses.every()} - {"hooks"}))

# The hook's file is ``tmuxlocd/clients/context.py``; installs before the package had layers
# wrote ``tmuxlocd/context.py`` (still shipped, it runs the same hook): both are ours.
_OURS = re.compile(
    r"(?:(?:^|[\s/'\"])tmuxlocd['\"]?\s+context|/tmuxlocd/(?:clients/)?context\.py['\"]?)"
    r"\s+(?:" + "|".join(map(re.escape, HARNESSES)) + r")\b"
)


class InstallError(Exception):
    """A file that cannot be edited safely (it does not parse, or has an unexpected shape)."""


# ----------------------------------------------------------------------------------------------
# Pure: commands and entries.


def is_ours(command: object) -> bool:
    return isinstance(command, str) and _OURS.search(command) is not None


def hook_command(
    launcher: Sequence[str], harness: str, min_interval_ms: int = 0, event: str = ""
) -> str:
    """The hook's shell command: ``launcher`` (``[<python>, -S, <package>/clients/context.py]`` or
    ``[<tmuxlocd>, context]``), the harness, the floor, and for a harness that writes no event
    name on stdin, the event."""
    argv = [*launcher, harness]
    if min_interval_ms:
        argv += ["--min-interval-ms", str(min_interval_ms)]
    if event:
        argv += ["--event", event]
    return " ".join(shlex.quote(a) for a in argv)


def hook_entry(harness: str, command: str) -> dict[str, Any]:
    return harnesses.get(harness).entry(command)


def entry_command(entry: object) -> object:
    """The command of a hook entry: ``command``, or Copilot CLI's ``bash``."""
    if not isinstance(entry, dict):
        return None
    return entry.get("command", entry.get("bash"))


def _object(value: object, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InstallError(f"{where} is not a JSON object")
    return value


def remove_hooks(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without any hook running ``tmuxlocd context``, nor the groups, events and
    ``hooks`` object (or Antigravity CLI's named hook, ``HOOKS_KEY``) that left empty."""
    out = copy.deepcopy(data)
    for key in HOOK_CONTAINERS:
        _remove_from(out, key)
    return out


def _remove_from(out: dict[str, Any], key: str) -> None:
    hooks = out.get(key)
    if hooks is None:
        return
    hooks = _object(hooks, f'"{key}"')
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept = []
        for group in groups:
            if isinstance(group, dict) and "hooks" not in group and is_ours(entry_command(group)):
                continue  # a flat entry (Copilot CLI) of ours
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                kept.append(group)
                continue
            mine = [e for e in entries if isinstance(e, dict) and is_ours(e.get("command"))]
            if not mine:
                kept.append(group)
            elif len(mine) < len(entries):
                kept.append({**group, "hooks": [e for e in entries if e not in mine]})
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if not hooks:
        del out[key]


def add_hooks(
    data: dict[str, Any], harness: str, command: str, launcher: Sequence[str] = ()
) -> dict[str, Any]:
    """``data`` with this harness's hooks running ``command`` (any older ones replaced).  For
    a harness that needs the event in the command (``event_in_argv``), ``command`` is the
    hook without it and each event's command adds ``--event <event>``."""
    spec = harnesses.get(harness)
    out = remove_hooks(data)
    missing = {k: v for k, v in spec.file_header.items() if k not in out}
    if missing:
        out = {**missing, **out}
    key = spec.hooks_key
    hooks = _object(out.setdefault(key, {}), f'"{key}"')
    for event, matcher in spec.installed_events:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InstallError(f'"{key}.{event}" is not a list')
        this = f"{command} --event {shlex.quote(event)}" if spec.event_in_argv else command
        if spec.layout == FLAT:
            # A flat entry carries its own matcher (Crush's, Kiro CLI's).
            entry = hook_entry(harness, this)
            groups.append({"matcher": matcher, **entry} if matcher is not None else entry)
            continue
        group: dict[str, Any] = {"matcher": matcher} if matcher is not None else {}
        group["hooks"] = [hook_entry(harness, this)]
        groups.append(group)
    return out


def mcp_entry(exe: Sequence[str]) -> dict[str, Any]:
    return {"command": exe[0], "args": [*exe[1:], "mcp"]}


def is_our_mcp(entry: object) -> bool:
    if not isinstance(entry, dict):
        return False
    command, args = entry.get("command"), entry.get("args")
    if not isinstance(command, str) or not isinstance(args, list) or not args:
        return False
    words = [command, *[str(a) for a in args]]
    return words[-1] == "mcp" and any(
        w == "tmuxlocd" or w.endswith("/tmuxlocd") for w in words[:-1]
    )


def add_mcp(
    data: dict[str, Any], exe: Sequence[str], harness: str = ""
) -> tuple[dict[str, Any], str | None]:
    """``data`` with ``mcpServers.tmux``; a note when a server of that name is someone
    else's (left alone); in the harness's shape (``Harness.mcp_entry``)."""
    out = copy.deepcopy(data)
    servers = _object(out.setdefault("mcpServers", {}), '"mcpServers"')
    current = servers.get(MCP_NAME)
    if current is not None and not is_our_mcp(current):
        return copy.deepcopy(data), f'an MCP server named "{MCP_NAME}" exists: left alone'
    entry = mcp_entry(exe)
    shape = harnesses.get(harness).mcp_entry if harness else None
    servers[MCP_NAME] = shape(entry) if shape is not None else entry
    return out, None


def remove_mcp(data: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(data)
    servers = out.get("mcpServers")
    if isinstance(servers, dict) and is_our_mcp(servers.get(MCP_NAME)):
        del servers[MCP_NAME]
        if not servers:
            del out["mcpServers"]
    return out


# ----------------------------------------------------------------------------------------------
# Pure: the harness's sandbox and the daemon's socket.

ALLOW_SANDBOX = "--allow-sandbox"

# A harness with a per-socket allow list in its settings (``Harness.socket_list``: Claude
# Code's ``sandbox.network.allowUnixSockets``, docs/harnesses.md) gets the daemon's socket
# there; the functions below edit a list of that shape.


def _sandbox_network(data: dict[str, Any]) -> dict[str, Any] | None:
    """``sandbox.network`` of the settings (None when absent); an error for a shape this
    cannot edit safely."""
    sandbox = data.get("sandbox")
    if sandbox is None:
        return None
    network = _object(sandbox, '"sandbox"').get("network")
    if network is None:
        return None
    return _object(network, '"sandbox.network"')


def allowed_sockets(data: dict[str, Any]) -> list[str]:
    """The paths in ``sandbox.network.allowUnixSockets`` ([] when absent)."""
    network = _sandbox_network(data)
    sockets = [] if network is None else network.get("allowUnixSockets", [])
    if not isinstance(sockets, list) or not all(isinstance(s, str) for s in sockets):
        raise InstallError('"sandbox.network.allowUnixSockets" is not a list of paths')
    return sockets


# The daemon's socket wherever paths.default_socket_path puts it without TMUXLOCD_SOCKET.
_DEFAULT_SOCKET = re.compile(r"/(?:.+/tmuxlocd|tmp/tmuxlocd-\d+)/tmuxlocd\.sock")


def is_our_socket(path: str, socket: str) -> bool:
    """``path`` is the daemon's socket: ``socket`` (where clients look now), or where the
    daemon listens by default in another environment (another ``XDG_RUNTIME_DIR``)."""
    return path == socket or _DEFAULT_SOCKET.fullmatch(path) is not None


def add_sandbox_socket(data: dict[str, Any], socket: str) -> dict[str, Any]:
    """``data`` with ``socket`` in ``sandbox.network.allowUnixSockets`` (once, replacing a
    default path of the daemon's from another environment); nothing else of ``sandbox`` is
    touched (not ``enabled``, not ``allowAllUnixSockets``)."""
    if not os.path.isabs(socket):
        raise InstallError(f"the daemon's socket {socket!r} is not an absolute path")
    if socket in allowed_sockets(data):
        return copy.deepcopy(data)
    out = remove_sandbox_socket(data, socket)
    sandbox = _object(out.setdefault("sandbox", {}), '"sandbox"')
    network = _object(sandbox.setdefault("network", {}), '"sandbox.network"')
    network.setdefault("allowUnixSockets", []).append(socket)
    return out


def remove_sandbox_socket(data: dict[str, Any], socket: str) -> dict[str, Any]:
    """``data`` without the daemon's socket (``is_our_socket``) in
    ``sandbox.network.allowUnixSockets``, nor the list, ``network`` and ``sandbox`` objects
    that left empty."""
    if not any(is_our_socket(s, socket) for s in allowed_sockets(data)):
        return copy.deepcopy(data)
    out = copy.deepcopy(data)
    sandbox = out["sandbox"]
    network = sandbox["network"]
    network["allowUnixSockets"] = [
        s for s in network["allowUnixSockets"] if not is_our_socket(s, socket)
    ]
    if not network["allowUnixSockets"]:
        del network["allowUnixSockets"]
        if not network:
            del sandbox["network"]
            if not sandbox:
                del out["sandbox"]
    return out


def sandbox_notes(
    harness: str,
    socket: str,
    *,
    allow: bool,
    platform: str,
    allowed: bool = False,
    allow_all: bool = False,
    sandboxed: bool = True,
) -> list[str]:
    """What ``install`` says about the harness's sandbox (its description's
    ``sandbox_notes``): with ``allow`` (``--allow-sandbox``), what the allow does or why
    nothing was written; without it, a one-line offer where the flag would do something.
    ``allowed``: the socket is in the harness's list already; ``allow_all``: its
    ``allowAllUnixSockets`` is true; ``sandboxed``: the harness is set to sandbox."""
    spec = harnesses.get(harness)
    notes = spec.sandbox_notes(
        socket,
        allow=allow,
        platform=platform,
        allowed=allowed,
        allow_all=allow_all,
        sandboxed=sandboxed,
    )
    if notes or not allow or spec.socket_list:
        return notes
    return [
        (
            f"nothing written for {harness}'s sandbox: tmuxlocd knows no setting there that "
            "allows one Unix socket"
        )
    ]


# ----------------------------------------------------------------------------------------------
# Pure: file texts.


def load_json(text: str, path: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise InstallError(f"{path}: not valid JSON ({exc}); left untouched") from None
    if not isinstance(value, dict):
        raise InstallError(f"{path}: not a JSON object; left untouched")
    return value


def json_indent(text: str) -> int | str:
    """The indentation of a JSON text's first nested line (2 if none)."""
    for line in text.splitlines()[1:]:
        stripped = line.lstrip(" \t")
        if stripped and len(stripped) < len(line):
            lead = line[: len(line) - len(stripped)]
            return lead if "\t" in lead else len(lead)
    return 2


def dump_json(data: dict[str, Any], like: str) -> str:
    """``data`` formatted as ``like`` is; "" (no file) for an empty object, which every
    harness reads as it reads a missing file."""
    if not data:
        return ""
    text = json.dumps(data, indent=json_indent(like), ensure_ascii=False)
    return text + "\n" if like.endswith("\n") or not like else text


def edit_json(text: str, path: str, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> str:
    before = load_json(text, path)
    try:
        after = edit(before)
    except InstallError as exc:
        raise InstallError(f"{path}: {exc}; left untouched") from None
    if after == before:
        return text  # nothing to do: not even the formatting changes
    return dump_json(after, text)


def toml_block(exe: Sequence[str], env_vars: Sequence[str]) -> str:
    """The table ``install`` appends to a TOML configuration (``[mcp_servers.tmux]``)."""
    import tomlkit

    want = {**mcp_entry(exe), "env_vars": list(env_vars)}
    return tomlkit.dumps({"mcp_servers": {MCP_NAME: want}})


def edit_toml_mcp(
    text: str, path: str, exe: Sequence[str] | None, env_vars: Sequence[str] = ()
) -> tuple[str, str | None]:
    """A TOML configuration with ``[mcp_servers.tmux]`` (``exe`` given) or without it (None);
    ``env_vars``: the variables the harness passes on to the server (it starts MCP servers
    with a cleared environment).

    A new table is appended as text after one blank line, so everything else stays byte for
    byte, and removing it restores the file exactly (a file without a final newline gets
    one).  An existing entry of ours is updated in place by tomlkit, which keeps comments and
    layout.
    """
    import tomlkit
    from tomlkit.exceptions import TOMLKitError
    from tomlkit.items import InlineTable

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InstallError(f"{path}: not valid TOML ({exc}); left untouched") from None
    servers = doc.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise InstallError(f"{path}: mcp_servers is not a table; left untouched")
    current = servers.get(MCP_NAME) if servers is not None else None
    ours = isinstance(current, dict) and is_our_mcp(dict(current))
    if exe is None:
        if not ours or servers is None:
            return text, None
        block = toml_block(exe_of(current), env_vars)
        if text.endswith(block):  # as install appended it
            head = text[: len(text) - len(block)]
            return (head[:-1] if head.endswith("\n\n") else head), None
        del servers[MCP_NAME]
        return tomlkit.dumps(doc), None
    if current is not None and not ours:
        return text, f'an MCP server named "{MCP_NAME}" exists in {path}: left alone'
    want = {**mcp_entry(exe), "env_vars": list(env_vars)}
    if isinstance(current, dict) and ours:
        if {k: current.get(k) for k in want} == want:
            return text, None
        for key, value in want.items():
            current[key] = value
        return tomlkit.dumps(doc), None
    if isinstance(servers, InlineTable):
        raise InstallError(
            f"{path}: mcp_servers is an inline table; add [mcp_servers.{MCP_NAME}]"
            " by hand (command, args, env_vars); left untouched"
        )
    sep = "" if not text else "\n" if text.endswith("\n") else "\n\n"
    out = text + sep + toml_block(exe, env_vars)
    try:
        tomlkit.parse(out)
    except TOMLKitError as exc:  # e.g. a [mcp_servers.tmux.env] table of someone else's
        raise InstallError(f"{path}: cannot add [mcp_servers.{MCP_NAME}] ({exc})") from None
    return out, None


def edit_toggle(
    text: str, path: str, toggle: Toggle, *, on: bool, remove: bool
) -> tuple[str, str | None]:
    """A TOML configuration with ``[<table>] <key> = <value>`` (``on``: the harness's
    ``Toggle``, ``install --<flag>``), the value before it kept in the line's comment;
    ``remove`` puts back what was there (the value, or no line at all).  A value the user
    set is never taken out by ``remove``."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InstallError(f"{path}: not valid TOML ({exc}); left untouched") from None
    from tomlkit.items import Table

    name, key = toggle.table, toggle.key
    features = doc.get(name)
    if features is not None and not isinstance(features, Table):
        raise InstallError(f"{path}: {name} is not a [{name}] table; left untouched")
    current = features.get(key) if features is not None else None
    comment = ""
    if current is not None and features is not None:
        comment = str(getattr(features.item(key), "trivia").comment)  # noqa: B009
    ours = toggle.mark in comment
    if remove:
        if not ours or features is None:
            return text, None
        before = comment.split(toggle.mark, 1)[1].strip()
        block = _toggle_block(toggle, "unset")
        if before == "unset" and text.endswith(block):  # as install appended it
            head = text[: len(text) - len(block)]
            return (head[:-1] if head.endswith("\n\n") else head), None
        if before in ("true", "false"):
            features[key] = before == "true"
            trivia = getattr(features.item(key), "trivia")  # noqa: B009
            trivia.comment = trivia.comment_ws = ""
        else:
            del features[key]
            if not features:
                del doc[name]
        return tomlkit.dumps(doc), None
    if not on or ours or current is toggle.value:
        return text, None
    before = "unset" if current is None else str(bool(current)).lower()
    if features is None:  # appended as text: everything else stays byte for byte
        sep = "" if not text else "\n" if text.endswith("\n") else "\n\n"
        return text + sep + _toggle_block(toggle, before), toggle.note
    item = tomlkit.item(toggle.value)
    item.comment(f"{toggle.mark} {before}")
    features[key] = item
    return tomlkit.dumps(doc), toggle.note


def _toggle_block(toggle: Toggle, before: str) -> str:
    value = "true" if toggle.value else "false"
    return f"[{toggle.table}]\n{toggle.key} = {value}  # {toggle.mark} {before}\n"


def exe_of(entry: Any) -> list[str]:
    """The command words of an MCP entry, without its final ``mcp``."""
    return [str(entry.get("command")), *[str(a) for a in entry.get("args", [])][:-1]]


def _drop_header(spec: Harness, data: dict[str, Any]) -> dict[str, Any]:
    """A hooks file left with nothing but the keys a new one starts with is no file (what
    install created)."""
    if spec.file_header and set(data) == set(spec.file_header):
        return {}
    return data


# ----------------------------------------------------------------------------------------------
# A plugin file (``Harness.layout`` PLUGIN: opencode's; docs/harnesses.md), shipped as
# ``tmuxlocd/data/<harness>-plugin.js`` with ``const ARGV = [];`` for the hook's command.

_ARGV_LINE = "const ARGV = "


def plugin_mark(harness: str) -> str:
    """The first line of a plugin of ours."""
    return f"// tmuxlocd {harness} plugin"


def plugin_text(launcher: Sequence[str], harness: str) -> str:
    """The plugin, running ``launcher`` + the harness as its hook command."""
    argv = json.dumps([*launcher, harness], ensure_ascii=False)
    text = packaged_file(f"{harness}-plugin.js")
    return text.replace("const ARGV = [];", f"{_ARGV_LINE}{argv};")


def plugin_argv(text: str, harness: str) -> list[str] | None:
    """The hook command a plugin of ours runs; None for a file that is not ours."""
    if not text.startswith(plugin_mark(harness)):
        return None
    for line in text.splitlines():
        if line.startswith(_ARGV_LINE):
            try:
                value = json.loads(line[len(_ARGV_LINE) :].rstrip(";"))
            except ValueError:
                return None
            if isinstance(value, list) and all(isinstance(w, str) for w in value):
                return value
    return None


def plan_plugin(
    text: str, path: str, launcher: Sequence[str], harness: str, *, remove: bool
) -> str:
    """The plugin file after install (ours, written whole) or remove (gone); a file of the
    same name that is not ours is left alone."""
    if text and not text.startswith(plugin_mark(harness)):
        raise InstallError(f"{path}: not tmuxlocd's plugin; left untouched")
    return "" if remove else plugin_text(launcher, harness)


# ----------------------------------------------------------------------------------------------
# Where each harness keeps its configuration.


class FilePlan:
    """One file: its path, the text before and after, and a note for the user."""

    def __init__(self, path: Path, before: str, after: str, notes: list[str]) -> None:
        self.path = path
        self.before = before
        self.after = after
        self.notes = notes

    @property
    def changed(self) -> bool:
        return self.before != self.after


def resolve(
    templates: dict[str, str], home: Path, cwd: Path, env: dict[str, str]
) -> dict[str, Path]:
    """Path templates of a description (``base.expand``) as paths."""
    return {role: Path(expand(t, str(home), str(cwd), env)) for role, t in templates.items()}


def config_paths(
    harness: str, project: bool, home: Path, cwd: Path, env: dict[str, str]
) -> dict[str, Path]:
    """The files to edit: ``hooks`` and ``mcp`` (the same file for some harnesses; no
    ``mcp`` where none is written; ``hooks`` is a plugin's file for a plugin), from the
    harness's description."""
    spec = harnesses.get(harness)
    return resolve(spec.project_files if project else spec.user_files, home, cwd, env)


def sandbox_step(
    harness: str,
    text: str,
    path: str,
    socket: str,
    *,
    allow: bool,
    remove: bool,
    platform: str,
    env: dict[str, str],
) -> tuple[str, list[str]]:
    """The settings file holding the harness's per-socket allow list with the daemon's
    socket allowed (``allow``) or taken out (``remove``), and what to tell the user."""
    spec = harnesses.get(harness)
    listed = bool(spec.socket_list)
    if listed and remove:
        return edit_json(text, path, lambda d: remove_sandbox_socket(d, socket)), []
    if remove:
        return text, []
    if listed and allow:
        text = edit_json(text, path, lambda d: add_sandbox_socket(d, socket))
    data = load_json(text, path)
    try:
        allowed = listed and socket in allowed_sockets(data)
        network = _sandbox_network(data) if listed else None
    except InstallError as exc:
        raise InstallError(f"{path}: {exc}; left untouched") from None
    return text, sandbox_notes(
        harness,
        socket,
        allow=allow,
        platform=platform,
        allowed=allowed,
        allow_all=network is not None and network.get("allowAllUnixSockets") is True,
        sandboxed=spec.sandboxed is not None and spec.sandboxed(data, env),
    )


def sandbox_path(harness: str, project: bool, paths: dict[str, Path]) -> Path:
    """Where ``--allow-sandbox`` writes: the hooks' settings file, or with ``--project`` the
    file the description names beside it (Claude Code's ``.claude/settings.local.json``,
    this machine's, where its ``/sandbox`` writes too), never the shared project file,
    since the path is this machine's."""
    local = harnesses.get(harness).project_sandbox_file
    if project and local:
        return paths["hooks"].with_name(local)
    return paths["hooks"]


def plan_files(
    harness: str,
    texts: dict[Path, str],
    paths: dict[str, Path],
    exe: Sequence[str],
    hook: Sequence[str],
    *,
    remove: bool,
    min_interval_ms: int = 0,
    socket: str | None = None,
    allow_sandbox: bool = False,
    platform: str = sys.platform,
    env: dict[str, str] | None = None,
    sandbox_file: Path | None = None,
    own_app_server: bool = False,
) -> list[FilePlan]:
    """The new text of every file (``texts``: the current ones, "" for a missing file).

    ``socket``: the daemon's socket; with ``allow_sandbox``, allowed in the harness's sandbox
    where it has a per-socket allow list; taken out of that list by ``remove``; None leaves
    the sandbox settings alone and says nothing of them.  ``sandbox_file``: where that entry
    goes (its text in ``texts``), the hooks' file when None.  ``own_app_server``: the
    harness's ``Toggle`` on (its flag)."""
    spec = harnesses.get(harness)
    command = hook_command(hook, harness, min_interval_ms)
    notes: dict[Path, list[str]] = {p: [] for p in paths.values()}
    after = dict(texts)

    def json_step(path: Path, edit: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        after[path] = edit_json(after[path], str(path), edit)

    hooks_path = paths["hooks"]
    plugin = spec.layout == PLUGIN
    if plugin:
        after[hooks_path] = plan_plugin(
            texts[hooks_path], str(hooks_path), hook, harness, remove=remove
        )
    elif remove:
        json_step(hooks_path, lambda d: _drop_header(spec, remove_hooks(d)))
    else:
        json_step(hooks_path, lambda d: add_hooks(d, harness, command))
    box = sandbox_file or hooks_path
    notes.setdefault(box, [])
    if socket is not None and not plugin:  # a plugin: no sandbox setting there
        try:
            after[box], said = sandbox_step(
                harness,
                after[box],
                str(box),
                socket,
                allow=allow_sandbox,
                remove=remove,
                platform=platform,
                env=env or {},
            )
            notes[box] += said
        except InstallError as exc:
            if allow_sandbox and not remove:
                raise
            # Not asked to allow anything: an odd sandbox setting is no reason to refuse the
            # hooks; it is left as it is, and said.
            notes[box].append(str(exc))
    manifest = paths.get("manifest")
    if manifest is not None and spec.manifest is not None:
        ours = json.dumps(spec.manifest, indent=2) + "\n"
        now = texts.get(manifest, "")
        if now and now != ours:
            notes.setdefault(manifest, []).append(f"{manifest}: not tmuxlocd's; left alone")
        else:
            after[manifest] = "" if remove else ours
    mcp_path = paths.get("mcp")
    toml = mcp_path is not None and mcp_path.suffix == ".toml"
    if toml and spec.toggle is not None and mcp_path is not None:
        after[mcp_path], note = edit_toggle(
            after[mcp_path], str(mcp_path), spec.toggle, on=own_app_server, remove=remove
        )
        if note:
            notes[mcp_path].append(note)
    if toml and mcp_path is not None:
        after[mcp_path], note = edit_toml_mcp(
            after[mcp_path], str(mcp_path), None if remove else exe, spec.toml_env_vars
        )
        if note:
            notes[mcp_path].append(note)
    elif mcp_path is not None:
        if remove:
            json_step(mcp_path, remove_mcp)
        else:

            def with_mcp(d: dict[str, Any]) -> dict[str, Any]:
                new, note = add_mcp(d, exe, harness)
                if note:
                    notes[mcp_path].append(note)
                return new

            json_step(mcp_path, with_mcp)
    files = dict.fromkeys(paths.values())
    if box not in files and (after[box] != texts[box] or notes[box]):
        files[box] = None  # the project's local settings: only when there is news of them
    return [FilePlan(p, texts[p], after[p], notes[p]) for p in files]


def next_steps(harness: str, project: bool, exe: Sequence[str], remove: bool) -> list[str]:
    """What the user still has to do (the description's ``next_steps``/``remove_steps``)."""
    spec = harnesses.get(harness)
    steps = spec.remove_steps(project) if remove else spec.next_steps(project, exe)
    if remove:
        return steps
    try:
        import importlib.util

        if importlib.util.find_spec("mcp") is None:
            steps.append("The MCP server needs the extra: pip install 'tmuxlocd[mcp]'.")
    except (ImportError, ValueError):
        pass
    return steps


# ----------------------------------------------------------------------------------------------
# I/O.


def this_hook() -> list[str]:
    """How a hook starts ``tmuxlocd context`` fastest: this interpreter with ``-S`` on the
    module's file (site's start-up is most of a hook's cost, and the module needs only the
    standard library until it falls back to computing without a daemon); the command
    otherwise (a package that is not plain files)."""
    from tmuxlocd.clients import context

    path = os.path.abspath(context.__file__)
    if os.path.isfile(path) and path.endswith(os.path.join("tmuxlocd", "clients", "context.py")):
        return [os.path.abspath(sys.executable), "-S", path]
    return [*this_tmuxlocd(), "context"]


def this_tmuxlocd() -> list[str]:
    """This installation's command, by absolute path: a virtualenv is not on a harness's
    PATH.  Not a script whose ``#!`` interpreter is gone (a moved virtualenv's scripts name
    the old one): this interpreter with ``-m`` then."""
    beside = os.path.join(os.path.dirname(sys.executable), "tmuxlocd")
    if os.access(beside, os.X_OK) and _interpreter_runs(beside):
        return [os.path.abspath(beside)]
    argv0 = sys.argv[0] if sys.argv else ""
    if (
        os.path.basename(argv0) == "tmuxlocd"
        and os.access(argv0, os.X_OK)
        and _interpreter_runs(argv0)
    ):
        return [os.path.abspath(argv0)]
    return [os.path.abspath(sys.executable), "-m", "tmuxlocd"]


def script_interpreter(path: str) -> str | None:
    """The absolute interpreter a script's ``#!`` line names; None for anything else (a
    binary, a relative or no ``#!``, a file that cannot be read)."""
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].split()
    if not words or not words[0].startswith(b"/"):
        return None
    return os.fsdecode(words[0])


def _interpreter_runs(path: str) -> bool:
    interpreter = script_interpreter(path)
    return interpreter is None or os.access(interpreter, os.X_OK)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except UnicodeDecodeError:
        raise InstallError(f"{path}: not UTF-8 text; left untouched") from None


def _write(path: Path, text: str) -> None:
    if not text:
        path.unlink(missing_ok=True)  # what install created and remove emptied
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = None
    tmp = path.with_name(f".{path.name}.tmuxlocd-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if mode is None else mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        if mode is None:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def diff(plan: FilePlan) -> str:
    return "".join(
        difflib.unified_diff(
            plan.before.splitlines(keepends=True),
            plan.after.splitlines(keepends=True),
            fromfile=f"{plan.path} (now)",
            tofile=f"{plan.path} (after)",
        )
    )


def run(
    harness: str,
    *,
    project: bool = False,
    dry_run: bool = False,
    remove: bool = False,
    min_interval_ms: int = 0,
    allow_sandbox: bool = False,
    own_app_server: bool = False,
    home: Path | None = None,
    cwd: Path | None = None,
    exe: Sequence[str] | None = None,
    hook: Sequence[str] | None = None,
    out: Callable[[str], None] = print,
) -> int:
    if harness == "systemd":
        if project:
            out("tmuxlocd: systemd units are the user's; --project does not apply")
            return 2
        if allow_sandbox:
            out(f"tmuxlocd: systemd units have no sandbox to allow; {ALLOW_SANDBOX} does not apply")
            return 2
        return run_systemd(dry_run=dry_run, remove=remove, home=home, out=out)
    if harness == "launchd":
        if project or allow_sandbox or own_app_server:
            out("tmuxlocd: a LaunchAgent is the user's, with no sandbox: no option applies")
            return 2
        from tmuxlocd.clients.launchd import run_launchd
        from tmuxlocd.host.paths import default_socket_path

        environ = dict(os.environ)
        where = home or Path.home()
        return run_launchd(
            exe=list(exe or this_tmuxlocd()),
            socket=default_socket_path({**environ, "HOME": str(where)}, "darwin"),
            home=where,
            env=environ,
            dry_run=dry_run,
            remove=remove,
            out=out,
        )
    if harness not in HARNESSES:
        out(f"tmuxlocd: unknown harness {harness!r} (one of {', '.join(HARNESSES)})")
        return 2
    toggle = harnesses.get(harness).toggle
    if own_app_server and (toggle is None or toggle.flag != "--own-app-server"):
        owners = [
            h.title for h in harnesses.every() if h.toggle and h.toggle.flag == "--own-app-server"
        ]
        out(
            f"tmuxlocd: --own-app-server is {', '.join(owners)}'s (its shared app-server); not for "
            + harness
        )
        return 2
    exe = list(exe or this_tmuxlocd())
    hook = list(hook or this_hook())
    environ = dict(os.environ)
    paths = config_paths(harness, project, home or Path.home(), cwd or Path.cwd(), environ)
    from tmuxlocd.host.paths import client_socket_path

    box = sandbox_path(harness, project, paths)
    try:
        texts = {p: _read(p) for p in dict.fromkeys([*paths.values(), box])}
        plans = plan_files(
            harness,
            texts,
            paths,
            exe,
            hook,
            remove=remove,
            min_interval_ms=min_interval_ms,
            socket=os.path.abspath(client_socket_path(environ)),
            allow_sandbox=allow_sandbox,
            env=environ,
            sandbox_file=box,
            own_app_server=own_app_server,
        )
    except InstallError as exc:
        out(f"tmuxlocd: {exc}")
        return 1
    for plan in plans:
        for note in plan.notes:
            out(f"note: {note}")
        if not plan.changed:
            out(f"unchanged: {plan.path}")
        elif dry_run:
            out(diff(plan).rstrip("\n"))
        else:
            _write(plan.path, plan.after)
            out(f"{'removed from' if remove else 'updated'}: {plan.path}")
    if dry_run:
        out("(dry run: nothing written)")
        return 0
    for step in next_steps(harness, project, exe, remove):
        out(f"next: {step}")
    return 0


def found_harnesses(
    home: Path, env: dict[str, str], which: Callable[[str], str | None]
) -> list[tuple[str, str | None]]:
    """Each harness and why it is skipped (None: it is on this machine: its configuration
    directory exists, or its command is on PATH)."""
    out: list[tuple[str, str | None]] = []
    for spec in harnesses.every():
        where = Path(expand(spec.home_dir, str(home), str(home), env))
        if where.is_dir() or which(spec.binary):
            out.append((spec.name, None))
        else:
            out.append((spec.name, f"no {where} and no {spec.binary} on PATH"))
    return out


def run_all(*, out: Callable[[str], None] = print, **options: Any) -> tuple[int, list[str]]:
    """``tmuxlocd install`` with no harness named: every harness found on this machine, and
    which were skipped and why.  (The worst status, the harnesses installed.)"""
    import shutil

    env = dict(os.environ)
    home = options.get("home") or Path.home()
    status, done = 0, []
    for name, skipped in found_harnesses(
        home, env, lambda b: shutil.which(b, path=env.get("PATH"))
    ):
        if skipped is not None:
            out(f"skipped {name}: {skipped}")
            continue
        out(f"== {harnesses.get(name).title} ({name})")
        code = run(name, out=out, **options)
        status = max(status, code)
        if code == 0:
            done.append(name)
    if not done:
        out("tmuxlocd: no harness found to install for")
        return max(status, 1), done
    return status, done


# ----------------------------------------------------------------------------------------------
# systemd user units


SYSTEMD_UNITS = ("tmuxlocd.service", "tmuxlocd.socket")


def packaged_file(name: str) -> str:
    """A file shipped in ``tmuxlocd/data/`` (the units, the tmux hooks snippet)."""
    return importlib.resources.files("tmuxlocd").joinpath("data", name).read_text("utf-8")


def systemd_user_dir(home: Path, env: dict[str, str]) -> Path:
    config = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "systemd" / "user"


def plan_units(
    texts: dict[Path, str], unit_dir: Path, *, remove: bool
) -> tuple[list[FilePlan], list[Path]]:
    """(the files to write or delete, the units left alone because they differ)."""
    plans: list[FilePlan] = []
    differ: list[Path] = []
    for name in SYSTEMD_UNITS:
        path = unit_dir / name
        ours, now = packaged_file(name), texts.get(path, "")
        if now and now != ours:
            differ.append(path)
        elif remove:
            plans.append(FilePlan(path, now, "", []))
        else:
            plans.append(FilePlan(path, now, ours, []))
    return plans, differ


def run_systemd(
    *,
    dry_run: bool = False,
    remove: bool = False,
    home: Path | None = None,
    out: Callable[[str], None] = print,
) -> int:
    unit_dir = systemd_user_dir(home or Path.home(), dict(os.environ))
    try:
        texts = {unit_dir / n: _read(unit_dir / n) for n in SYSTEMD_UNITS}
    except InstallError as exc:
        out(f"tmuxlocd: {exc}")
        return 1
    plans, differ = plan_units(texts, unit_dir, remove=remove)
    for path in differ:
        out(
            f"tmuxlocd: {path} differs from the unit this tmuxlocd ships; left untouched "
            f"({'remove' if remove else 'merge'} it by hand):"
        )
        ours = FilePlan(path, texts[path], packaged_file(path.name), [])
        out(diff(ours).rstrip("\n"))
    for plan in plans:
        if not plan.changed:
            out(f"unchanged: {plan.path}" if plan.before else f"not installed: {plan.path}")
        elif dry_run:
            out(diff(plan).rstrip("\n"))
        else:
            _write(plan.path, plan.after)
            out(f"{'removed' if remove else 'written'}: {plan.path}")
    if dry_run:
        out("(dry run: nothing written)")
    elif remove:
        out(
            "next: systemctl --user disable --now tmuxlocd.socket tmuxlocd.service; "
            "systemctl --user daemon-reload"
        )
    else:
        out("next: systemctl --user daemon-reload && systemctl --user enable --now tmuxlocd.socket")
        out(
            "next: the service runs %h/.local/bin/tmuxlocd (pipx, pip install --user); "
            f"this one is {' '.join(this_tmuxlocd())}: edit ExecStart if they differ"
        )
    return 1 if differ else 0
