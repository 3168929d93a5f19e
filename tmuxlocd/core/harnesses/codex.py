"""Codex (``@openai/codex``; 0.171.0, run in the e2e suite).

Hooks in ``$CODEX_HOME/hooks.json`` (``~/.codex``; a trusted project's ``.codex/``), its MCP
servers in ``config.toml`` (``[mcp_servers.tmux]``, started with a cleared environment: the
variables below are passed on).  Codex runs no untrusted hook: trust is kept in the user's
``config.toml`` by a hash of each hook (``hook_hash``).  Current Codex runs one shared
app-server for all its TUIs and every session's hooks under it (``[features]
daemon_auto_start``): ``install codex --own-app-server`` gives each TUI its own.

Trust (``codex-rs/hooks/src/engine/discovery.rs``, ``codex-rs/hooks/src/lib.rs`` and
``codex-rs/config/src/fingerprint.rs`` in ``openai/codex``; the same hashes as ``codex
app-server``'s ``hooks/list`` of Codex 0.169.0): every command hook of a ``hooks.json`` has
a key ``<absolute path of hooks.json>:<event label>:<group index>:<handler index>``, and
Codex runs it only when ``[hooks.state."<key>"]`` in the user's ``config.toml`` has a
``trusted_hash`` equal to the hook's current hash (and ``enabled`` is not false).  The hash
is ``sha256:`` and the hex SHA-256 of the compact JSON, keys sorted, of ``{"event_name":
<label>, "matcher": <matcher, events with matchers only>, "hooks": [{"type": "command",
"command": <command>, "timeout": <seconds, 600 if unset, at least 1>, "async": <bool>,
"statusMessage": <if set>}]}``: it covers the command, so a command that changed (an
installation moved, a new ``--min-interval-ms``) is untrusted again, and Codex says nothing
about it.  The recipe is Codex's internal detail, not a published contract: a hash that does
not match is reported as a problem with the way to look (``/hooks``), and trust is never
claimed unless the hash matches.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    GONE,
    IDLE,
    PROMPT,
    START,
    TOOL,
    WAITING,
    WORKING,
    Harness,
    Toggle,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from tmuxlocd.core.findings import DoctorContext, Finding, OurHook

SHELL = "Bash"
ALLOW_SANDBOX = "--allow-sandbox"
# Codex starts MCP servers with a cleared environment: these let the shim find its pane's
# server hints and the daemon.
ENV_VARS = ["TMUX", "TMUX_PANE", "XDG_RUNTIME_DIR", "TMUXLOCD_SOCKET"]

# Codex's shared app-server (``[features] daemon_auto_start``, on by default): docs/harnesses.md.
SHARED_SERVER = (
    "Current Codex runs one shared app-server for all its TUIs (started by the first, in the "
    "background) and runs every session's hooks and MCP servers under it.  tmuxlocd places a "
    "session by the one TUI connected to that server when the session began (the kernel "
    "pairs the server's sockets with its clients); a session begun while two or more TUIs "
    "were connected is told nothing (never another TUI's pane), and the MCP server says it "
    "cannot tell.  For every TUI to be told its pane, give each its own app-server: "
    "`tmuxlocd install codex --own-app-server` sets [features] daemon_auto_start = false "
    "(then restart Codex: `codex app-server stop` ends a running shared server)."
)
OWN_APP_SERVER = (
    "[features] daemon_auto_start = false: each Codex TUI runs its own app-server, so its "
    "hooks and MCP server run in its pane and every TUI is told its pane; the trade-off: no "
    "shared server (each TUI starts its own, and threads are not shared between TUIs).  "
    "`tmuxlocd install codex --remove` puts back what was there."
)
OWN_APP_SERVER_TOGGLE = Toggle(
    "--own-app-server",
    "features",
    "daemon_auto_start",
    False,
    "tmuxlocd install codex --own-app-server; before:",
    OWN_APP_SERVER,
)
SHARED_SERVER_KIND = "codex_app_server"  # host/shared.py's name of its shared server


def sandbox_notes(
    socket: str, *, allow: bool, platform: str, allowed: bool, allow_all: bool, sandboxed: bool
) -> list[str]:
    if not allow:
        return [
            (
                "Codex's sandbox keeps its shell from the daemon's socket; "
                f"{ALLOW_SANDBOX} says why tmuxlocd cannot allow it alone"
            )
        ]
    return [
        (
            "nothing written for Codex's sandbox: its one per-socket allow is in a permission "
            "profile (beta), [permissions.<profile>.network.unix_sockets], which does not "
            "apply under sandbox_mode / [sandbox_workspace_write] and is not read on Linux, "
            "where the sandbox refuses every Unix socket first."
        ),
        (
            "on macOS, with a permission profile of yours: add "
            f'"{socket}" = "allow" under [permissions.<profile>.network.unix_sockets].'
        ),
        (
            "otherwise the sandboxed shell reaches the daemon only with network access on "
            "([sandbox_workspace_write] network_access = true), which opens every other "
            "destination too: not written.  The hooks and the MCP server are outside that "
            "sandbox and reach the daemon either way."
        ),
    ]


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    steps = [
        (
            "In Codex, open /hooks once and trust the new hooks (Codex runs no "
            "untrusted hook).  Hooks are a stable feature of current Codex; an older "
            "version needs [features] hooks = true (earlier: codex_hooks) in "
            "config.toml."
        )
    ]
    if project:
        steps.append("Codex reads .codex/ only in a trusted project.")
    steps.append(SHARED_SERVER)
    return steps


# ----------------------------------------------------------------------------------------------
# Trust (the module's docstring).

# The label of each event in hook-state keys and hashes, and the events whose matcher Codex
# ignores (left out of the hash).
EVENT_LABELS = {
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
NO_MATCHER = frozenset({"UserPromptSubmit", "Stop"})
DEFAULT_TIMEOUT_S = 600
# The fields of a command hook whose effect on the hash is known.
HASHED_FIELDS = frozenset({"type", "command", "timeout", "async", "statusMessage"})
TRUST_FIX = (
    "start `codex` in a terminal, open /hooks and trust the tmuxlocd hooks (t trusts all "
    "listed; Codex also asks at start-up).  `codex exec` never asks: it skips untrusted hooks "
    "silently.  tmuxlocd never writes trust: that is your decision."
)


def hook_key(hooks_json: str, event: str, group: int, index: int) -> str:
    return f"{hooks_json}:{EVENT_LABELS[event]}:{group}:{index}"


def hook_hash(event: str, matcher: str | None, entry: Mapping[str, Any]) -> str | None:
    """The hash Codex trusts a command hook by (module docstring); None when the entry has a
    field whose part in the hash is not known here, or no command."""
    import hashlib
    import json

    command = entry.get("command")
    if event not in EVENT_LABELS or not isinstance(command, str):
        return None
    if not set(entry) <= HASHED_FIELDS or entry.get("type", "command") != "command":
        return None
    timeout = entry.get("timeout")
    if timeout is not None and (not isinstance(timeout, int) or isinstance(timeout, bool)):
        return None
    handler: dict[str, Any] = {
        "type": "command",
        "command": command,
        "timeout": max(1, DEFAULT_TIMEOUT_S if timeout is None else timeout),
        "async": bool(entry.get("async", False)),
    }
    status = entry.get("statusMessage")
    if status is not None:
        handler["statusMessage"] = status
    identity: dict[str, Any] = {"event_name": EVENT_LABELS[event], "hooks": [handler]}
    if matcher is not None and event not in NO_MATCHER:
        identity["matcher"] = matcher
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _states(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    from tmuxlocd.core.findings import table

    states: dict[str, dict[str, Any]] = {}
    for key, value in table(config, "hooks", "state").items():
        if isinstance(value, dict) and key.strip():
            states[key.strip()] = value
    return states


def trust(
    spellings: Sequence[str], hooks: Sequence[OurHook], config: Mapping[str, Any], state_path: Any
) -> list[Finding]:
    """The trust and enablement of our hooks in Codex's hook state; ``spellings``: the
    hooks file's path as Codex spells it in the keys (absolute, not resolved; a link's target
    is accepted too)."""
    from tmuxlocd.core.findings import OK, PROBLEM, WARNING, Finding

    states = _states(config)
    trusted, modified, untrusted, unknown, disabled = [], [], [], [], []
    present = 0
    for hook in hooks:
        if hook.event not in EVENT_LABELS:
            continue
        state: dict[str, Any] | None = None
        for spelling in spellings:
            state = states.get(hook_key(spelling, hook.event, hook.group, hook.index))
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
        current = hook_hash(hook.event, hook.matcher, hook.entry)
        if current is None:
            unknown.append(name)
        elif recorded == current:
            trusted.append(name)
        else:
            modified.append(name)
    total = len([h for h in hooks if h.event in EVENT_LABELS])
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
    fix = TRUST_FIX if status == PROBLEM else "start `codex` and open /hooks to review them"
    found.append(Finding("codex", "trust", status, "; ".join(parts), fix))
    return found


def features(config: Mapping[str, Any], state_path: Any) -> list[Finding]:
    from tmuxlocd.core.findings import PROBLEM, Finding, table

    values = table(config, "features")
    off = [k for k in ("hooks", "codex_hooks") if values.get(k) is False]
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


def app_servers(
    config: Mapping[str, Any],
    state_path: Any,
    running: Callable[[], list[tuple[int, list[tuple[int, str]] | None]]],
) -> Finding:
    """Whether the Codex TUIs running now will be told their pane (spec §2): each with its
    own app-server (``daemon_auto_start = false``), or, on a shared one, a session begun while
    it has one TUI connected.  ``running``: each shared app-server's pid and its clients
    (pid, tty), None when they cannot be read."""
    from tmuxlocd.core.findings import OK, WARNING, Finding, table

    if table(config, "features").get("daemon_auto_start") is False:
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


def _project(config: Mapping[str, Any], cwd: Any, state_path: Any) -> Finding:
    from tmuxlocd.core.findings import OK, PROBLEM, WARNING, Finding, table

    projects = table(config, "projects")
    here = [str(cwd), *(str(p) for p in cwd.parents)]
    for path in here:
        level = table(projects, path).get("trust_level")
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


def doctor_checks(ctx: DoctorContext) -> list[Finding]:
    """Trust of each hook, ``[features]``, the shared app-server, and a project's trust."""
    from tmuxlocd.core.findings import PROBLEM, Finding

    state_path = ctx.where["state"]
    config, error = ctx.parse_toml(ctx.texts.get(state_path), state_path)
    found: list[Finding] = []
    if config is None:
        found.append(
            Finding(
                "codex",
                "trust",
                PROBLEM,
                f"{error}: Codex cannot read its hook state either",
                "fix the file by hand",
            )
        )
    elif ctx.ours:
        found += trust(ctx.spellings(ctx.where["hooks"]), ctx.ours, config, state_path)
        found += features(config, state_path)
        found.append(
            app_servers(config, state_path, lambda: ctx.shared_servers(SHARED_SERVER_KIND))
        )
    if ctx.project and config is not None:
        found.append(_project(config, ctx.cwd, state_path))
    return found


HARNESS = Harness(
    "codex",
    "Codex",
    versions="0.171.0 (run)",
    binary="codex",
    home_dir="${CODEX_HOME:-~/.codex}",
    user_files={
        "hooks": "${CODEX_HOME:-~/.codex}/hooks.json",
        "mcp": "${CODEX_HOME:-~/.codex}/config.toml",
    },
    project_files={"hooks": ".codex/hooks.json", "mcp": ".codex/config.toml"},
    # Trust is kept in the user's config.toml, whichever hooks.json.
    doctor_files={
        "user": {"state": "${CODEX_HOME:-~/.codex}/config.toml"},
        "project": {"state": "${CODEX_HOME:-~/.codex}/config.toml"},
    },
    events={"SessionStart": START, "UserPromptSubmit": PROMPT, "PostToolUse": TOOL},
    hook_events=[("SessionStart", None), ("UserPromptSubmit", None), ("PostToolUse", SHELL)],
    shell_tool=SHELL,
    states={
        "SessionStart": IDLE,
        "UserPromptSubmit": WORKING,
        "PostToolUse": WORKING,
        "PermissionRequest": WAITING,
        "Stop": IDLE,
        "SessionEnd": GONE,
    },
    # Codex has no SessionEnd hook (its generated hook schemas list none): its agent is gone
    # when its process exits.  It asks only for Bash and network access (its
    # PermissionRequest schema), both ending in a shell command.
    state_hooks=[("PermissionRequest", None), ("Stop", None)],
    mcp="toml",
    toml_env_vars=ENV_VARS,
    toggle=OWN_APP_SERVER_TOGGLE,
    sandbox_notes=sandbox_notes,
    next_steps=next_steps,
    doctor_checks=doctor_checks,
)
