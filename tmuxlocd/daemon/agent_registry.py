"""The daemon's agents (SPEC §13): reports placed by the kernel, pidfds, events, waits,
pane options and the file that keeps them over a restart.

A hook reports its event (``POST /v1/agents/self``); the API places the caller in its pane
by the kernel, as for ``/v1/self`` (ancestors accepted, never ``$TMUX_PANE`` nor the
payload), and this finds the harness process: the nearest ancestor of the hook that is on
the pane's tty and is not a shell (nor a wrapper such as ``env`` or ``timeout``), and never
one that serves several sessions (``identity.serves_sessions``).  It holds a pidfd on that
process: when it exits the loop wakes, and its agent is gone at once.

Changes are published as ``agent.state`` events, wake the waits on agent conditions, set
(with ``--pane-options``) the pane user option ``@tmuxlocd_agent`` through the observer's
control connection, and are saved beside the context state: a restarted daemon takes back
each agent whose process is still the same one (pid and start time) and whose pane is still
there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

import msgspec

from tmuxlocd.core import agents
from tmuxlocd.core.agent_view import AgentInfo, info
from tmuxlocd.core.agents import Agent, Agents, Change, Proc, Report
from tmuxlocd.core.caller import MAX_ANCESTORS
from tmuxlocd.core.events import AgentStateChanged, PaneRemoved, ServerDown
from tmuxlocd.core.location import Location
from tmuxlocd.core.mirror import Argv
from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.core.queries import Selection
from tmuxlocd.daemon.hub import Hub, Published
from tmuxlocd.host.identity import read_stat, shared_server
from tmuxlocd.host.system import HOST, Exit

log = logging.getLogger(__name__)

PANE_OPTION = "@tmuxlocd_agent"
FILE_NAME = "agents.json"
# Changes are saved together, this long after the first: a file written per report was most
# of a report's cost in the daemon (measured: 0.46 of some 2 ms).  A stopping daemon saves
# at once; one killed loses at most this much, and a restart re-checks every process anyway.
SAVE_DELAY_S = 0.25

# Processes between a harness and its hook that are not the harness: shells (a hook command
# is run by ``sh -c``) and the wrappers a command line may put in front.
NOT_HARNESS = frozenset(
    (
        "sh",
        "bash",
        "dash",
        "zsh",
        "fish",
        "ksh",
        "mksh",
        "ash",
        "tcsh",
        "csh",
        "busybox",
        "env",
        "timeout",
        "nice",
        "nohup",
        "setsid",
        "stdbuf",
        "bwrap",
        "firejail",
    )
)


class NoHarness(Exception):
    """No process of the caller's ancestors in its pane can be the harness."""


class Commands(Protocol):
    """The observers' control connections (``observer.Watcher.commands``)."""

    async def commands(
        self, socket_path: str, make: Callable[[Callable[[str], str]], Sequence[Argv]]
    ) -> list[list[str]] | None: ...


# ----------------------------------------------------------------------------------------------
# Finding the harness.


def harness_process(
    caller: int,
    pane_tty: int,
    stop: int,
    stat_of: Callable[[int], ProcStat | None],
    comm_of: Callable[[int], str],
    shared: Callable[[int], bool],
    clients_of: Callable[[int], Sequence[ProcStat] | None] | None = None,
    helpers: frozenset[str] = frozenset(),
) -> ProcStat | None:
    """The nearest proper ancestor of ``caller`` on the tty ``pane_tty`` that is not a shell
    or wrapper (``NOT_HARNESS``), nor one of the harness's own helper processes (``helpers``,
    by ``comm``: the child Cline CLI runs its plugins in); None when the walk reaches
    ``stop`` (the tmux server), pid 1, or its bound first.  A process that serves several
    sessions ends the walk too: with its one client on ``pane_tty`` (``clients_of``: the TUI
    that the kernel pairs with Codex's shared app-server, whose hooks run below the server)
    that client is the harness, else None."""
    current = stat_of(caller)
    steps = 0
    while current is not None and current.ppid > 1 and steps < MAX_ANCESTORS:
        if current.ppid == stop:
            return None
        current = stat_of(current.ppid)
        steps += 1
        if current is None:
            return None
        if shared(current.pid):
            return _sole_client(current.pid, pane_tty, clients_of)
        if current.tty_nr == pane_tty:
            comm = comm_of(current.pid)
            if comm not in NOT_HARNESS and comm not in helpers:
                return current
    return None


def _helpers(harness: str) -> frozenset[str]:
    """The ``comm`` of the process a harness runs its plugins in, if any (its description's
    ``plugin_process``)."""
    from tmuxlocd.core import harnesses

    spec = harnesses.find(harness)
    if spec is None or not spec.plugin_process:
        return frozenset()
    return frozenset((spec.plugin_process,))


def _sole_client(
    server: int,
    pane_tty: int,
    clients_of: Callable[[int], Sequence[ProcStat] | None] | None,
) -> ProcStat | None:
    clients = clients_of(server) if clients_of is not None else None
    if not clients or any(c.tty_nr != pane_tty for c in clients):
        return None
    return min(clients, key=lambda c: (c.starttime, c.pid))


def _client_stat(client: int | None) -> list[ProcStat] | None:
    stat = read_stat(client) if client else None
    return [stat] if stat is not None else None


def read_comm(pid: int) -> str:
    record = HOST.record(pid)
    return record.comm if record is not None else ""


def tty_device(path: str) -> int:
    try:
        return os.stat(path).st_rdev
    except OSError:
        return 0


# ----------------------------------------------------------------------------------------------
# The file.


class Saved(msgspec.Struct, frozen=True, kw_only=True):
    harness: str
    session_id: str
    server: str
    pane: str
    pid: int
    start: int
    state: str
    reason: str = ""
    since: float = 0.0


class SavedFile(msgspec.Struct, frozen=True, kw_only=True):
    version: int = 1
    agents: tuple[Saved, ...] = ()


def encode_saved(found: Iterable[Agent]) -> bytes:
    rows = tuple(
        Saved(
            harness=a.harness,
            session_id=a.session_id,
            server=a.server,
            pane=a.pane,
            pid=a.proc.pid,
            start=a.proc.start,
            state=a.state,
            reason=a.reason,
            since=a.since,
        )
        for a in found
    )
    return msgspec.json.encode(SavedFile(agents=rows))


def decode_saved(data: bytes) -> list[Agent]:
    """The agents of a saved file; none from one that does not parse."""
    try:
        saved = msgspec.json.decode(data, type=SavedFile)
    except msgspec.DecodeError:
        return []
    return [
        Agent(
            s.harness,
            s.session_id,
            s.server,
            s.pane,
            Proc(s.pid, s.start),
            s.state,
            s.reason,
            s.since,
        )
        for s in saved.agents
        if s.state in agents.STATES and s.harness in agents.HARNESSES
    ]


# ----------------------------------------------------------------------------------------------
# The registry.


class AgentRegistry:
    def __init__(
        self,
        hub: Hub,
        *,
        path: str | None = None,
        commands: Commands | None = None,
        pane_options: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.hub = hub
        self.path = path
        self.commands = commands if pane_options else None
        self.clock = clock
        self.agents = Agents()
        self._fds: dict[Proc, Exit] = {}
        self._wake = asyncio.Event()
        self._options: dict[tuple[str, str], str | None] = {}
        self._options_wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._saving: asyncio.TimerHandle | None = None
        # Told of every change, after the events are published (the alerts, SPEC §14).
        self.on_change: list[Callable[[list[Change]], None]] = []
        hub.on_published.append(self.published)

    # ------------------------------------------------------------------ life

    def start(self) -> None:
        """Takes back the saved agents still there, then follows panes that close."""
        self._load()
        if self.commands is not None:
            self._tasks.append(asyncio.create_task(self._keep_options()))
            for agent in self.agents.all():
                self._options[(agent.server, agent.pane)] = agents.label(agent)
            self._options_wake.set()

    async def close(self) -> None:
        """Stops watching; with pane options, takes them out of the panes."""
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        if self.commands is not None:
            for agent in self.agents.all():
                self._options[(agent.server, agent.pane)] = None
            with contextlib.suppress(Exception):
                await self._apply_options()
        if self._saving is not None:
            self._saving.cancel()
            self._save()
        for proc in list(self._fds):
            self._unwatch(proc)
        self._wake.set()

    # ------------------------------------------------------------------ reports

    def report(
        self, caller: int, where: Location, rep: Report, *, client: int | None = None
    ) -> AgentInfo:
        """A hook's report, from the caller the kernel placed at ``where``; ``client``: the
        shared server's client that placed it there (``verified_by: client``), which is
        then its harness process."""
        server, pane = where.server.socket_path, where.pane.id
        known = self.agents.get(rep.harness, rep.session_id)
        if rep.state == agents.GONE:
            changes = self.agents.apply(rep, server, pane, Proc(0, 0), self.clock())
            self._changed(changes)
            if not changes:  # unknown, or known in another pane: it goes on there
                return _gone(rep, server, pane, where) if known is None else info(known, None)
            return info(known or changes[0].agent, where, gone=True)
        found = harness_process(
            caller,
            tty_device(where.pane.tty),
            where.server.pid or 0,
            read_stat,
            read_comm,
            shared_server,
            lambda server: _client_stat(client),
            _helpers(rep.harness),
        )
        if found is None:
            raise NoHarness(
                f"no ancestor of pid {caller} in pane {pane} can be its harness "
                "(only shells between it and the tmux server)"
            )
        proc = Proc(found.pid, found.starttime)
        if not self._watch(proc):
            raise NoHarness(f"the harness process {proc.pid} exited")
        self._changed(self.agents.apply(rep, server, pane, proc, self.clock()))
        agent = self.agents.get(rep.harness, rep.session_id)
        assert agent is not None
        return info(agent, where)

    def _changed(self, changes: list[Change]) -> None:
        if not changes:
            return
        events = [
            AgentStateChanged(
                agent=info(
                    c.agent, self.location(c.agent.server, c.agent.pane), gone=c.after is None
                ),
                before=c.before.state if c.before is not None else None,
            )
            for c in changes
        ]
        self.hub.publish(list(events))
        for listener in list(self.on_change):
            listener(changes)
        if any(
            c.before is None
            or c.after is None
            or (c.before.pane, c.before.harness) != (c.after.pane, c.after.harness)
            for c in changes
        ):
            # Which panes hold which agents is in the text form (``right %4 (codex)``): an
            # answer kept for the model's version (``memo.Kept``) is one no longer.
            self.hub.version += 1
        live = self.agents.procs()
        for proc in list(self._fds):
            if proc not in live:
                self._unwatch(proc)
        if self.commands is not None:
            for c in changes:
                for agent in (c.before, c.after):
                    if agent is not None:
                        self._options[(agent.server, agent.pane)] = self.pane_label(
                            agent.server, agent.pane
                        )
            self._options_wake.set()
        if self.path is not None and self._saving is None:
            self._saving = asyncio.get_running_loop().call_later(SAVE_DELAY_S, self._save)
        self._wake.set()
        self._wake = asyncio.Event()

    # ------------------------------------------------------------------ processes

    def _watch(self, proc: Proc) -> bool:
        if proc in self._fds:
            return True
        watch = HOST.watch_exit(proc.pid, lambda: self._exited(proc))
        if watch is None:
            return False
        # The pid may have been given to another process since it was read: the watch is of
        # whichever has it now, so its start time must be the one read.
        now = read_stat(proc.pid)
        if now is None or now.starttime != proc.start:
            watch.cancel()
            return False
        self._fds[proc] = watch
        return True

    def _unwatch(self, proc: Proc) -> None:
        watch = self._fds.pop(proc, None)
        if watch is not None:
            watch.cancel()

    def _exited(self, proc: Proc) -> None:
        self._unwatch(proc)
        self._changed(self.agents.process_gone(proc))

    # ------------------------------------------------------------------ panes

    def location(self, server: str, pane: str) -> Location | None:
        return self.hub.locations_of(server).get(pane)

    def published(self, items: list[Published]) -> None:
        """(From ``Hub.publish``.) A pane closed, or its server went: its agents are gone
        with it.  Not a subscriber of the hub: streams count those."""
        if not len(self.agents):
            return
        for item in items:
            event = item.event
            if isinstance(event, PaneRemoved):
                self._changed(self.agents.pane_gone(event.server, event.pane))
            elif isinstance(event, ServerDown):
                self._changed(self.agents.pane_gone(event.server.socket_path))

    def pane_label(self, server: str, pane: str) -> str | None:
        """What ``@tmuxlocd_agent`` shows for a pane: its agent that changed last."""
        here = [a for a in self.agents.all() if a.server == server and a.pane == pane]
        if not here:
            return None
        return agents.label(max(here, key=lambda a: a.since))

    async def _keep_options(self) -> None:
        while True:
            await self._options_wake.wait()
            self._options_wake.clear()
            await self._apply_options()

    async def _apply_options(self) -> None:
        pending, self._options = self._options, {}
        assert self.commands is not None
        for (server, pane), value in pending.items():

            def make(
                _word: Callable[[str], str], pane: str = pane, value: str | None = value
            ) -> list[Argv]:
                if value is None:
                    return [("set-option", "-p", "-u", "-t", pane, PANE_OPTION)]
                return [("set-option", "-p", "-t", pane, PANE_OPTION, value)]

            if await self.commands.commands(server, make) is None:
                log.debug("could not set %s on %s", PANE_OPTION, pane)

    # ------------------------------------------------------------------ reading

    def listed(
        self, selection: Selection, state: str | None = None
    ) -> list[tuple[Agent, Location | None]]:
        """The agents whose pane is in ``selection`` (and in ``state``), in pane order."""
        out = []
        for agent in self.agents.all():
            if state is not None and agent.state != state:
                continue
            where = self.location(agent.server, agent.pane)
            if where is None:
                if selection.scoped or selection.server not in (None, agent.server):
                    continue
                if selection.pane not in (None, agent.pane):
                    continue
            elif not selection.matches(where):
                continue
            out.append((agent, where))
        out.sort(key=lambda p: (p[0].server, agents.pane_number(p[0].pane), p[0].since))
        return out

    def harnesses(self, server: str) -> dict[str, str]:
        """Pane id -> the harness of its agent (the one that changed last), on ``server``."""
        out: dict[str, tuple[float, str]] = {}
        for a in self.agents.all():
            if a.server == server and (a.pane not in out or out[a.pane][0] <= a.since):
                out[a.pane] = (a.since, a.harness)
        return {pane: harness for pane, (_, harness) in out.items()}

    def in_pane(self, server: str, pane: str) -> list[Agent]:
        return [a for a in self.agents.all() if a.server == server and a.pane == pane]

    async def wait(
        self, where: Location, state: str, timeout: float
    ) -> tuple[str, Agent | None, float]:
        """Until an agent in the pane is in ``state``: (outcome, the agent, ms waited);
        outcomes ``agent-<state>``, ``agent-gone`` (the one there was left), ``gone`` (the
        pane), ``timeout``."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        server, pane = where.server.socket_path, where.pane.id
        had = False
        while True:
            waited = (loop.time() - started) * 1000
            here = self.in_pane(server, pane)
            for agent in here:
                if agent.state == state:
                    return f"agent-{state}", agent, waited
            if had and not here:
                return "agent-gone", None, waited
            had = had or bool(here)
            if self.location(server, pane) is None:
                return "gone", None, waited
            left = timeout - (loop.time() - started)
            if left <= 0:
                return "timeout", here[0] if here else None, waited
            wake = self._wake
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(left, 1.0)):
                    await wake.wait()

    # ------------------------------------------------------------------ the file

    def _save(self) -> None:
        self._saving = None
        if self.path is None:
            return
        data = encode_saved(self.agents.all())
        tmp = f"{self.path}.tmp{os.getpid()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(tmp, flags, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("could not save the agents to %s: %s", self.path, exc)
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    def _load(self) -> None:
        if self.path is None:
            return
        try:
            with open(self.path, "rb") as f:
                data = f.read(1 << 22)
        except OSError:
            return
        kept = []
        for agent in decode_saved(data):
            # The same process (pid and start time: a reused pid is another), still in a
            # pane that is still there.
            if self.location(agent.server, agent.pane) is None or not self._watch(agent.proc):
                continue
            kept.append(agent)
        self.agents.load(kept)
        log.info("agents taken back", extra={"agents": len(kept)})
        self._save()


def _gone(rep: Report, server: str, pane: str, where: Location) -> AgentInfo:
    return AgentInfo(
        pane=pane,
        server=server,
        harness=rep.harness,
        session_id=rep.session_id,
        state="gone",
        since=0.0,
        pid=0,
        location=where,
    )
