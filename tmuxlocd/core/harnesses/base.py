"""What a harness is to tmuxlocd: the description each ``core/harnesses/<name>.py`` gives.

One ``Harness`` per harness says where its configuration lives and its shape, which events
tell the location and how the answer is spelled, which events mean working / waiting / idle
/ gone, what the doctor checks beyond the common checks, what its sandbox allows, and the
versions it was run against.  ``clients/install.py``, ``clients/doctor.py``,
``clients/context.py`` (through ``core/harness.py``) and the agent registry (through
``core/agents.py``) read the description; none of them names a harness.

Standard library only, and nothing imported at module level: the hook (``python -S``) loads
this module and the one harness's module it runs for, and pays for every import.  What the
doctor needs (``core/findings.py``) is imported inside the functions that use it.
"""

from __future__ import annotations

from _json import encode_basestring

TYPE_CHECKING = False  # not typing's: a hook started with python -S pays for every import
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from tmuxlocd.core.findings import DoctorContext, Finding

# What an event means to ``tmuxlocd context`` (core/harness.py).
START = "start"
PROMPT = "prompt"
TOOL = "tool"
PRECOMPACT = "precompact"  # the harness may compact the history before its next request

# How the block a session was last told reached it (core/harness.py, ``REPLAYED``).
ORIGIN_START = "start"
ORIGIN_TURN = "turn"

# What an event means for the session's agent (core/agents.py).
WORKING = "working"
WAITING = "waiting"
IDLE = "idle"
GONE = "gone"
BY_NOTIFICATION = ""  # a Notification: by its ``notification_type`` (``notifications``)
PERMISSION = "permission"  # a reason, ``permission: <tool>`` when the tool is known

# The shapes of a hooks file (``layout``): Claude Code's ``{"hooks": {"<event>": [{"matcher":
# ..., "hooks": [<entry>]}]}}``; a flat list of entries per event (Copilot CLI, Antigravity
# CLI, Cursor CLI); a plugin file tmuxlocd writes whole (opencode).
GROUPS = "groups"
FLAT = "flat"
PLUGIN = "plugin"

HOOK_TIMEOUT_S = 10


class HookEvent:
    """One hook event, as far as ``tmuxlocd context`` cares: ``source`` is a session start's
    (``startup``, ``resume``, ``clear``, ``compact``), ``transcript`` the session's transcript
    path and ``trigger`` Gemini's ``PreCompress`` trigger (``auto``, ``manual``); "" when
    absent."""

    __slots__ = ("harness", "kind", "name", "session", "source", "transcript", "trigger")

    def __init__(
        self,
        harness: str,
        name: str,
        kind: str,
        session: str,
        source: str = "",
        transcript: str = "",
        trigger: str = "",
    ) -> None:
        self.harness = harness
        self.name = name
        self.kind = kind
        self.session = session
        self.source = source
        self.transcript = transcript
        self.trigger = trigger

    def __repr__(self) -> str:
        return (
            f"HookEvent({self.harness!r}, {self.name!r}, {self.kind!r}, {self.session!r}, "
            f"{self.source!r}, {self.transcript!r}, {self.trigger!r})"
        )


# ----------------------------------------------------------------------------------------------
# How the answer is spelled on the hook's stdout (``render``): a function of the event's name
# and the text, giving the line to print.


def hook_specific(event_name: str, text: str) -> str:
    """Claude Code's shape (Codex's, Gemini CLI's, Qwen Code's; the opencode plugin's):
    ``{"hookSpecificOutput": {"hookEventName": <event>, "additionalContext": <text>}}``
    (Codex's schemas allow no other keys in that object)."""
    return (
        f'{{"hookSpecificOutput": {{"hookEventName": {encode_basestring(event_name)}, '
        f'"additionalContext": {encode_basestring(text)}}}}}\n'
    )


def additional_context(event_name: str, text: str) -> str:
    """A top-level ``additionalContext`` (Copilot CLI, Cursor CLI)."""
    return f'{{"additionalContext": {encode_basestring(text)}}}\n'


def plain_text(event_name: str, text: str) -> str:
    """The text itself: the harness adds a hook's stdout to the context as it is."""
    return text


# ----------------------------------------------------------------------------------------------
# The hook entry a hooks file gets (``entry``): a function of the command.


def seconds_entry(command: str) -> dict[str, object]:
    """``{"type": "command", "command": ..., "timeout": <seconds>}`` (Claude Code, Codex)."""
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}


def milliseconds_entry(command: str) -> dict[str, object]:
    return {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S * 1000}


# ----------------------------------------------------------------------------------------------
# Where files are: templates, expanded by ``expand``.  ``~`` is the home directory,
# ``${VAR:-default}`` an environment variable or its default, and a relative path is below
# the current directory (a project's files).


def expand(template: str, home: str, cwd: str, env: Mapping[str, str]) -> str:
    text = template
    while "${" in text:
        start = text.index("${")
        end = text.index("}", start)
        name, _, default = text[start + 2 : end].partition(":-")
        text = text[:start] + (env.get(name) or default) + text[end + 1 :]
    if text == "~" or text.startswith("~/"):
        text = home.rstrip("/") + text[1:]
    elif not text.startswith("/"):
        text = cwd.rstrip("/") + "/" + text
    return text


class Toggle:
    """A setting ``install --<flag>`` writes in a TOML file (``[table] key = value``), the
    value before it kept in the line's comment after ``mark`` so that ``--remove`` puts it
    back; ``note``: what the user is told when it is written."""

    __slots__ = ("flag", "key", "mark", "note", "table", "value")

    def __init__(self, flag: str, table: str, key: str, value: bool, mark: str, note: str) -> None:
        self.flag = flag
        self.table = table
        self.key = key
        self.value = value
        self.mark = mark
        self.note = note


def _no_steps(project: bool, exe: Sequence[str]) -> list[str]:
    return []


def _remove_steps(project: bool) -> list[str]:
    return ["Restart the harness's running sessions to drop the hooks."]


def _no_notes(
    socket: str, *, allow: bool, platform: str, allowed: bool, allow_all: bool, sandboxed: bool
) -> list[str]:
    return []


class Harness:
    """One harness, as tmuxlocd knows it.  Every field but the names has a default that
    is what most harnesses do (Claude Code's shapes); a module gives what differs.

    Context (``core/harness.py``): ``events`` (each hook event's name -> START, PROMPT, TOOL
    or PRECOMPACT), ``event_in_argv`` (the payload names no event: ``--event <name>`` in the
    command), ``event_field`` (where the payload names it), ``session_field`` (``a|b``:
    the first the payload has; with
    ``session_from_cwd``, a payload with no session: the session is the working directory's),
    ``tool_field`` and ``shell_tool`` (a TOOL event of another
    tool tells nothing), ``sources`` (the harness's session-start sources as Claude Code's),
    ``first_call_field`` (a PROMPT counts only where this field is 0), ``replayed`` (which
    origins a resumed history replays), ``ephemeral`` (what is told lasts one turn),
    ``render`` (the stdout).

    Agent state (``core/agents.py``): ``states`` (event -> WORKING, WAITING, IDLE, GONE or
    BY_NOTIFICATION), ``notifications`` (notification_type -> (state, reason)),
    ``question_tools`` (tools whose permission dialog is a question), ``root_field`` (a
    subagent's root session), ``state_hooks`` (the events install adds for state only),
    ``plugin_process`` (the ``comm`` of a child process the harness runs its plugins in, on
    its tty: the daemon's walk from the hook to the harness passes over it).

    Install (``clients/install.py``): ``hook_events`` (the context hook's events and
    matchers), ``layout``, ``hooks_key`` (where the events are in the file), ``file_header``
    (keys a new hooks file starts with, dropped when nothing else is left), ``entry``,
    ``user_files`` and ``project_files`` (role -> path template: ``hooks``, ``mcp``),
    ``mcp`` (``json``: ``mcpServers``; ``toml``: ``[mcp_servers]``; "" none written),
    ``mcp_entry`` (the entry's final shape), ``toml_env_vars``, ``toggle``, ``socket_list``
    (the path of a per-socket allow list in the settings), ``sandboxed``, ``sandbox_notes``,
    ``project_sandbox_file``, ``next_steps``, ``remove_steps``, ``manifest`` (a JSON file
    written whole beside the hooks, role ``manifest``: a plugin's ``plugin.json``),
    ``user_mcp_command`` (how the user adds the MCP server where install does not write
    it: ``{name}``, ``{command}``), and ``user_mcp_role`` (the role, in ``doctor_files``,
    of the file where it is then).

    Doctor (``clients/doctor.py``): ``home_dir`` (there, the harness is in use), ``binary``
    (its command, looked for on PATH by ``install`` with no harness named), ``doctor_files``
    (more files to read, by scope), ``disable_all_key`` (a true value: no hook runs),
    ``comments`` (its JSON may hold comments), ``doctor_checks`` (its own checks).

    ``versions``: what it was run against, or that only its documentation was read."""

    def __init__(
        self,
        name: str,
        title: str,
        *,
        versions: str,
        events: Mapping[str, str],
        hook_events: Sequence[tuple[str, str | None]],
        user_files: Mapping[str, str],
        project_files: Mapping[str, str],
        home_dir: str,
        binary: str,
        run_here: bool = True,
        shell_tool: str = "",
        event_in_argv: bool = False,
        session_field: str = "session_id",
        event_field: str = "hook_event_name",
        session_from_cwd: bool = False,
        tool_field: str = "tool_name",
        sources: Mapping[str, str] | None = None,
        first_call_field: str = "",
        replayed: frozenset[str] = frozenset((ORIGIN_START, ORIGIN_TURN)),
        ephemeral: bool = False,
        render: Callable[[str, str], str] = hook_specific,
        states: Mapping[str, str] | None = None,
        notifications: Mapping[str, tuple[str, str]] | None = None,
        question_tools: frozenset[str] = frozenset(),
        root_field: str = "",
        state_hooks: Sequence[tuple[str, str | None]] = (),
        asking_tools: str = "",
        layout: str = GROUPS,
        hooks_key: str = "hooks",
        file_header: Mapping[str, object] | None = None,
        entry: Callable[[str], dict[str, object]] = seconds_entry,
        mcp: str = "json",
        mcp_entry: Callable[[dict[str, object]], dict[str, object]] | None = None,
        toml_env_vars: Sequence[str] = (),
        toggle: Toggle | None = None,
        socket_list: tuple[str, ...] = (),
        sandboxed: Callable[[Mapping[str, object], Mapping[str, str]], bool] | None = None,
        sandbox_notes: Callable[..., list[str]] = _no_notes,
        project_sandbox_file: str = "",
        next_steps: Callable[[bool, Sequence[str]], list[str]] = _no_steps,
        remove_steps: Callable[[bool], list[str]] = _remove_steps,
        user_mcp_command: str = "",
        user_mcp_role: str = "",
        doctor_files: Mapping[str, Mapping[str, str]] | None = None,
        disable_all_key: str = "",
        comments: bool = False,
        doctor_checks: Callable[[DoctorContext], list[Finding]] | None = None,
        manifest: Mapping[str, object] | None = None,
        plugin_process: str = "",
    ) -> None:
        self.name = name
        self.title = title
        self.versions = versions
        self.run_here = run_here
        self.events = dict(events)
        self.hook_events = list(hook_events)
        self.user_files = dict(user_files)
        self.project_files = dict(project_files)
        self.home_dir = home_dir
        self.binary = binary
        self.shell_tool = shell_tool
        self.event_in_argv = event_in_argv
        self.session_field = session_field
        self.event_field = event_field
        self.session_from_cwd = session_from_cwd
        self.tool_field = tool_field
        self.sources = dict(sources or {})
        self.first_call_field = first_call_field
        self.replayed = replayed
        self.ephemeral = ephemeral
        self.render = render
        self.states = dict(states or {})
        self.notifications = dict(notifications) if notifications is not None else None
        self.question_tools = question_tools
        self.root_field = root_field
        self.state_hooks = list(state_hooks)
        self.asking_tools = asking_tools
        self.layout = layout
        self.hooks_key = hooks_key
        self.file_header = dict(file_header or {})
        self.entry = entry
        self.mcp = mcp
        self.mcp_entry = mcp_entry
        self.toml_env_vars = list(toml_env_vars)
        self.toggle = toggle
        self.socket_list = socket_list
        self.sandboxed = sandboxed
        self.sandbox_notes = sandbox_notes
        self.project_sandbox_file = project_sandbox_file
        self.next_steps = next_steps
        self.remove_steps = remove_steps
        self.user_mcp_command = user_mcp_command
        self.user_mcp_role = user_mcp_role
        self.doctor_files = {k: dict(v) for k, v in (doctor_files or {}).items()}
        self.disable_all_key = disable_all_key
        self.comments = comments
        self.doctor_checks = doctor_checks
        self.plugin_process = plugin_process
        self.manifest = dict(manifest) if manifest is not None else None

    @property
    def installed_events(self) -> list[tuple[str, str | None]]:
        """Every (event, matcher) ``install`` writes a hook for: the context hook's, then
        those that only report the agent's state (the same command)."""
        return [*self.hook_events, *self.state_hooks]

    def __repr__(self) -> str:
        return f"Harness({self.name!r})"
