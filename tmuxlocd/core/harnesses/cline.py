"""Cline CLI (``cline``; 3.0.65, run in the e2e suite).

Its file hooks cannot add to a prompt: ``TaskStart`` runs detached and its output is never
read (3.0.65; only ``PreToolUse``/``PostToolUse`` are read).  A plugin's hooks can: ``install``
writes one (``$CLINE_DIR/plugins/tmuxlocd.js``, ``~/.cline`` by default; a workspace's
``.cline/plugins/``; shipped as ``tmuxlocd/data/cline-plugin.js``) that runs ``tmuxlocd context
cline`` with Claude-shaped events and gives the text back as ``appendContext``, which Cline adds
to the conversation as a ``<hook_context>`` user message:

- ``beforeRun`` (a prompt): UserPromptSubmit, its text after the prompt;
- ``afterTool`` of ``run_commands``: PostToolUse, its text after the tool's result;
- ``afterRun``: Stop (idle).

Cline runs plugins in a child process (no stdin, no stdout), on the pane's tty when the
session runs in the CLI.  By default (``CLINE_SESSION_BACKEND_MODE`` ``auto``) the first run
starts a hub (``cline --cline-hub-daemon``, detached, no tty), and every later session from
any pane runs inside it: its plugin has no tty in its whole chain, the hub is a process of
several sessions (``core/shared.py``), and the session is told nothing, never another pane's
location.  ``CLINE_SESSION_BACKEND_MODE=local`` runs each session in its own CLI: the doctor
says which applies.

Agent state: working from the prompt, idle after the run, gone when the process exits.  Its
tool approval (``--auto-approve false``) tells no plugin: never ``waiting``.
"""

from __future__ import annotations

from tmuxlocd.core.harnesses.base import (
    IDLE,
    ORIGIN_TURN,
    PLUGIN,
    PROMPT,
    TOOL,
    WORKING,
    Harness,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from tmuxlocd.core.findings import DoctorContext, Finding

PLUGIN_NAME = "tmuxlocd.js"
BACKEND = "CLINE_SESSION_BACKEND_MODE"
HUB_KIND = "cline_hub"
HUB = (
    "Cline's hub (`cline --cline-hub-daemon`, started in the background by the first run) runs "
    "every later session, from any pane, with no tty: those sessions are told nothing and "
    "have no agent state."
)


def next_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return [
        "Start a new Cline task: it loads plugins per session.  " + HUB + "  For every "
        f"session to be told its pane, run cline with {BACKEND}=local (export it in your "
        "shell's startup file); end a running hub by its pid."
    ]


def backend(env: Mapping[str, str], hubs: Sequence[int]) -> tuple[bool, str]:
    """Whether a ``cline`` started with ``env`` runs its session in its own CLI (placed by
    its pane's tty), and what to say: ``hubs`` are the pids of the hubs running now."""
    mode = env.get(BACKEND, "") or "auto"
    running = f"; a hub is running (pid {', '.join(map(str, hubs))})" if hubs else ""
    if mode == "local":
        return True, f"{BACKEND}=local: each session runs in its own CLI, in its pane{running}"
    return False, f"{BACKEND}={mode}: " + HUB + running


def doctor_checks(ctx: DoctorContext) -> list[Finding]:
    from tmuxlocd.core.findings import OK, WARNING, Finding

    hubs = [pid for pid, _ in ctx.shared_servers(HUB_KIND)]
    local, found = backend(ctx.env, hubs)
    if local:
        return [Finding("cline", "hub", OK, found)]
    fix = f"export {BACKEND}=local in the shell you start cline from"
    return [Finding("cline", "hub", WARNING, found, fix)]


HARNESS = Harness(
    "cline",
    "Cline CLI",
    versions="3.0.65 (run)",
    binary="cline",
    home_dir="${CLINE_DIR:-~/.cline}",
    user_files={"hooks": "${CLINE_DIR:-~/.cline}/plugins/" + PLUGIN_NAME},
    project_files={"hooks": ".cline/plugins/" + PLUGIN_NAME},
    layout=PLUGIN,
    mcp="",
    events={"UserPromptSubmit": PROMPT, "PostToolUse": TOOL},
    hook_events=[],
    shell_tool="run_commands",
    # Its appendContext is a message of the conversation, kept with it.
    replayed=frozenset((ORIGIN_TURN,)),
    states={"UserPromptSubmit": WORKING, "PostToolUse": WORKING, "Stop": IDLE},
    next_steps=next_steps,
    doctor_checks=doctor_checks,
    # The plugin sandbox: a ``node`` child of ``cline`` on its tty, where the hook starts;
    # the agent is ``cline`` itself (the sandbox exits when idle, cline goes on).
    plugin_process="node",
)
