"""Agent state from each harness's own hook events: the pure part (SPEC §13).

A harness (Claude Code, Codex, Gemini CLI, Copilot CLI, Qwen Code, Antigravity CLI; opencode
through the plugin ``install`` writes) runs ``tmuxlocd context <harness>`` for its hook
events; the hook tells the daemon what each event means for the session's agent, and the
daemon keeps, per session, where the agent is and what it is doing:

- ``working``: a prompt is being answered (a prompt was submitted, a tool ran);
- ``waiting``: it asked the user (a permission, a question), with a short ``reason``;
- ``idle``: the turn is done and it is ready for a prompt (also right after its start);
- gone: its session ended, or its process exited (the daemon holds a pidfd on it).

Agents are told apart by (harness, session id): two sessions in one pane, one after the
other, are two agents, and a late event of the first never changes the second.  A session
resumed in another pane moves there.  A new session of the same harness process (Claude
Code's ``/clear``) replaces that process's old one.

Standard library only, and nothing imported at module level: ``report_of`` runs in the hook,
which is started without site (``python -S``).  The daemon's side (pidfds, persistence,
events) is ``tmuxlocd.daemon.agent_registry``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a hook started with python -S pays for every import
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

# The states, as the descriptions (``core/harnesses/base.py``) spell them too: this module
# imports nothing when it is imported (the registry, in ``report_of``, on first use).
WORKING = "working"
WAITING = "waiting"
IDLE = "idle"
GONE = "gone"
STATES = (WORKING, WAITING, IDLE)
PERMISSION = "permission"  # a reason, ``permission: <tool>`` when the tool is known

MAX_REASON = 80
MAX_SESSION_ID = 512

# What each harness's hook events mean for its agent is its description's (``states``,
# ``notifications``, ``question_tools``, ``session_field``, ``root_field``: docs/harnesses.md,
# "Agent state"); the events ``tmuxlocd install`` adds for agent state only, its
# ``state_hooks``.  A harness tells of no permission granted: the tool's after-event is the
# first sign that the agent works again, so those hooks' matchers add the tools that ask
# first by default (``asking_tools``).

# Where a notification names the tool only in its ``message`` (Qwen Code's): the words
# before the tool's name, which ends the message.
_MESSAGE_TOOL = "needs your permission to use "


def __getattr__(name: str) -> Any:
    """The harnesses whose events say anything of their agent (``HARNESSES``), and the
    tables earlier versions kept here, from the descriptions."""
    if name not in (
        "HARNESSES",
        "STATE_EVENTS",
        "ASKING_TOOLS",
    ):  # (``hasattr`` asks for others: load nothing)
        raise AttributeError(name)
    from tmuxlocd.core import harnesses

    if name == "HARNESSES":
        return harnesses.NAMES
    every = harnesses.every()
    if name == "STATE_EVENTS":
        return {h.name: list(h.state_hooks) for h in every if h.state_hooks}
    if name == "ASKING_TOOLS":
        return {h.name: h.asking_tools for h in every if h.asking_tools}
    raise AttributeError(name)


class Report:
    """What one hook event says of its session's agent: a state (or ``gone``) and a reason."""

    __slots__ = ("event", "harness", "reason", "session_id", "state")

    def __init__(
        self, harness: str, session_id: str, event: str, state: str, reason: str = ""
    ) -> None:
        self.harness = harness
        self.session_id = session_id
        self.event = event
        self.state = state
        self.reason = reason

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Report) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(self.fields())

    def fields(self) -> tuple[str, str, str, str, str]:
        return (self.harness, self.session_id, self.event, self.state, self.reason)

    def __repr__(self) -> str:
        return "Report(" + ", ".join(map(repr, self.fields())) + ")"


def short(text: object) -> str:
    """A reason: one line of printable text, at most MAX_REASON characters."""
    if not isinstance(text, str):
        return ""
    line = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 1] + "…"


def _tool(value: Mapping[str, object]) -> str:
    """The tool a permission is for: ``tool_name``, else Gemini CLI's ``details`` (an MCP
    confirmation's ``toolName``, else the confirmation's ``type``: exec, edit, mcp; 0.61.0
    names no tool in the others, toSerializableDetails), else the last word of Qwen Code's
    ``message``."""
    tool = value.get("tool_name")
    details = value.get("details")
    if not isinstance(tool, str) and isinstance(details, dict):
        tool = details.get("tool_name", details.get("toolName"))
        if not isinstance(tool, str):
            tool = details.get("type")
    message = value.get("message")
    if not isinstance(tool, str) and isinstance(message, str):
        _, found, after = message.partition(_MESSAGE_TOOL)
        if found and after and " " not in after.strip():
            tool = after.strip()
    return tool if isinstance(tool, str) else ""


def _permission(questions: frozenset[str], value: Mapping[str, object]) -> str:
    """``permission: <tool>``; "question" for a tool (or a confirmation's ``details.type``,
    Gemini CLI's ``ask_user``) whose dialog is a question the model asks the user."""
    tool = _tool(value)
    details = value.get("details")
    kind = details.get("type") if isinstance(details, dict) else None
    if tool in questions or (isinstance(kind, str) and kind in questions):
        return "question"
    return short(f"{PERMISSION}: {tool}" if tool else PERMISSION)


def report_of(harness: str, value: Mapping[str, object], event: str = "") -> Report | None:
    """The agent state a hook event's payload (its JSON object) reports; None when it says
    nothing of it (an event of no meaning here, a notification of another kind, no session).
    ``event`` is the event's name from the hook's command line, for the harnesses that put
    none in the payload (``Harness.event_in_argv``); given, it wins over the payload's."""
    from tmuxlocd.core import harnesses
    from tmuxlocd.core.harness import session_of

    spec = harnesses.find(harness)
    if spec is None:
        return None
    events = spec.states
    # The command line's name first: ``install`` wrote it for this event, and a payload may
    # name it otherwise (Copilot CLI's ``notification`` carries ``"Notification"``).
    name = event or value.get(spec.event_field)
    session = session_of(spec.session_field, spec.session_from_cwd, value)
    root = value.get(spec.root_field) if spec.root_field else None
    if isinstance(root, str) and root:
        session = root
    if not isinstance(name, str) or not isinstance(session, str):
        return None
    if not session or len(session) > MAX_SESSION_ID or name not in events:
        return None
    state = events[name]
    reason = ""
    if not state:  # a notification: by its kind
        kind = value.get("notification_type")
        table = spec.notifications or {}
        found = table.get(kind) if isinstance(kind, str) else None
        if found is None:
            return None
        state, reason = found
        if (state, reason) == (WAITING, PERMISSION):
            reason = _permission(spec.question_tools, value)
    elif state == WAITING:
        reason = _permission(spec.question_tools, value)
    return Report(harness, session, name, state, reason)


# ----------------------------------------------------------------------------------------------
# The daemon's record of agents, as data.


class Proc:
    """A process, named so that a reused pid is never taken for it: (pid, start time)."""

    __slots__ = ("pid", "start")

    def __init__(self, pid: int, start: int) -> None:
        self.pid = pid
        self.start = start

    def key(self) -> tuple[int, int]:
        return (self.pid, self.start)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Proc) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __repr__(self) -> str:
        return f"Proc({self.pid}, {self.start})"


class Agent:
    """One session's agent: its pane (server socket path and pane id), its process, its
    state, since when (seconds since the epoch) and why (for ``waiting``)."""

    __slots__ = ("harness", "pane", "proc", "reason", "server", "session_id", "since", "state")

    def __init__(
        self,
        harness: str,
        session_id: str,
        server: str,
        pane: str,
        proc: Proc,
        state: str,
        reason: str,
        since: float,
    ) -> None:
        self.harness = harness
        self.session_id = session_id
        self.server = server
        self.pane = pane
        self.proc = proc
        self.state = state
        self.reason = reason
        self.since = since

    @property
    def key(self) -> tuple[str, str]:
        return (self.harness, self.session_id)

    def copy(self) -> Agent:
        return Agent(
            self.harness,
            self.session_id,
            self.server,
            self.pane,
            self.proc,
            self.state,
            self.reason,
            self.since,
        )

    def fields(self) -> tuple[object, ...]:
        return (
            self.harness,
            self.session_id,
            self.server,
            self.pane,
            self.proc,
            self.state,
            self.reason,
            self.since,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Agent) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(self.fields())

    def __repr__(self) -> str:
        return "Agent(" + ", ".join(map(repr, self.fields())) + ")"


class Change:
    """One agent's change: ``before`` (None: new) and ``after`` (None: gone)."""

    __slots__ = ("after", "before")

    def __init__(self, before: Agent | None, after: Agent | None) -> None:
        self.before = before
        self.after = after

    @property
    def agent(self) -> Agent:
        found = self.after or self.before
        assert found is not None
        return found

    def __repr__(self) -> str:
        return f"Change({self.before!r}, {self.after!r})"


class Agents:
    """Every known agent, by (harness, session id); each method returns what changed."""

    def __init__(self) -> None:
        self.by_key: dict[tuple[str, str], Agent] = {}

    def __len__(self) -> int:
        return len(self.by_key)

    def all(self) -> list[Agent]:
        return list(self.by_key.values())

    def get(self, harness: str, session_id: str) -> Agent | None:
        return self.by_key.get((harness, session_id))

    def apply(self, report: Report, server: str, pane: str, proc: Proc, now: float) -> list[Change]:
        """A report from a hook the kernel placed in ``pane`` of ``server``, whose harness
        process is ``proc``."""
        key = (report.harness, report.session_id)
        old = self.by_key.get(key)
        changes: list[Change] = []
        if report.state == GONE:
            # Only from where the agent is: a session resumed elsewhere is not ended by its
            # old process quitting.
            if old is not None and (old.server, old.pane) == (server, pane):
                del self.by_key[key]
                changes.append(Change(old, None))
            return changes
        # Another session of the same process is over: it started this one (Claude Code's
        # /clear ends a session and starts another in the same process).
        for other in list(self.by_key.values()):
            if other.key != key and other.proc == proc and other.harness == report.harness:
                del self.by_key[other.key]
                changes.append(Change(other, None))
        if old is None:
            new = Agent(
                report.harness,
                report.session_id,
                server,
                pane,
                proc,
                report.state,
                report.reason,
                now,
            )
        else:
            state, reason = report.state, report.reason
            if report.event == "SessionStart":
                # A known session starting again (Claude Code's and Codex's ``compact``, which
                # may come in the middle of a turn; a resume) is where it was, doing what it
                # was: only a new one starts idle.
                state, reason = old.state, old.reason
            elif (state, reason) == (WAITING, PERMISSION) and old.reason.startswith(
                PERMISSION + ": "
            ):
                # The same dialog told again without its tool (Claude Code's permission_prompt
                # Notification, some seconds after its PermissionRequest named the tool; Qwen
                # Code's right after it).
                reason = old.reason
            same = old.state == state and old.reason == reason
            new = Agent(
                report.harness,
                report.session_id,
                server,
                pane,
                proc,
                state,
                reason,
                old.since if same else now,
            )
            if new == old:
                return changes
        self.by_key[key] = new
        changes.append(Change(old, new))
        return changes

    def process_gone(self, proc: Proc) -> list[Change]:
        """Every agent of a process that exited is gone."""
        changes = []
        for agent in list(self.by_key.values()):
            if agent.proc == proc:
                del self.by_key[agent.key]
                changes.append(Change(agent, None))
        return changes

    def pane_gone(self, server: str, pane: str | None = None) -> list[Change]:
        """Every agent of a pane that was closed (or of a server that went: ``pane`` None)."""
        changes = []
        for agent in list(self.by_key.values()):
            if agent.server == server and (pane is None or agent.pane == pane):
                del self.by_key[agent.key]
                changes.append(Change(agent, None))
        return changes

    def procs(self) -> set[Proc]:
        return {agent.proc for agent in self.by_key.values()}

    def load(self, agents: Iterable[Agent]) -> None:
        for agent in agents:
            self.by_key[agent.key] = agent


def pane_number(pane: str) -> int:
    digits = pane[1:]
    return int(digits) if digits.isascii() and digits.isdigit() else -1


def next_agent(agents: Iterable[Agent], state: str, current: str | None) -> Agent | None:
    """For a key that jumps to the agent that needs you next: of the agents in ``state``,
    the one that has been so longest; pressed again from its pane, the next one (by how long
    each has been in that state), round to the first."""
    ordered = sorted(
        (a for a in agents if a.state == state),
        key=lambda a: (a.since, a.server, pane_number(a.pane), a.session_id),
    )
    if not ordered:
        return None
    panes = [a.pane for a in ordered]
    if current is not None and current in panes:
        return ordered[(panes.index(current) + 1) % len(ordered)]
    return ordered[0]


def label(agent: Agent) -> str:
    """The words a pane option or a status line shows: ``claude waiting``."""
    return f"{agent.harness} {agent.state}"


def status_line(states: Iterable[str]) -> str:
    """A ``#()`` status segment: how many agents wait, work and idle (``2 waiting 1 working``),
    empty when there are none."""
    counts: dict[str, int] = {}
    for state in states:
        counts[state] = counts.get(state, 0) + 1
    return " ".join(f"{counts[s]} {s}" for s in (WAITING, WORKING, IDLE) if counts.get(s))
