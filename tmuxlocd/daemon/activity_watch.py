"""Watches what panes run, for those who ask (spec "Pane activity"): the shell over
tmuxlocd.core.activity.

Only *watched* panes cost anything: the panes of pending waits and of the streams that asked
for ``pane.activity``.  For each, ``/proc/<pane_pid>/stat`` is read every ``period`` (a start
or a change of command is seen within that), and the foreground process and the pane's own
process are each held by a pidfd in the event loop, so that their end is seen the moment the
kernel reports it.  After the foreground process ends the shell may not have taken the
terminal back yet, so the pane is re-read on a short backoff (1, 2, 4 ... 128 ms) rather than
at the next tick.  When the pane's own process ends, the server is re-read and tmux asked for
the exit status; before 3.6 a SIGCHLD that tmux lost leaves the status empty, and a SIGCHLD
sent to the server (whose own handler reaps) recovers it.

With remain-on-exit off a pane whose process ended is removed at once, and a removal alone
does not say whether the process exited by itself or the pane was killed (the process ends
first either way).  While panes of a server are watched, a ``pane-exited`` hook there records
the ids of panes whose programs ended (tmux runs it for those only, never for a kill), and a
watched pane's removal is answered ``exit`` or ``gone`` from it (tmuxlocd.core.activity).

With nothing watched there is no timer, no hub subscriber, no /proc read, no hook and no tmux
command.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections import Counter
from collections.abc import Callable, Coroutine, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import msgspec

from tmuxlocd.core import activity
from tmuxlocd.core.activity import Activity, Outcome, Until, with_activity
from tmuxlocd.core.errors import SyncFailed
from tmuxlocd.core.events import PaneActivity, PaneChanged, PaneRemoved, ServerDown
from tmuxlocd.core.journal import Published
from tmuxlocd.core.location import Location, PaneRef
from tmuxlocd.core.queries import Selection
from tmuxlocd.daemon.hub import Hub, Subscriber
from tmuxlocd.host import proc
from tmuxlocd.host.system import HOST, Exit

log = logging.getLogger(__name__)

PERIOD_S = 0.5  # a command's start or change is seen within this
MAX_WAITS = 1000
CHASE_FIRST_S = 0.001  # the first re-read after the foreground process ended
CHASE_LAST_S = 0.128
# A process caught inside exec() (its name there, its arguments not yet): read again after
# 1, 2, 4, 8 ms before its command is told; the window measured is well under a millisecond.
PENDING_FIRST_S = 0.001
PENDING_READS = 4
# After the pane's own process ended: how long tmux is given to report the exit status
# before it is sent a SIGCHLD, and how long in all before the status is given up as unknown.
STATUS_GRACE_S = 0.02
STATUS_GIVE_UP_S = 1.0
DEAD_KEPT = 1024
# The Location fields whose change a watch follows: a respawn, a death, its status.
DEATH_FIELDS = frozenset({"pane.pid", "pane.dead", "pane.exit_status", "pane.exit_signal"})
DEAD_FORMAT = "#{pane_dead} #{pane_dead_status} #{pane_dead_signal}"
EXITED_HOOK_INDEX = 7741  # of pane-exited's array: a user's hooks (at [0], [1] ...) stay
HOOK_TIMEOUT_S = 2.0  # a wait starts without the hook rather than hang on a stuck server
EXITED_REASON = (
    "the pane's process exited and tmux removed the pane (remain-on-exit off: no exit status)"
)

Key = tuple[str, str]  # (socket path, pane id)
T = TypeVar("T")


class PaneReader(Protocol):
    """What asks tmux about one pane (the observer's control client)."""

    async def pane_format(self, socket_path: str, pane_id: str, fmt: str) -> str | None:
        """``display-message -p -t <pane> <fmt>``; None when it could not be asked."""
        ...

    async def commands(
        self, socket_path: str, make: Callable[[Callable[[str], str]], Sequence[activity.Argv]]
    ) -> list[list[str]] | None:
        """The commands ``make`` builds (given the command-word speller), run in order: each
        reply's lines, or None when it could not be asked or tmux refused one."""
        ...


class WaitLimit(Exception):
    """Too many waits at once."""


class Stopping(Exception):
    """The daemon is stopping: no wait outlives it."""


class WaitResult(msgspec.Struct, frozen=True, kw_only=True):
    outcome: Outcome
    location: Location | None
    activity: Activity
    before: Activity
    waited_ms: float
    reason: str | None = None


class _Waiter:
    def __init__(self, until: Until, before: Activity) -> None:
        self.until = until
        self.before = before
        self.future: asyncio.Future[tuple[Outcome | None, Activity, str | None]] = (
            asyncio.get_running_loop().create_future()
        )

    def settle(self, outcome: Outcome | None, now: Activity, reason: str | None = None) -> None:
        if not self.future.done():
            self.future.set_result((outcome, now, reason))


class _Watch:
    """One watched pane: its last reading, its exit watches and the waits on it."""

    def __init__(self, key: Key, loc: Location) -> None:
        self.key = key
        self.pid = loc.pane.pid
        self.server_pid = loc.server.pid
        self.activity = activity.UNKNOWN
        self.foreground: int | None = None
        self.fg_exit: Exit | None = None
        self.pane_exit: Exit | None = None
        self.exiting = False  # the pane's process ended: its status is being asked for
        self.pending_reads = 0  # re-reads of a process caught inside exec() (PENDING_READS)
        self.rereading = False
        self.waiters: set[_Waiter] = set()
        self.closed = False


class ActivityWatcher:
    def __init__(
        self,
        hub: Hub,
        reader: PaneReader | None = None,
        *,
        period: float = PERIOD_S,
        max_waits: int = MAX_WAITS,
    ) -> None:
        self.hub = hub
        self.reader = reader
        self.period = period
        self.max_waits = max_waits
        self.waits = 0
        self.stopping = False
        self._watches: dict[Key, _Watch] = {}
        self._wait_refs: Counter[Key] = Counter()
        self._interests: Counter[Selection] = Counter()
        self._tick: asyncio.Task[None] | None = None
        self._follow: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        # The last activity of panes that died (remain-on-exit), by (key, pid): a dead pane's
        # exit status stays known after its watch ends.  Bounded: oldest first out.
        self._dead: dict[tuple[Key, int], Activity] = {}
        # The pane-exited hook, per server: its install (done: True if in place), the ids
        # of exited panes read so far, and the removals being classified (exit or gone).
        self._hooks: dict[str, asyncio.Task[bool]] = {}
        self._exited: dict[str, set[str]] = {}
        self._classifying: Counter[str] = Counter()

    # ------------------------------------------------------------------ what is watched

    @property
    def watched(self) -> int:
        return len(self._watches)

    @contextlib.contextmanager
    def interest(self, selection: Selection) -> Iterator[None]:
        """A stream that asked for pane.activity: its selection's panes are watched while it
        lives (panes added to the selection are picked up at the next tick)."""
        self._interests[selection] += 1
        self._refresh()
        try:
            yield
        finally:
            self._interests[selection] -= 1
            if self._interests[selection] <= 0:
                del self._interests[selection]
            self._refresh()

    def _wanted(self) -> dict[Key, Location]:
        out: dict[Key, Location] = {}
        for key in self._wait_refs:
            loc = self.hub.locations_of(key[0]).get(key[1])
            if loc is not None:
                out[key] = loc
        if self._interests:
            selections = list(self._interests)
            for loc in self.hub.all_locations():
                if any(s.matches(loc) for s in selections):
                    out[(loc.server.socket_path, loc.pane.id)] = loc
        return out

    def _refresh(self) -> None:
        wanted = self._wanted()
        for key in list(self._watches):
            if key not in wanted and not self._watches[key].waiters:
                self._drop(self._watches.pop(key))
        for key, loc in wanted.items():
            watch = self._watches.get(key)
            # Respawned: a new process.  A pid of 0 is none said (next-3.8 writes no
            # pane_pid for a dead pane): the same pane, dead, not a new process.
            if watch is not None and loc.pane.pid and watch.pid != loc.pane.pid:
                self._drop(self._watches.pop(key))
                watch = None
            if watch is None:
                self._watches[key] = watch = self._start(key, loc)
                self._read(watch, publish=False)
        self._hook_servers()
        self._run_tasks()

    # ------------------------------------------------------------------ the pane-exited hook

    def _hook_servers(self) -> None:
        """The hook is in place on exactly the servers with watched panes (or removals still
        being classified)."""
        if self.reader is None or self.stopping:
            return
        servers = {key[0] for key in self._watches} | set(self._classifying)
        for server in servers - set(self._hooks):
            self._hooks[server] = self._spawn(self._install(server), "activity hook")
        for server in set(self._hooks) - servers:
            self._hooks.pop(server).cancel()
            self._exited.pop(server, None)
            if server in self.hub.servers:
                self._spawn(self._uninstall(server), "activity unhook")

    def _spawn(self, coro: Coroutine[Any, Any, T], name: str) -> asyncio.Task[T]:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _install(self, server: str) -> bool:
        assert self.reader is not None
        done = await self.reader.commands(
            server, lambda word: activity.exited_hook_install(word, EXITED_HOOK_INDEX)
        )
        if done is None:
            log.warning("could not install the pane-exited hook on %s", server)
        return done is not None

    async def _uninstall(self, server: str) -> bool:
        assert self.reader is not None
        done = await self.reader.commands(
            server, lambda word: activity.exited_hook_remove(EXITED_HOOK_INDEX)
        )
        return done is not None

    async def _hook_ready(self, server: str) -> None:
        task = self._hooks.get(server)
        if task is None or task.done():
            return
        try:
            async with asyncio.timeout(HOOK_TIMEOUT_S):
                await asyncio.shield(task)
        except TimeoutError:
            pass  # the wait goes on without it: a removal then answers gone
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the wait itself is cancelled (its client hung up)
            # else the install was called off (the server's last watch went): carry on

    def _hooked(self, server: str) -> bool:
        task = self._hooks.get(server)
        return (
            task is not None
            and task.done()
            and not task.cancelled()
            and task.exception() is None
            and task.result()
        )

    async def _classify(self, watch: _Watch, reason: str) -> None:
        """A watched pane was removed: ``exit`` if tmux ran pane-exited for it, else gone."""
        server, pane = watch.key
        try:
            exited = self._exited.setdefault(server, set())
            if pane not in exited and self.reader is not None:
                replies = await self.reader.commands(server, lambda word: [activity.exited_read()])
                if replies is not None:
                    exited |= activity.parse_exited(" ".join(replies[0]))
            if pane in self._exited.get(server, ()):
                now = activity.exited_activity(watch.activity)
                for waiter in list(watch.waiters):
                    waiter.settle(
                        activity.outcome(waiter.until, waiter.before, now), now, EXITED_REASON
                    )
            for waiter in list(watch.waiters):
                waiter.settle("gone", watch.activity, reason)
        finally:
            self._classifying[server] -= 1
            if self._classifying[server] <= 0:
                del self._classifying[server]
            self._refresh()

    def _start(self, key: Key, loc: Location) -> _Watch:
        watch = _Watch(key, loc)
        if loc.pane.dead:
            known = self._dead.get((key, watch.pid))
            if loc.pane.exit_status is not None or loc.pane.exit_signal is not None:
                known = activity.dead_activity(
                    activity.UNKNOWN, loc.pane.exit_status, loc.pane.exit_signal
                )
            if known is not None:
                watch.activity = known
            else:
                # Dead without its status yet (before 3.6 tmux may have lost the SIGCHLD):
                # asked for, as for a death seen, before any wait is answered.
                self._pane_ended(watch)
            return watch
        watch.pane_exit = HOST.watch_exit(watch.pid, lambda: self._pane_ended(watch))
        if watch.pane_exit is None and not proc.running(watch.pid):
            # Ended and reaped before the watch began (the model has not shown the death
            # yet): no exit watch can tell it any more, so it is taken as told now.
            self._pane_ended(watch)
        return watch

    def _drop(self, watch: _Watch) -> None:
        watch.closed = True
        self._close_fg(watch)
        if watch.pane_exit is not None:
            watch.pane_exit.cancel()
            watch.pane_exit = None

    def _close_fg(self, watch: _Watch) -> None:
        if watch.fg_exit is not None:
            watch.fg_exit.cancel()
            watch.fg_exit = None

    def _run_tasks(self) -> None:
        """The timer and the hub subscription run only while something is watched."""
        if self._watches or self._interests:
            if self._tick is None:
                self._tick = asyncio.create_task(self._tick_loop(), name="activity tick")
            if self._follow is None:
                self._follow = asyncio.create_task(self._follow_hub(), name="activity follow")
        else:
            for task in (self._tick, self._follow):
                if task is not None:
                    task.cancel()
            self._tick = self._follow = None

    async def _tick_loop(self) -> None:
        failing = False
        while True:
            await asyncio.sleep(self.period)
            try:
                self._refresh()
                for watch in list(self._watches.values()):
                    self._read(watch)
            except Exception:
                # Never a silent stop of every watch: logged once an episode, kept going.
                if not failing:
                    log.exception("reading the watched panes failed")
                failing = True
            else:
                failing = False

    # ------------------------------------------------------------------ reading

    def _read(self, watch: _Watch, *, publish: bool = True) -> None:
        if watch.closed or watch.activity.dead or watch.exiting:
            return
        reading = proc.read_pane(watch.pid)
        if reading is None:
            return  # the pane is going away: its removal or death will tell
        if reading.foreground != watch.foreground:
            self._close_fg(watch)
            watch.foreground = reading.foreground
            if reading.foreground is not None:
                pid = reading.foreground
                watch.fg_exit = HOST.watch_exit(pid, lambda: self._fg_ended(watch, pid))
        if reading.pending and watch.pending_reads < PENDING_READS:
            # Its arguments are not there yet: told once they are (a first reading, which
            # tells nobody, keeps comm's name meanwhile).
            if not watch.rereading:
                watch.rereading = True
                delay = PENDING_FIRST_S * 2**watch.pending_reads
                watch.pending_reads += 1
                asyncio.get_running_loop().call_later(delay, self._reread, watch)
            if publish:
                return
        else:
            watch.pending_reads = 0
        self._set(watch, reading.activity, publish=publish)

    def _reread(self, watch: _Watch) -> None:
        watch.rereading = False
        self._read(watch)

    def _fg_ended(self, watch: _Watch, pid: int) -> None:
        self._close_fg(watch)
        self._chase(watch, pid, CHASE_FIRST_S)

    def _chase(self, watch: _Watch, pid: int, delay: float) -> None:
        """Re-read until the terminal has left ``pid``'s group (the shell takes it back a
        moment after its child ended), on a doubling backoff."""
        if watch.closed:
            return
        self._read(watch)
        if watch.foreground == pid and delay <= CHASE_LAST_S:
            asyncio.get_running_loop().call_later(delay, self._chase, watch, pid, delay * 2)

    def _pane_ended(self, watch: _Watch) -> None:
        if watch.pane_exit is not None:
            watch.pane_exit.cancel()
            watch.pane_exit = None
        self._close_fg(watch)
        watch.exiting = True
        self._spawn(self._exit_status(watch), "activity exit status")

    async def _exit_status(self, watch: _Watch) -> None:
        """The pane's process ended: the pane goes (remain-on-exit off: the re-read removes
        it) or stays dead, and then tmux knows the status.  The model's rows carry it
        (pane-died's hook, the observer's chase before 3.6); tmux is asked too, in case the
        model is slow to show it."""
        server, pane = watch.key
        with contextlib.suppress(SyncFailed):
            await self.hub.sync(server)
        loop = asyncio.get_running_loop()
        give_up = loop.time() + STATUS_GIVE_UP_S
        delay = STATUS_GRACE_S
        dead: tuple[bool, int | None, int | None] | None = None
        while not watch.closed and (loc := self.hub.locations_of(server).get(pane)) is not None:
            if loc.pane.dead and (
                loc.pane.exit_status is not None or loc.pane.exit_signal is not None
            ):
                dead = (True, loc.pane.exit_status, loc.pane.exit_signal)
                break
            text = None
            if self.reader is not None:
                text = await self.reader.pane_format(server, pane, DEAD_FORMAT)
            dead = activity.parse_dead(text) if text is not None else None
            if dead is not None and dead[0] and (dead[1] is not None or dead[2] is not None):
                break
            if loop.time() >= give_up or self.reader is None:
                break
            await asyncio.sleep(delay)
            if watch.server_pid:
                # A SIGCHLD tmux lost (libutempter's, before 3.6) leaves the pane without
                # its status; tmux's own handler reaps on the next one.
                with contextlib.suppress(OSError):
                    os.kill(watch.server_pid, signal.SIGCHLD)
            delay = min(delay * 2, 0.2)
        if watch.closed or pane not in self.hub.locations_of(server):
            return  # gone: the hub's removal ends the waits
        status = dead[1] if dead is not None else None
        sig = dead[2] if dead is not None else None
        with contextlib.suppress(SyncFailed):
            await self.hub.sync(server)  # the Location's pane.dead, published
        watch.exiting = False
        self._set(watch, activity.dead_activity(watch.activity, status, sig), publish=True)

    async def _ask_dead(self, watch: _Watch) -> None:
        """A pane found dead (not seen dying): its status, asked of tmux once."""
        if self.reader is None:
            return
        text = await self.reader.pane_format(watch.key[0], watch.key[1], DEAD_FORMAT)
        dead = activity.parse_dead(text) if text is not None else None
        if dead is not None and dead[0]:
            self._set(watch, activity.dead_activity(watch.activity, dead[1], dead[2]), publish=True)

    def _set(self, watch: _Watch, now: Activity, *, publish: bool) -> None:
        before = watch.activity
        if now == before:
            return
        watch.activity = now
        if now.dead:
            self._dead[(watch.key, watch.pid)] = now
            while len(self._dead) > DEAD_KEPT:
                del self._dead[next(iter(self._dead))]
        loc = self.hub.locations_of(watch.key[0]).get(watch.key[1])
        if publish and loc is not None and self._interests:
            shown = with_activity(loc, now)
            if any(s.matches(loc) for s in self._interests):
                event = PaneActivity(
                    location=shown, before=before, after=now, changed=activity.changed(before, now)
                )
                self.hub.publish([event])
        for waiter in list(watch.waiters):
            result = activity.outcome(waiter.until, waiter.before, now)
            if result is not None:
                waiter.settle(result, now)

    # ------------------------------------------------------------------ the hub's news

    async def _follow_hub(self) -> None:
        def wanted(event: object) -> bool:
            match event:
                case PaneRemoved(pane=pane, server=server):
                    return (server, pane) in self._watches
                case ServerDown():
                    return True
                case PaneChanged(location=loc, changed=changed):
                    key = (loc.server.socket_path, loc.pane.id)
                    return key in self._watches and any(f in DEATH_FIELDS for f in changed)
                case _:
                    return False

        with self.hub.subscribe(wanted) as sub:
            while True:
                await sub.wait()
                if sub.closed:
                    return
                if sub.lagged:
                    sub.lagged = False
                    self._gone_check()
                self._news(sub, sub.drain())

    def _news(self, sub: Subscriber, items: list[Published]) -> None:
        for item in items:
            match item.event:
                case PaneRemoved(pane=pane, server=server):
                    self._gone((server, pane), "the pane was removed (killed)", removed=True)
                case ServerDown(server=ref):
                    for key in [k for k in self._watches if k[0] == ref.socket_path]:
                        self._gone(key, "the tmux server went away")
                case PaneChanged(location=loc) if loc.pane.dead:
                    self._died(loc)
                case _:
                    pass
        self._refresh()

    def _died(self, loc: Location) -> None:
        """The model shows a watched pane dead (pane-died's rows, a re-read): with its status,
        the pane's waits are answered now, even if no pidfd saw the end (the process was
        reaped before the watch began); without, it is asked for as for a death seen."""
        watch = self._watches.get((loc.server.socket_path, loc.pane.id))
        if watch is None or watch.closed or (loc.pane.pid and loc.pane.pid != watch.pid):
            return  # not ours, or respawned (the refresh starts a new watch)
        p = loc.pane
        if p.exit_status is not None or p.exit_signal is not None:
            if not watch.activity.dead:
                self._close_fg(watch)
                self._set(
                    watch,
                    activity.dead_activity(watch.activity, p.exit_status, p.exit_signal),
                    publish=True,
                )
        elif not watch.exiting and not watch.activity.dead:
            self._pane_ended(watch)

    def _gone_check(self) -> None:
        for key in list(self._watches):
            if key[1] not in self.hub.locations_of(key[0]):
                self._gone(key, "the pane was removed (killed)", removed=True)

    def _gone(self, key: Key, reason: str, *, removed: bool = False) -> None:
        """A watched pane left: its waits end ``gone`` -- or, for a pane removed while the
        hook is in place on its server, ``exit`` if its process exited by itself."""
        watch = self._watches.pop(key, None)
        if watch is None:
            return
        self._drop(watch)
        if removed and watch.waiters and self._hooked(key[0]):
            self._classifying[key[0]] += 1
            self._spawn(self._classify(watch, reason), "activity exited?")
            return
        for waiter in list(watch.waiters):
            waiter.settle("gone", watch.activity, reason)

    # ------------------------------------------------------------------ on demand

    def current(self, socket_path: str, pane: PaneRef) -> Activity:
        """A pane's activity now: the watched value, else one read of the host's."""
        watch = self._watches.get((socket_path, pane.id))
        if watch is not None and watch.pid == pane.pid:
            return watch.activity
        if pane.dead:
            known = self._dead.get(((socket_path, pane.id), pane.pid))
            return known or activity.dead_activity(activity.UNKNOWN, None, None)
        reading = proc.read_pane(pane.pid)
        return activity.UNKNOWN if reading is None else reading.activity

    # ------------------------------------------------------------------ waits

    async def wait(self, loc: Location, until: Until, timeout: float) -> WaitResult:
        if self.stopping:
            raise Stopping
        if self.waits >= self.max_waits:
            raise WaitLimit
        loop = asyncio.get_running_loop()
        started = loop.time()
        key = (loc.server.socket_path, loc.pane.id)
        self._wait_refs[key] += 1
        self.waits += 1
        waiter: _Waiter | None = None
        watch: _Watch | None = None
        try:
            self._refresh()
            # What the pane was doing when the wait began (read now: _refresh reads a pane
            # it starts watching).  The hook's install below takes a round trip to tmux, and
            # what the pane does meanwhile is already an answer to this wait.
            began = self._watches.get(key)
            before = began.activity if began is not None else activity.UNKNOWN
            await self._hook_ready(key[0])  # an exit from now on is told from a kill
            watch = self._watches.get(key)
            if watch is None:  # left the hub between the lookup and now
                return self._result("gone", None, activity.UNKNOWN, activity.UNKNOWN, started)
            if watch.activity.dead and watch.activity.exit_status is None:
                await self._ask_dead(watch)
            now = watch.activity
            if began is None or before.dead:
                before = now  # (a pane dead from the start: the same death, its status now known)
            now_met = activity.outcome(until, before, now)
            if now_met is not None:
                return self._result(now_met, key, before, now, started)
            waiter = _Waiter(until, before)
            watch.waiters.add(waiter)
            try:
                async with asyncio.timeout(timeout):
                    result, now, reason = await waiter.future
            except TimeoutError:
                return self._result("timeout", key, before, watch.activity, started)
            if result is None:
                raise Stopping
            return self._result(result, key, before, now, started, reason)
        finally:
            if waiter is not None and watch is not None:
                watch.waiters.discard(waiter)
            self.waits -= 1
            self._wait_refs[key] -= 1
            if self._wait_refs[key] <= 0:
                del self._wait_refs[key]
            if not self.stopping:
                self._refresh()

    def _result(
        self,
        outcome: Outcome,
        key: Key | None,
        before: Activity,
        now: Activity,
        started: float,
        reason: str | None = None,
    ) -> WaitResult:
        loc = self.hub.locations_of(key[0]).get(key[1]) if key is not None else None
        if outcome == "gone":
            loc = None
        return WaitResult(
            outcome=outcome,
            location=with_activity(loc, now) if loc is not None else None,
            activity=now,
            before=before,
            waited_ms=round((asyncio.get_running_loop().time() - started) * 1000, 3),
            reason=reason,
        )

    def end_waits(self) -> None:
        """The daemon is stopping: every pending wait is answered (503), none starts."""
        self.stopping = True
        for watch in self._watches.values():
            for waiter in list(watch.waiters):
                waiter.settle(None, watch.activity, "daemon_stopping")

    async def close(self) -> None:
        self.end_waits()
        # The hooks out of the servers (a daemon killed leaves them: they keep a short,
        # trimmed option and nothing else, and the next daemon's install replaces them).
        unhook = [self._uninstall(server) for server in self._hooks if self.reader is not None]
        self._hooks.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(HOOK_TIMEOUT_S):
                await asyncio.gather(*unhook, return_exceptions=True)
        for watch in self._watches.values():
            self._drop(watch)
        self._watches.clear()
        self._interests.clear()
        tasks = [t for t in (self._tick, self._follow, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tick = self._follow = None
