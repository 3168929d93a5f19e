"""``tmuxlocd mcp``: where this agent is in tmux, as an MCP server on stdio (SPEC §8).

A thin shim over the daemon's HTTP API (``tmuxlocd.clients.client``):

- **Identity.**  The daemon identifies its peer, this process, by its controlling tty.  A host
  that starts the server as a plain child keeps the agent's tty, and the answer is
  ``verified_by: tty``.  Hosts may also start it in a new session with no controlling tty (the
  MCP Python SDK's own stdio client does); then every request about ``self`` carries
  ``accept=ancestor``, so the pane of the nearest ancestor that has a tty (the agent's) is self,
  and the answer says ``verified_by: ancestor``.  A process that has a tty never asks that way:
  a terminal started from a pane would otherwise be placed in that pane.
- **Tools** ``where_am_i``, ``find_adjacent_panes``, ``list_panes``: read-only, small answers
  (the text form of SPEC §4 and the daemon's compact JSON).
- **Resources** ``tmux://self`` and ``tmux://self/window``, subscribable.  Updates are driven by
  the daemon's change streams (``pane=self`` and the window of self), never by polling, and a
  subscriber is told only when the resource's content changed.
- **No daemon.**  The tools answer straight from tmux (``tmuxlocd.clients.direct``, the CLI's
  fallback)
  and say that live updates are off; subscriptions start delivering once a daemon answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Literal, cast

import msgspec
from mcp import types as mt
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

from tmuxlocd import __version__
from tmuxlocd.clients import direct
from tmuxlocd.clients.client import (
    AsyncClient,
    ClientError,
    DaemonUnavailable,
    DirectionNeighbors,
    PaneList,
    PaneSummaryList,
    SelfInfo,
    socket_path,
)
from tmuxlocd.core import queries
from tmuxlocd.core.activity import UNTILS, WAIT_MAX_S, Activity, Until
from tmuxlocd.core.agent_view import AGENT_UNTILS, AgentList, AgentUntil
from tmuxlocd.core.answers import WaitAnswer, summary_of
from tmuxlocd.core.events import (
    CHANGE_TYPES,
    Event,
    PaneActivity,
    PaneAdded,
    PaneChanged,
    PaneRemoved,
    SnapshotEvent,
    apply,
)
from tmuxlocd.core.layout import DIRECTIONS, Direction
from tmuxlocd.core.location import Location, text_form
from tmuxlocd.core.queries import StaticView
from tmuxlocd.core.urls import url_id
from tmuxlocd.host import identity

log = logging.getLogger("tmuxlocd.clients.mcp")

# The tool's default timeout_s (its bound is the daemon's, WAIT_MAX_S), shorter than the
# daemon's: under the 60 s a host such as Codex gives a tool call by default, as a wait that
# the host cut off would tell the model nothing.  The description says to call again on
# `timeout`.
WAIT_DEFAULT_S = 50.0

SELF_URI = "tmux://self"
WINDOW_URI = "tmux://self/window"
RESOURCE_URIS = (SELF_URI, WINDOW_URI)

Scope = Literal["window", "session", "server"]
Detail = Literal["summary", "full"]
SCOPES: tuple[Scope, ...] = ("window", "session", "server")
DETAILS: tuple[Detail, ...] = ("summary", "full")

# How long a subscribe request waits for the first snapshot of the streams it starts, so that
# "subscribed" means "watching": a change made right after the answer is not missed.
READY_TIMEOUT = 5.0
# One tmux command reaches the daemon's streams as a burst of events (a split changes every pane
# of the window), and a resource may pass through states that no command left it in: a change
# is told once the content has been still this long, and only if it differs from what
# subscribers were last told.
SETTLE = 0.05
# Reconnection backoff when the daemon is absent or refuses a stream.
RETRY_FIRST = 0.25
RETRY_CAP = 15.0
# The window's stream: its locations and what its panes run.
WINDOW_TYPES = (*sorted(CHANGE_TYPES), "pane.activity")

INSTRUCTIONS = """\
tmuxlocd tells you where this agent runs inside tmux: its session, window and pane, the panes \
around it, and when that changes.
- Resolve self first: for any prompt that refers to tmux relative to you ("the pane below", \
"the pane on the right", "this window", "my session", "the other pane"), call where_am_i (or \
read tmux://self) before anything else.
- Then scope from self: find_adjacent_panes(direction) for a neighbour, \
list_panes(scope="window") for this window, scope="session" only when the prompt is about the \
session.
- Never list the whole server (scope="server") to answer a relational prompt: it is large and \
says nothing about which pane is yours.
- Outside tmux there is no self: if where_am_i says you are not in a tmux pane, ask the user \
which session, window or pane they mean; do not guess from $TMUX_PANE.
- Subscribe to tmux://self (or tmux://self/window) to be told when your location changes \
instead of asking again every turn.
- Not for: splits or windows inside an editor (vim, Emacs, VS Code panes are not tmux panes); \
the shell's `whoami` or `hostname` (a Unix user or host, not a tmux location); prompts that \
do not mention tmux, panes, windows or sessions.
"""

_READ_ONLY = mt.ToolAnnotations(
    read_only_hint=True,
    destructive_hint=False,
    idempotent_hint=True,
    open_world_hint=False,
)

TOOLS: tuple[mt.Tool, ...] = (
    mt.Tool(
        name="where_am_i",
        title="Where am I in tmux",
        description=(
            "Which tmux session, window and pane this agent runs in, its window layout and the "
            "panes directly above, below, left and right of it. Call this FIRST for any "
            'relational prompt such as "the pane below", "the pane to the right", "this '
            'window", "my session". This is not the shell `whoami` (which names a Unix '
            "user): it answers where in tmux you are. Outside tmux it says so: then ask the "
            "user which pane they mean."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "fresh": {
                    "type": "boolean",
                    "default": False,
                    "description": "true right after this agent changed tmux itself (split, "
                    "kill, move a pane): the answer then waits until tmux was re-read, and is "
                    "an error if tmux could not be",
                },
            },
            "additionalProperties": False,
        },
        annotations=_READ_ONLY,
    ),
    mt.Tool(
        name="find_adjacent_panes",
        title="Panes next to a pane",
        description=(
            "The panes that share one edge of a pane (by default this agent's own pane), "
            "largest shared edge first, as JSON {pane, direction, panes: [{id, index, "
            'shared}]}. Use it for "the pane below / above / left / right".'
        ),
        input_schema={
            "type": "object",
            "properties": {
                "direction": {"type": "string", "enum": list(DIRECTIONS)},
                "reference": {
                    "type": "string",
                    "default": "self",
                    "description": 'the pane to look around: "self" (this agent\'s pane) or '
                    "a pane id such as %3",
                },
            },
            "required": ["direction"],
            "additionalProperties": False,
        },
        annotations=_READ_ONLY,
    ),
    mt.Tool(
        name="list_panes",
        title="Panes of this window, session or server",
        description=(
            "The panes of this agent's window (scope=window, the default), its session "
            "(scope=session) or its whole tmux server (scope=server), as JSON. "
            "detail=summary (default) gives id, index, active, geometry, neighbours and "
            "activity (command, busy) per pane; detail=full gives whole locations. Prefer "
            "the narrowest scope: scope=server is large and is never needed for a prompt "
            "about panes near you."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "scope": {"type": "string", "enum": list(SCOPES), "default": "window"},
                "detail": {"type": "string", "enum": list(DETAILS), "default": "summary"},
            },
            "additionalProperties": False,
        },
        annotations=_READ_ONLY,
    ),
    mt.Tool(
        name="list_agents",
        title="Coding agents in panes, and which one needs its user",
        description=(
            'Use this for "ask the agent in the pane to my right", "which agent is waiting", '
            '"is the other agent done": the coding agents (Claude Code, Codex, Gemini CLI) '
            "in this window (scope=window, the default), session or server, as JSON "
            "{agents: [{pane, harness, session_id, state, reason, since, location}]}: state "
            "working (answering a prompt), waiting (asked its user: reason says what) or "
            "idle (ready for a prompt), from the agents' own hooks. Then wait_for_pane with "
            "until=agent-idle to wait for one to finish."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "scope": {"type": "string", "enum": list(SCOPES), "default": "window"},
            },
            "additionalProperties": False,
        },
        annotations=_READ_ONLY,
    ),
    mt.Tool(
        name="wait_for_pane",
        title="Wait until a pane's command finishes",
        description=(
            'Use this to "tell me when it\'s done", "wait until the tests finish", "let me '
            'know when the build in the pane below ends": it blocks until the pane is idle '
            "(its command ended and the shell has the terminal back), busy (a command "
            "started), exit (the pane's own process ended; exit_status when tmux keeps the "
            "pane), or change (command or busy changed), and returns the moment it happens, "
            "at once if it already is. Never poll capture-pane or add `; echo $?` markers for "
            "this. Answers JSON {outcome, met, activity: {command, busy, dead, exit_status}, "
            "location, waited_ms}; outcome timeout or gone (the pane was killed, or its "
            "window or server) is never met. Find the pane first (find_adjacent_panes, "
            "list_panes). On outcome timeout the command is still running: call again to keep "
            "waiting. For a pane that holds a coding agent (list_agents), until=agent-idle "
            "waits for its turn to end and agent-waiting for it to ask its user something; "
            "outcome agent-gone: the agent ended."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "pane": {
                    "type": "string",
                    "description": 'the pane: "self" or an id such as %3',
                },
                "until": {
                    "type": "string",
                    "enum": [*UNTILS, *AGENT_UNTILS],
                    "default": "idle",
                },
                "timeout_s": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": WAIT_MAX_S,
                    "default": WAIT_DEFAULT_S,
                    "description": "give up after this many seconds (outcome timeout)",
                },
            },
            "required": ["pane"],
            "additionalProperties": False,
        },
        annotations=mt.ToolAnnotations(
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=False,
        ),
    ),
)

RESOURCES: tuple[mt.Resource, ...] = (
    mt.Resource(
        uri=SELF_URI,
        name="tmux-self",
        title="This agent's tmux location",
        description=(
            "Session, window, pane, layout and neighbours of the pane this agent runs in "
            "(tmuxlocd's text form). Subscribe to be told when it changes."
        ),
        mime_type="text/plain",
    ),
    mt.Resource(
        uri=WINDOW_URI,
        name="tmux-self-window",
        title="The panes of this agent's tmux window",
        description=(
            "Every pane of the window this agent runs in: id, index, active, geometry and "
            "neighbours, as JSON. Subscribe to be told when it changes."
        ),
        mime_type="application/json",
    ),
)

_json = msgspec.json.Encoder()


def output_schema(*types: Any) -> dict[str, Any]:
    """A tool's ``outputSchema``: the JSON Schema of the Struct its ``structuredContent`` is
    (msgspec's, as in the daemon's OpenAPI document; one of several: ``oneOf`` of tagged
    Structs), an object at the top as MCP asks."""
    schemas, defs = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    top: dict[str, Any] = {"type": "object"}
    if len(types) == 1:
        top.update(defs.pop(types[0].__name__))
    else:
        top["oneOf"] = list(schemas)
    if defs:
        top["$defs"] = defs
    return top


# What each tool's structuredContent is (its text content is the same answer, as text).
OUTPUT_TYPES: dict[str, tuple[Any, ...]] = {
    "where_am_i": (SelfInfo,),
    "find_adjacent_panes": (DirectionNeighbors,),
    "list_panes": (PaneSummaryList, PaneList),
    "list_agents": (AgentList,),
    "wait_for_pane": (WaitAnswer,),
}
TOOLS = tuple(
    tool.model_copy(update={"output_schema": output_schema(*OUTPUT_TYPES[tool.name])})
    for tool in TOOLS
)
TOOL_NAMES = frozenset(tool.name for tool in TOOLS)
INPUT_PROPERTIES = {tool.name: frozenset(tool.input_schema.get("properties", {})) for tool in TOOLS}
# At most this much of what a client sent is repeated in an error (a 1 MB argument is not
# echoed back whole).
ECHO_MAX = 200


def clip(text: str, limit: int = ECHO_MAX) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


class ToolFailure(Exception):
    """A tool call that cannot be answered; the message goes to the model as an error."""


# ----------------------------------------------------------------------------------------------
# Answers as text (pure).

LIVE_OFF = "live updates off: no tmuxlocd daemon answered; computed directly from tmux"
NO_SELF = (
    'there is no "self": this MCP server is not in a tmux pane. Ask the user which session, '
    "window or pane they mean."
)


SHARED = (
    "cannot tell which tmux pane this is (reason: shared_ancestor): this MCP server was "
    "started by a process that serves several sessions (Codex's shared app-server), so its "
    "environment and its ancestors name the pane of whichever session started that server, "
    "which may not be this one. For Codex to start it beside each TUI, set "
    "`[features] daemon_auto_start = false` in ~/.codex/config.toml."
)


def where_text(info: SelfInfo, *, live: bool) -> str:
    """``where_am_i``'s answer: the text form with neighbours, then how it was found."""
    if info.location is None and info.reason == "shared_ancestor":
        lines = [SHARED, NO_SELF, "live updates on" if live else LIVE_OFF]
        return "".join(line + "\n" for line in lines)
    if info.location is None:
        hints = []
        if info.caller.env_pane:
            hints.append(f"TMUX_PANE={info.caller.env_pane} (inherited, unverified)")
        if info.caller.ancestor_pane:
            hints.append(f"ancestor pane {info.caller.ancestor_pane} (unverified)")
        lines = [f"not in a tmux pane (reason: {info.reason or 'unknown'})"]
        if hints:
            lines.append("hints: " + "; ".join(hints))
        lines.append(NO_SELF)
        lines.append("live updates on" if live else LIVE_OFF)
        return "".join(line + "\n" for line in lines)
    status = f"verified_by {info.verified_by}; server {info.location.server.socket_path}"
    status += "; live updates on" if live else "\n" + LIVE_OFF
    return text_form(info.location, with_neighbors=True) + status + "\n"


def self_resource_text(loc: Location | None, reason: str | None = None) -> str:
    """``tmux://self``: the text form of SPEC §4 with its neighbours line."""
    if loc is None:
        return f"not in a tmux pane (reason: {reason or 'unknown'})\n"
    return text_form(loc, with_neighbors=True)


def window_summary(
    locations: Iterable[Location], activities: Mapping[str, Activity] | None = None
) -> bytes:
    """``tmux://self/window`` built from Locations (the shape of /v1/panes?detail=summary),
    with each pane's activity where ``activities`` (by pane id) has it: the resource shows
    what each pane runs, so a change of it is a change of the resource."""
    ordered = sorted(locations, key=queries.pane_order)
    if activities is None:
        panes = tuple(summary_of(loc) for loc in ordered)
    else:
        panes = tuple(
            summary_of(_with_activity(loc, activities.get(loc.pane.id)), with_activity=True)
            for loc in ordered
        )
    return _json.encode(PaneSummaryList(panes=panes, total=len(panes), truncated=False))


def _with_activity(loc: Location, act: Activity | None) -> Location:
    if act is None:
        return loc
    pane = msgspec.structs.replace(
        loc.pane,
        command=act.command,
        busy=act.busy,
        dead=act.dead,
        exit_status=act.exit_status,
        exit_signal=act.exit_signal,
    )
    return msgspec.structs.replace(loc, pane=pane)


def _error_json(code: str, message: str) -> bytes:
    return _json.encode({"error": {"code": code, "message": message}})


def _failure(exc: ClientError) -> ToolFailure:
    if exc.code == "not_in_a_pane":
        return ToolFailure(NO_SELF + f" ({exc.message})")
    return ToolFailure(f"{exc.code}: {exc.message}" if exc.message else exc.code)


def _pane_id(reference: str) -> str:
    try:
        number = url_id(reference, "pane")
    except ValueError:
        raise ToolFailure(
            f'a pane must be "self" or a pane id such as %3, not {clip(reference)!r}'
        ) from None
    return number if number == "self" else f"%{number}"


# ----------------------------------------------------------------------------------------------
# No daemon: the same answers straight from tmux (blocking; run in a thread).


def direct_self(accept_ancestor: bool) -> SelfInfo:
    """What ``GET /v1/self[?accept=ancestor]`` would say, computed without a daemon."""
    return direct.where_am_i(accept_ancestor=accept_ancestor)


def _direct_target(accept_ancestor: bool, reference: str) -> tuple[Location, StaticView]:
    """The pane ``reference`` names (self, or an id), and a view of its server."""
    info, view = direct.where_and_view(accept_ancestor=accept_ancestor)
    if reference == "self":
        if info.location is None:
            raise ToolFailure(NO_SELF)
        return info.location, view
    if info.location is None or reference not in view.locations_of(
        info.location.server.socket_path
    ):
        view = direct.read_view()  # every server: the pane may be on one not read yet
    try:
        return queries.find_pane(view, reference), view
    except queries.QueryError as exc:
        raise ToolFailure(f"{exc.code}: {exc.message}") from None


def direct_neighbors(
    accept_ancestor: bool, direction: Direction, reference: str
) -> DirectionNeighbors:
    loc, view = _direct_target(accept_ancestor, reference)
    answer = queries.neighbors(view, loc, direction)
    assert isinstance(answer, DirectionNeighbors)
    return answer


def direct_panes(accept_ancestor: bool, scope: Scope, detail: Detail) -> bytes:
    info, view = direct.where_and_view(accept_ancestor=accept_ancestor)
    me = info.location
    if me is None:
        raise ToolFailure(NO_SELF)
    # The view holds at least the caller's server, which is all any scope here needs.
    selected = queries.select(view, queries.scope_selection(me, scope))
    if detail == "full":
        return _json.encode(PaneList(panes=tuple(selected), total=len(selected)))
    return window_summary(selected)


# ----------------------------------------------------------------------------------------------
# Live updates: the daemon's streams in, "this resource changed" out.


def daemon_socket(env: Mapping[str, str] | None = None) -> str:
    """Where the daemon listens (SPEC §6), for a process whose environment may be cut down:
    the clients' one rule (``tmuxlocd.host.paths.client_socket_path``)."""
    return socket_path(env)


def has_controlling_tty() -> bool:
    stat = identity.read_stat(os.getpid())
    return stat is not None and stat.tty_nr != 0


class Live:
    """Follows ``pane=self`` and the window of self on the daemon, and calls ``notify(uri)``
    when the content of ``tmux://self`` or ``tmux://self/window`` changed.

    The first state seen of each resource is its baseline.  An event that leaves the content as
    it was (a reconnection's snapshot, a change to a field the resource does not show) is
    silent, and a burst of events is told once (``SETTLE``).
    """

    def __init__(self, client: AsyncClient, notify: Callable[[str], Awaitable[None]]) -> None:
        self.client = client
        self.notify = notify
        self.contents: dict[str, str | bytes] = {}
        self.told: dict[str, str | bytes] = {}
        self._pending: dict[str, asyncio.Task[None]] = {}
        self._self_ready = asyncio.Event()
        self._window_ready = asyncio.Event()
        self._self_task: asyncio.Task[None] | None = None
        self._window_task: asyncio.Task[None] | None = None
        self._window_key: tuple[str, str] | None = None

    def start(self) -> None:
        if self._self_task is None:
            self._self_task = asyncio.create_task(self._follow_self(), name="tmuxlocd-mcp-self")

    async def ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Until both resources have a baseline (or the daemon is known to be absent)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._self_ready.wait()
                await self._window_ready.wait()

    async def stop(self) -> None:
        tasks = [t for t in (self._self_task, self._window_task) if t is not None]
        tasks += self._pending.values()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- streams

    async def _stream(
        self,
        *,
        pane: str | None = None,
        window: str | None = None,
        server: str | None = None,
        types: Iterable[str] | None = None,
    ) -> AsyncIterator[Event]:
        """The daemon's events, reconnecting for ever: ``AsyncClient.events`` resumes a stream
        that dropped; this also waits for a daemon that is not there (yet) or that refused."""
        delay = RETRY_FIRST
        while True:
            try:
                async for event in self.client.events(
                    pane=pane, window=window, server=server, types=types
                ):
                    delay = RETRY_FIRST
                    yield event
            except DaemonUnavailable:
                pass
            except ClientError as exc:
                log.info("stream pane=%s window=%s refused: %s", pane, window, exc)
            # Nothing to wait for: let a subscribe request answer now rather than time out.
            self._self_ready.set()
            self._window_ready.set()
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_CAP)

    async def _follow_self(self) -> None:
        async for event in self._stream(pane="self"):
            match event:
                case SnapshotEvent(panes=panes):
                    await self._self_is(panes[0] if panes else None)
                case PaneAdded(location=loc) | PaneChanged(location=loc):
                    await self._self_is(loc)
                case PaneRemoved():
                    await self._self_is(None)
                case _:
                    pass

    async def _self_is(self, loc: Location | None) -> None:
        await self._changed(SELF_URI, self_resource_text(loc, "the pane is gone"))
        key = (loc.server.socket_path, loc.window.id) if loc is not None else None
        if key != self._window_key:
            # Self moved to another window (or this is the first sight of it): follow the new
            # window; its first snapshot is compared with what subscribers last saw.
            self._window_key = key
            if self._window_task is not None:
                self._window_task.cancel()
                self._window_task = None
            if key is None:
                await self._changed(WINDOW_URI, window_summary(()))
                self._window_ready.set()
            else:
                self._window_task = asyncio.create_task(
                    self._follow_window(*key), name="tmuxlocd-mcp-window"
                )
        self._self_ready.set()

    async def _follow_window(self, server: str, window: str) -> None:
        state: dict[str, Location] = {}
        # What each pane runs, from pane.activity events (Locations of the other events do
        # not carry it): tmux://self/window shows it, so its changes are told too.
        activities: dict[str, Activity] = {}
        async for event in self._stream(window=window, server=server, types=WINDOW_TYPES):
            apply(state, event)
            if isinstance(event, PaneActivity):
                activities[event.location.pane.id] = event.after
            if isinstance(
                event, SnapshotEvent | PaneAdded | PaneChanged | PaneRemoved | PaneActivity
            ):
                # A pane that left the window arrives once as a change that places it elsewhere.
                inside = [loc for loc in state.values() if loc.window.id == window]
                await self._changed(WINDOW_URI, window_summary(inside, activities))
                self._window_ready.set()

    async def _changed(self, uri: str, content: str | bytes) -> None:
        self.contents[uri] = content
        if uri not in self.told:
            self.told[uri] = content  # the baseline
        elif content != self.told[uri] and uri not in self._pending:
            self._pending[uri] = asyncio.create_task(self._tell(uri), name=f"tmuxlocd-mcp-{uri}")

    async def _tell(self, uri: str) -> None:
        try:
            await asyncio.sleep(SETTLE)
        finally:
            del self._pending[uri]
        content = self.contents[uri]
        if content != self.told[uri]:
            self.told[uri] = content
            await self.notify(uri)


# ----------------------------------------------------------------------------------------------
# The server.


class Shim:
    """The MCP handlers, over one daemon client."""

    def __init__(self, client: AsyncClient, *, accept_ancestor: bool) -> None:
        self.client = client
        self.accept_ancestor = accept_ancestor
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        # stdio carries one client: a 2025-era subscription is kept with the session proxy it
        # came on, whose standalone channel carries the notifications.
        self.subscribed: dict[str, ServerSession] = {}
        self.live = Live(client, self._notify)

    def server(self) -> Server[Any]:
        return Server(
            "tmuxlocd",
            version=__version__,
            title="tmuxlocd: where this agent is in tmux",
            instructions=INSTRUCTIONS,
            on_list_tools=self.on_list_tools,
            on_call_tool=self.on_call_tool,
            on_list_resources=self.on_list_resources,
            on_read_resource=self.on_read_resource,
            on_subscribe_resource=self.on_subscribe,
            on_unsubscribe_resource=self.on_unsubscribe,
            on_subscriptions_listen=self.on_listen,
        )

    # -- answers

    async def self_info(self, fresh: bool = False) -> tuple[SelfInfo, bool]:
        """(where this process is, whether a daemon answered).  ``fresh``: after a re-read
        of tmux; a re-read that fails raises (``SyncFailedError``), never answers as data."""
        try:
            return await self.client.where_am_i(fresh=fresh), True
        except DaemonUnavailable:
            return await asyncio.to_thread(direct_self, self.accept_ancestor), False

    async def where_am_i(self, fresh: bool = False) -> str:
        info, live = await self.self_info(fresh)
        return where_text(info, live=live)

    async def find_adjacent_panes(self, direction: str, reference: str) -> tuple[bytes, bool]:
        if direction not in DIRECTIONS:
            raise ToolFailure(f"direction must be one of {', '.join(DIRECTIONS)}")
        d = DIRECTIONS[DIRECTIONS.index(direction)]  # typed as Direction
        pane = _pane_id(reference)
        try:
            return _json.encode(await self.client.neighbors(d, pane)), True
        except DaemonUnavailable:
            answer = await asyncio.to_thread(direct_neighbors, self.accept_ancestor, d, pane)
            return _json.encode(answer), False
        except ClientError as exc:
            raise _failure(exc) from None

    async def list_panes(self, scope: str, detail: str) -> tuple[bytes, bool]:
        if scope not in SCOPES:
            raise ToolFailure(f"scope must be one of {', '.join(SCOPES)}")
        if detail not in DETAILS:
            raise ToolFailure(f"detail must be one of {', '.join(DETAILS)}")
        s = SCOPES[SCOPES.index(scope)]  # typed as Scope
        try:
            if detail == "summary":
                return _json.encode(await self.client.panes(s, "summary", activity=True)), True
            return _json.encode(await self.client.panes(s, "full", activity=True)), True
        except DaemonUnavailable:
            d = DETAILS[DETAILS.index(detail)]
            return await asyncio.to_thread(direct_panes, self.accept_ancestor, s, d), False
        except ClientError as exc:
            raise _failure(exc) from None

    async def list_agents(self, scope: str) -> bytes:
        if scope not in SCOPES:
            raise ToolFailure(f"scope must be one of {', '.join(SCOPES)}")
        try:
            answer = await self.client.agents(SCOPES[SCOPES.index(scope)])
        except DaemonUnavailable as exc:
            raise ToolFailure(f"the tmuxlocd daemon is not answering ({exc})") from None
        return _json.encode(answer)

    async def wait_for_pane(self, pane: str, until: str, timeout_s: object) -> bytes:
        if until not in UNTILS and until not in AGENT_UNTILS:
            raise ToolFailure(f"until must be one of {', '.join(UNTILS + AGENT_UNTILS)}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float):
            raise ToolFailure("timeout_s must be a number of seconds")
        if not 0 <= timeout_s <= WAIT_MAX_S:
            raise ToolFailure(f"timeout_s must be from 0 to {WAIT_MAX_S:g}")
        u = cast(Until | AgentUntil, until)
        target = _pane_id(pane)  # checked here: the daemon is never sent what is no id
        try:
            answer = await self.client.wait(target, u, timeout_s=float(timeout_s))
        except DaemonUnavailable as exc:
            raise ToolFailure(f"the tmuxlocd daemon is not answering ({exc}); no wait") from None
        return _json.encode(answer)

    async def read(self, uri: str) -> str:
        if uri == SELF_URI:
            info, _ = await self.self_info()
            return self_resource_text(info.location, info.reason)
        if uri == WINDOW_URI:
            try:
                body, _ = await self.list_panes("window", "summary")
            except ToolFailure as exc:
                body = _error_json("not_in_a_pane", str(exc))
            return body.decode("utf-8")
        raise MCPError(mt.INVALID_PARAMS, f"unknown resource {uri}")

    # -- handlers

    async def on_list_tools(
        self, ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        return mt.ListToolsResult(tools=list(TOOLS))

    async def on_call_tool(
        self, ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams
    ) -> mt.CallToolResult:
        name = params.name
        if name not in TOOL_NAMES:
            # Not a tool's failure but a bad request: JSON-RPC's invalid params (MCP spec).
            raise MCPError(mt.INVALID_PARAMS, f"unknown tool {clip(name)!r}")
        args = params.arguments or {}
        try:
            check_arguments(name, args)
            structured, text, live = await self.call(name, args)
        except ToolFailure as exc:
            return _error(str(exc))
        except ClientError as exc:
            return _error(str(_failure(exc)))
        return _result(text, structured, live=live)

    async def call(self, name: str, args: dict[str, Any]) -> tuple[dict[str, Any], str, bool]:
        """(structuredContent, its text, whether a daemon answered) of one valid call."""
        if name == "where_am_i":
            fresh = args.get("fresh", False)
            if not isinstance(fresh, bool):
                raise ToolFailure("fresh must be true or false")
            info, live = await self.self_info(fresh)
            return msgspec.to_builtins(info), where_text(info, live=live), live
        if name == "find_adjacent_panes":
            body, live = await self.find_adjacent_panes(
                _arg(args, "direction", None), _arg(args, "reference", "self")
            )
        elif name == "list_panes":
            body, live = await self.list_panes(
                _arg(args, "scope", "window"), _arg(args, "detail", "summary")
            )
        elif name == "list_agents":
            body, live = await self.list_agents(_arg(args, "scope", "window")), True
        else:
            body = await self.wait_for_pane(
                _arg(args, "pane", None),
                _arg(args, "until", "idle"),
                args.get("timeout_s", WAIT_DEFAULT_S),
            )
            live = True
        return msgspec.json.decode(body), body.decode("utf-8"), live

    async def on_list_resources(
        self, ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        return mt.ListResourcesResult(resources=list(RESOURCES))

    async def on_read_resource(
        self, ctx: ServerRequestContext[Any], params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult:
        uri = str(params.uri)
        text = await self.read(uri)
        mime = "text/plain" if uri == SELF_URI else "application/json"
        return mt.ReadResourceResult(
            contents=[mt.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    async def on_subscribe(
        self, ctx: ServerRequestContext[Any], params: mt.SubscribeRequestParams
    ) -> mt.EmptyResult:
        uri = str(params.uri)
        if uri not in RESOURCE_URIS:
            raise MCPError(mt.INVALID_PARAMS, f"unknown resource {uri}")
        self.subscribed[uri] = ctx.session
        self.live.start()
        await self.live.ready()
        return mt.EmptyResult()

    async def on_unsubscribe(
        self, ctx: ServerRequestContext[Any], params: mt.UnsubscribeRequestParams
    ) -> mt.EmptyResult:
        self.subscribed.pop(str(params.uri), None)
        return mt.EmptyResult()

    async def on_listen(
        self, ctx: ServerRequestContext[Any], params: mt.SubscriptionsListenRequestParams
    ) -> mt.SubscriptionsListenResult:
        # 2026-era subscriptions: one listen stream per request, fed by the bus.  No await
        # between the baseline being ready and the handler joining the bus: nothing is missed.
        wanted = params.notifications.resource_subscriptions or ()
        if any(uri in RESOURCE_URIS for uri in wanted):
            self.live.start()
            await self.live.ready()
        return await self.listen(ctx, params)

    async def _notify(self, uri: str) -> None:
        session = self.subscribed.get(uri)
        if session is not None:
            try:
                await session.send_resource_updated(uri)
            except Exception:  # the client went away; the read loop ends the server
                log.debug("could not send resources/updated for %s", uri, exc_info=True)
        await self.bus.publish(ResourceUpdated(uri=uri))


def check_arguments(tool: str, args: dict[str, Any]) -> None:
    """MCP servers must validate tool inputs: an argument the tool's input schema does not
    name is an error that names it (a misspelt one would otherwise leave its default in
    force, and the answer would be about something else)."""
    known = INPUT_PROPERTIES[tool]
    unknown = sorted(set(args) - known)
    if unknown:
        names = clip(", ".join(repr(name) for name in unknown))
        expected = ", ".join(sorted(known)) or "none"
        raise ToolFailure(f"unknown argument(s) for {tool}: {names} (expected: {expected})")


def _arg(args: dict[str, Any], name: str, default: str | None) -> str:
    value = args.get(name, default)
    if not isinstance(value, str):
        raise ToolFailure(f"argument {name!r} is required and must be a string")
    return value


def _result(text: str, structured: dict[str, Any], *, live: bool = True) -> mt.CallToolResult:
    content: list[mt.ContentBlock] = [mt.TextContent(type="text", text=text)]
    if not live:
        content.append(mt.TextContent(type="text", text=LIVE_OFF))
    return mt.CallToolResult(content=content, structured_content=structured)


def _error(message: str) -> mt.CallToolResult:
    # Every piece of client input in a message is clipped where it is put in; this bounds the
    # whole (a daemon's message included).
    text = clip(message, 4 * ECHO_MAX + 400)
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)], is_error=True)


async def serve(client: AsyncClient | None = None) -> None:
    """Serve MCP on this process's stdin/stdout until the client closes stdin."""
    accept_ancestor = not has_controlling_tty()
    client = client or AsyncClient(daemon_socket(), accept_ancestor=accept_ancestor)
    # The client imports aiohttp on its first request; importing it while the host is still
    # starting up keeps that cost off the first tool call.
    warm = asyncio.create_task(asyncio.to_thread(importlib.import_module, "aiohttp"))
    shim = Shim(client, accept_ancestor=accept_ancestor)
    server = shim.server()
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await shim.live.stop()
        await client.close()
        with contextlib.suppress(Exception):
            await warm


def main() -> int:
    """``tmuxlocd mcp``: exit 0 when the client closed the connection."""
    # stdout is the protocol: anything logged goes to stderr, which hosts keep as a log.
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="tmuxlocd mcp: %(levelname)s %(message)s"
    )
    try:
        asyncio.run(serve())
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
