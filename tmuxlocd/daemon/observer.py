"""Observers: keep the hub's picture of every watched tmux server right, at all times.

One ``ServerObserver`` per server attaches a single control-mode client and combines three
sources of freshness (SPEC §1), because control mode alone covers only the attached session
and some changes are signalled to nobody:

1. notifications: each one marks what it names dirty (a window, or the structure); the
   sync loop re-reads only that, so a burst read in one chunk costs one re-read;
2. hooks at a private array index for every session, fork-free: on 3.4+ a ``%message`` to
   our control client, on 3.3 a ``wait-for`` channel that a separate, unattached ``tmux
   wait-for`` client waits on, round after round (a queued ``wait-for`` would block the
   observer's own command queue);
3. a safety net: a format subscription digest that tmux itself re-evaluates once a second;
   comparing it with the model names exactly the windows to re-read (respawned panes,
   silent swap-window, renumbering, dead panes), and costs nothing when nothing changed;
4. below tmux 3.6, pidfds on the panes' processes (``pane_exits``): a death whose SIGCHLD
   tmux lost runs no pane-died hook, and is chased from the kernel's word.

The ``Watcher`` finds servers (every socket in the user's tmux socket directory, including
ones that appear later, or only those named with -L / -S) and runs their observers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Sequence

from tmuxlocd.core import attach, spelling
from tmuxlocd.core.attach import (
    PROBE_BEST,
    PROBE_SESSIONS,
    WAITER_CHAIN,
    WAITER_MARK,
    attach_target,
    parse_probe,
)
from tmuxlocd.core.errors import CommandFailed, CommandTimeout, RowError, TmuxUnavailable
from tmuxlocd.core.invoke import client_argv
from tmuxlocd.core.location import pane_neighbors
from tmuxlocd.core.mirror import (
    HOOK_INDEX,
    HOOKS,
    SERVER_FACTS,
    Argv,
    Barriers,
    Dirty,
    Episode,
    ServerMirror,
    check,
    install_hooks,
    loses_sigchld,
    remove_hooks,
    uses_message_hooks,
)
from tmuxlocd.core.model import DIGEST_FORMAT, DIGEST_NAME, ServerState
from tmuxlocd.core.protocol import Event
from tmuxlocd.daemon.config import Config
from tmuxlocd.daemon.control import ControlClient, reap, spawned, tmux_env
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.daemon.pane_exits import PaneExits
from tmuxlocd.host import lifeline
from tmuxlocd.host.lifeline import tied
from tmuxlocd.host.sockets import (
    list_sockets,
    resolve_server,
    socket_alive,
    socket_dir,
    socket_path_key,
)

log = logging.getLogger(__name__)

__all__ = ["HOOKS", "HOOK_INDEX", "ServerObserver", "Watcher"]

RETRY_MAX = 2.0  # seconds between attempts while a server is down or failing (capped backoff)
# The longest a barrier (/v1/sync) waits for tmux: a server that answers nothing for this
# long (stopped, wedged) makes the barrier fail (503), never answer with the model as it was.
SYNC_TIMEOUT = 10.0
ATTACH_WAIT = 5.0  # for %session-changed after attaching
PROBE_TIMEOUT = 5.0  # for the plain clients that read aliases and sessions before attaching
# A control client that ends before its attach completes is a race once (the session was
# killed between the probe and the attach); twice in a row it is a failure to report.
EARLY_EXITS = 2
WAITER_RETRY_MIN = 0.05  # the first pause before a failed hook waiter is started again
# How long a %layout-change of the attached session waits for the 3.3 waiter's rows before
# its window is queried after all (they come within a millisecond or two).
ROWS_WAIT = 0.03
# Between a waiter's wake-up and its next wait, two signals cancel each other in tmux
# (wait-for semantics).  What they announced is not lost: the digest carries every window's
# layout, so the safety net re-reads it within about a second.


class ServerObserver:
    """The I/O shell of one server's ``ServerMirror``: the control connection, the probes,
    the hook waiter, backoff and time.  What to read and what it means is the mirror's."""

    def __init__(self, hub: Hub, socket_path: str, *, tmux: str, hooks: bool) -> None:
        self.hub = hub
        self.socket_path = socket_path
        self.tmux = tmux
        self.use_hooks = hooks
        self.mirror = ServerMirror(socket_path)
        self.mirror.hooks_wanted = hooks
        self.client: ControlClient | None = None
        # One channel per user, not per daemon: a daemon that was killed leaves its waiter
        # blocked in the server, and a restarted daemon's hooks, signalling the same channel,
        # then wake it and it exits instead of waiting forever.
        self.channel = attach.channel(os.getuid())
        self.synced = asyncio.Event()  # set after each first sync of an attachment
        self._attached = asyncio.Event()  # %session-changed came: the attach is complete
        self._stopping = asyncio.Event()
        self._kick = asyncio.Event()  # a barrier is waiting: retry now, not after the backoff
        self._dirty = asyncio.Event()  # the mirror has something to re-read
        self._sync_idle = False  # the sync loop waits for ``_dirty`` (and does nothing else)
        self._told_unreadable: set[str] = set()  # layouts logged as unreadable (bounded)
        self._release: asyncio.TimerHandle | None = None  # of windows held for rows (3.3)
        self._exits: PaneExits | None = None  # pidfds on the panes' processes (before 3.6)
        self._task: asyncio.Task[None] | None = None
        # The failure episode under way: one WARNING when it starts, one INFO when it ends.
        self.episode = Episode()
        self._early_exits = 0
        self._attachment_failure: CommandFailed | RowError | None = None
        self.barriers = Barriers()
        self._answered = asyncio.Condition()  # notified when barriers are served or failed

    @property
    def error(self) -> str | None:
        return self.episode.error

    @property
    def pid(self) -> int | None:
        return self.mirror.pid

    @property
    def version(self) -> str:
        return self.mirror.version

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"observer {self.socket_path}")

    async def stop(self) -> None:
        self._stopping.set()
        client = self.client
        if client is not None and not client.closed.is_set():
            with contextlib.suppress(TmuxUnavailable):
                await self._remove_hooks(client)
            await client.close()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._serve_all()

    async def _pause(self, seconds: float) -> None:
        stopping = asyncio.ensure_future(self._stopping.wait())
        kicked = asyncio.ensure_future(self._kick.wait())
        try:
            await asyncio.wait(
                (stopping, kicked), timeout=seconds, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            stopping.cancel()
            kicked.cancel()
        self._kick.clear()

    async def _run(self) -> None:
        backoff = 0.05
        while not self._stopping.is_set():
            try:
                attached = await self._attempt()
            except asyncio.CancelledError:
                raise
            except (CommandFailed, RowError) as exc:
                self._fail(str(exc))
                attached = False
            except Exception as exc:  # a defect of ours: reported like a failing tmux
                log.exception("observer failed", extra={"tmux_socket": self.socket_path})
                self._fail(f"internal error: {exc!r}")
                attached = False
            if self._stopping.is_set():
                break
            if not socket_alive(self.socket_path):
                self._went_down()
            # It was up and reading well: re-attach at once; otherwise back off, capped (a
            # barrier waiting kicks the pause short).
            backoff = 0.05 if attached and self.error is None else min(backoff * 2, RETRY_MAX)
            if self.barriers.pending():
                backoff = min(backoff, 0.2)  # a barrier waits: its tries come quickly
            await self._pause(backoff)

    def _went_down(self) -> None:
        self.mirror.clear()
        self.mirror.hooks_installed = False
        self._early_exits = 0
        ended = self.episode.recover()
        if ended is not None:
            log.info(
                "tmux server gone while failing (%s)",
                ended,
                extra={"tmux_socket": self.socket_path},
            )
        self.hub.server_down(self.socket_path)
        self._serve_all()

    def _fail(self, why: str) -> None:
        """A command failed, or its answer could not be used: report it (health, one WARNING
        per episode), fail the barriers waiting once they had their tries, and leave the
        attachment to be made anew."""
        extra = {"tmux_socket": self.socket_path}
        match self.episode.fail(why):
            case "start":
                log.warning(
                    "cannot read tmux: %s; retrying with a fresh control client", why, extra=extra
                )
            case "changed":
                log.debug("still cannot read tmux: %s", why, extra=extra)
            case _:
                pass
        self.hub.set_observer(self.socket_path, "error", why)
        if self.barriers.attempt_failed(why):
            self._wake_barriers()

    def _recovered(self) -> None:
        ended = self.episode.recover()
        if ended is not None:
            log.info(
                "tmux reads well again (after: %s)", ended, extra={"tmux_socket": self.socket_path}
            )
        self.hub.set_observer(self.socket_path, "attached")

    # ------------------------------------------------------------------ before attaching

    async def _plain(self, *argv: str) -> tuple[int, list[str], str]:
        """One command as a plain client (it never starts a server: ``-N``), with a
        deadline: exit status, output lines, the first line of its error output."""
        proc = await spawned(
            asyncio.create_subprocess_exec(
                *tied([*client_argv(self.tmux, self.socket_path), *argv]),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=tmux_env(),
                start_new_session=True,
            )
        )
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                out, err = await proc.communicate()
        except TimeoutError:
            await reap(proc)
            raise CommandTimeout(argv[0], f"no answer within {PROBE_TIMEOUT:g} s") from None
        except asyncio.CancelledError:
            # The daemon is stopping: reap the client, or its transport outlives the loop.
            with contextlib.suppress(Exception):
                await asyncio.shield(reap(proc))
            raise
        errline = err.decode("utf-8", "replace").strip().partition("\n")[0]
        rc = proc.returncode if proc.returncode is not None else -1
        return rc, out.decode("utf-8", "replace").splitlines(), errline

    async def _read_aliases(self) -> spelling.Spelling | None:
        """Choose the commands' spellings from the server's command aliases (None: the
        server is gone).  ``show-options`` itself may be taken over: then its other
        spellings are tried, and an answer that is not an alias list is not believed."""
        tried: list[str] = []
        for word in spelling.spellings("show-options"):
            if not socket_alive(self.socket_path):
                return None
            rc, lines, err = await self._plain(word, "-sv", "command-alias")
            # A failing after-show-options hook of the user's makes the exit status 1 with
            # the answer intact; an answer that parses is believed whatever the status.
            names = spelling.parse_alias_names(lines) if rc == 0 or lines else None
            if names is not None:
                chosen = spelling.choose(names)
                if chosen.describe() and chosen.describe() != self.mirror.spell.describe():
                    log.info("%s", chosen.describe(), extra={"tmux_socket": self.socket_path})
                return chosen
            tried.append(f"{word}: {err or (lines[0] if lines else 'no alias list')}")
        raise CommandFailed(
            "show-options", "command-alias cannot be read (" + "; ".join(tried) + ")"
        )

    async def _probe_sessions(self) -> list[tuple[str, int]] | None:
        """The sessions and how many clients each has (None: the server is gone)."""
        if not socket_alive(self.socket_path):
            return None
        spell = await self._read_aliases()
        if spell is None:
            return None
        self.mirror.spell = spell
        if spell.blocked:
            raise CommandFailed(spell.blocked[0], spell.describe())
        rc, lines, err = await self._plain(*spell(PROBE_SESSIONS), ";", *spell(PROBE_BEST))
        if rc != 0 and not lines:  # (rows and status 1: a user's after-hook failed)
            if not socket_alive(self.socket_path):
                return None
            raise CommandFailed("list-sessions", err or f"exit status {rc}")
        return parse_probe(lines)

    # ------------------------------------------------------------------ one attachment

    async def _attempt(self) -> bool:
        """Attach once and serve until the client ends.  True if it was attached."""
        sessions = await self._probe_sessions()
        if sessions is None:
            self._went_down()
            return False
        if not sessions:
            # A running server with no session (exit-empty off) cannot be attached to; it
            # has no panes (its last session may just have been killed: publish that), and
            # is looked at again shortly.
            self.mirror.clear()
            self._publish()
            self._serve_all()
            return False
        sid = attach_target(sessions)
        mirror = self.mirror
        client = ControlClient(self._on_event)
        self._attachment_failure = None
        mirror.attached_to(sid)
        self._attached.clear()
        await client.start(
            self.tmux, self.socket_path, sid, attach=mirror.spell.word("attach-session")
        )
        self.client = client
        sync_task: asyncio.Task[None] | None = None
        waiter_task: asyncio.Task[None] | None = None
        try:
            await self._until_attached(client)
            self._early_exits = 0
            (info,) = await client.run(mirror.spell(SERVER_FACTS))
            mirror.server_facts(info)
            if loses_sigchld(mirror.version) and PaneExits.usable(mirror.pid):
                assert mirror.pid is not None
                self._exits = PaneExits(
                    self.socket_path,
                    mirror.pid,
                    pane=lambda pane_id: mirror.panes.get(pane_id),
                    reread=lambda window_id: self.mark(windows=(window_id,)),
                )
            # Barriers asked for before this full re-read are answered by it (their tickets
            # may have been lost with the previous client, mid-sync).
            ticket = self.barriers.requested
            await self._reread(client, Dirty(full=True))
            if self.use_hooks:
                if not uses_message_hooks(mirror.version):
                    # Wakes a waiter left blocked by a daemon that was killed (same channel),
                    # so that it exits; ours then sees one spurious wake-up, a cheap re-read.
                    (woke,) = await client.run(mirror.spell(("wait-for", "-S", self.channel)))
                    check(("wait-for",), woke)
                    waiter_task = asyncio.create_task(self._waiter())
                await self._install_hooks(client)
            (sub,) = await client.run(
                mirror.spell(("refresh-client", "-B", f"{DIGEST_NAME}::{DIGEST_FORMAT}"))
            )
            # Without it the safety net would be off, silently, for the whole attachment.
            check(("refresh-client",), sub)
            self._recovered()
            self._serve(ticket)
            self.synced.set()
            sync_task = asyncio.create_task(self._sync_loop(client))
            await client.closed.wait()
            failure = self._attachment_failure or client.failure
            if failure is not None:
                raise failure
            if self.error is None:
                log.info(
                    "control client ended (%s)",
                    client.exit_reason,
                    extra={"tmux_socket": self.socket_path},
                )
            return True
        except CommandFailed:
            raise
        except TmuxUnavailable as exc:
            if client.failure is not None:  # our deadline closed it, mid-command
                raise client.failure from None
            # The control client ended: the session went, the client was detached or killed,
            # or the server is going away.  Not a failure unless it keeps ending early.
            if not self._attached.is_set():
                self._early_exits += 1
                if self._early_exits >= EARLY_EXITS and socket_alive(self.socket_path):
                    raise CommandFailed(
                        mirror.spell.word("attach-session"),
                        f"the control client ended before attaching ({client.exit_reason or exc})",
                    ) from None
            log.info("observer detached: %s", exc, extra={"tmux_socket": self.socket_path})
            return self.synced.is_set()
        finally:
            if self._release is not None:
                self._release.cancel()
                self._release = None
            if self._exits is not None:
                self._exits.close()
                self._exits = None
            for task in (sync_task, waiter_task):
                if task is not None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            await client.close()
            self.client = None
            self.synced.clear()
            if self.hub.server(self.socket_path).observer == "attached":
                self.hub.set_observer(self.socket_path, "down")

    async def _until_attached(self, client: ControlClient) -> None:
        """tmux may run the commands a new control client sends before its attach completes
        (seen on 3.3a): those that need a current client then fail ("no current client":
        refresh-client, so no digest) or come out empty (#{client_name}).  %session-changed
        says the attach is done."""
        attached = asyncio.ensure_future(self._attached.wait())
        closed = asyncio.ensure_future(client.closed.wait())
        try:
            await asyncio.wait(
                (attached, closed), timeout=ATTACH_WAIT, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            attached.cancel()
            closed.cancel()
        if not self._attached.is_set():
            if client.closed.is_set():
                raise TmuxUnavailable("the control client ended before attaching")
            raise CommandTimeout(
                self.mirror.spell.word("attach-session"),
                f"no %session-changed within {ATTACH_WAIT:g} s",
            )

    # ------------------------------------------------------------------ hooks

    async def _install_hooks(self, client: ControlClient) -> None:
        replies = await client.run(*install_hooks(self.mirror, self.channel))
        self.mirror.hooks_installed = True
        # Without the hook, changes in other sessions would only be seen by the digest,
        # a second late: not a wrong model, but a slower one the user should hear of.
        check(("set-hook",), *replies)

    async def _remove_hooks(self, client: ControlClient) -> None:
        if not self.mirror.hooks_installed:
            return
        self.mirror.hooks_installed = False
        await client.run(*remove_hooks(self.mirror), timeout=1.0)
        if not uses_message_hooks(self.mirror.version):
            # Wake our waiter: its next round finds our control client gone, which ends it
            # (the attachment's end reaps it as well).
            await client.run(self.mirror.spell(("wait-for", "-S", self.channel)), timeout=1.0)

    def waiter_argv(self) -> list[str]:
        """This observer's waiter client (tmuxlocd.core.attach.waiter_argv)."""
        mirror = self.mirror
        return attach.waiter_argv(
            self.tmux, self.socket_path, mirror.spell, self.channel, mirror.client_name
        )

    async def _spawn_waiter(self) -> asyncio.subprocess.Process:
        # The environment is cut to PATH: tmux copies a client's environment into the server.
        return await spawned(
            asyncio.create_subprocess_exec(
                # Tied: it waits in the server, not on us, and must not outlive a killed
                # daemon (its next wake-up might never come).
                *tied(self.waiter_argv()),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env={"PATH": os.environ.get("PATH", os.defpath)},
                start_new_session=True,
                limit=1 << 22,
            )
        )

    async def _waiter(self) -> None:
        """The unattached ``tmux wait-for`` client that hooks wake (tmux 3.3).

        Each round prints the rows the hooks left (``ServerMirror.on_waiter_round``).
        The next client is started while the current one still waits its last round, so a
        signal always finds a waiter.  Should a client end early (killed from outside, the
        server going away, a command of its list failing), it is replaced after a pause that
        grows while that repeats; the windows are then listed once, since hooks may have
        fired while nobody waited.  When the server is gone the attachment ends and cancels
        this task.
        """
        pause = WAITER_RETRY_MIN
        current: asyncio.subprocess.Process | None = None
        successor: asyncio.subprocess.Process | None = None
        try:
            while True:
                if current is None:
                    current, successor = successor or await self._spawn_waiter(), None
                assert current.stdout is not None
                woken = 0
                while line := await current.stdout.readline():
                    text = line.decode("utf-8", "replace").rstrip("\n")
                    if not text.startswith(WAITER_MARK):
                        continue  # not ours (a user's after-hook printed it)
                    woken += 1
                    if not self._stopping.is_set():
                        self.mirror.on_waiter_round([text[len(WAITER_MARK) :]])
                        if not self._publish_applied():
                            self._dirty.set()
                    if woken == WAITER_CHAIN - 1 and successor is None:
                        successor = await self._spawn_waiter()
                    # Let the sync loop publish (or query) before reading on.
                    await asyncio.sleep(0)
                await current.wait()
                current = None
                if self._stopping.is_set():
                    return
                if woken < WAITER_CHAIN:
                    if woken == 0:
                        await self._pause(pause)
                        pause = min(pause * 2, RETRY_MAX)
                    self.mark(layouts=True)  # hooks may have fired while nobody waited
                else:
                    pause = WAITER_RETRY_MIN
        finally:
            for proc in (current, successor):
                if proc is not None:
                    await reap(proc)  # its pipes closed too, even if tmux holds them

    # ------------------------------------------------------------------ notifications

    def _on_event(self, event: Event) -> None:
        effect = self.mirror.on_event(event)
        if effect.attached:
            self._attached.set()
        if effect.config_error is not None:
            log.warning(
                "tmux configuration error: %s",
                effect.config_error,
                extra={"tmux_socket": self.socket_path},
            )
        if effect.stray is not None:
            log.debug("stray line from tmux: %r", effect.stray)
        if effect.rows_due is not None:
            # Until the waiter's rows come (a process of tmux's away, on a machine still busy
            # with the split) the loop is idle: the window's neighbours are computed now
            # (cached by layout string), not after the rows, when every subscriber waits.
            pane_neighbors(effect.rows_due)
        if effect.caught is not None:
            entry = self.hub.server(self.socket_path)
            entry.safety_net_catches += 1
            # Said once at info: the count in /v1/health says how often since.
            level = logging.INFO if entry.safety_net_catches == 1 else logging.DEBUG
            log.log(
                level,
                "the safety net found a change nothing announced (%s); "
                "health's safety_net_catches counts them",
                effect.caught,
                extra={"tmux_socket": self.socket_path},
            )
        if self.mirror.dirty:
            self._dirty.set()
        self._arm_release()

    def _arm_release(self) -> None:
        """Windows held for the waiter's rows are queried after ``ROWS_WAIT`` if the rows
        did not answer them by then."""
        newest = self.mirror.holding()
        if self._release is None and newest is not None:
            loop = asyncio.get_running_loop()
            self._release = loop.call_later(ROWS_WAIT, self._release_held, newest)

    def _release_held(self, generation: int) -> None:
        self._release = None
        if self.mirror.release_held(generation):
            self._dirty.set()
        self._arm_release()  # holds made since the timer was armed get their own wait

    def mark(
        self,
        *,
        full: bool = False,
        structure: bool = False,
        layouts: bool = False,
        windows: Iterable[str] = (),
    ) -> None:
        """Ask the sync loop to re-read (``ServerMirror.mark``)."""
        self.mirror.mark(full=full, structure=structure, layouts=layouts, windows=windows)
        if self.mirror.dirty:
            self._dirty.set()

    # ------------------------------------------------------------------ syncing

    async def sync(self, timeout: float = SYNC_TIMEOUT) -> str | None:
        """Barrier: None once a full re-read that started after this call was published, or
        the server's going down was; otherwise why not (a re-read made for it failed, or
        nothing was published within ``timeout``).

        Between two attachments (the attached session was killed, the client detached or
        killed) the next attachment's first full re-read answers it; a server that is down
        and already reported down needs nothing.
        """
        if self._stopping.is_set():
            return "the daemon is stopping"
        if (
            not socket_alive(self.socket_path)
            and not self.hub.server(self.socket_path).state.running
        ):
            return None
        ticket = self.barriers.request()
        self.mark(full=True)
        self._kick.set()
        try:
            async with asyncio.timeout(timeout):
                async with self._answered:
                    await self._answered.wait_for(lambda: self.barriers.answer(ticket) is not False)
        except TimeoutError:
            why = f"no re-read published within {timeout:g} s"
            return f"{why} (last error: {self.error})" if self.error else why
        answer = self.barriers.answer(ticket)
        return answer if isinstance(answer, str) else None

    def _serve(self, ticket: int) -> None:
        if self.barriers.serve(ticket):
            self._wake_barriers()

    def _serve_all(self) -> None:
        """Every barrier asked for so far is answered: the server's going down, or its
        having no session, was published."""
        self.barriers.serve_all()
        self._wake_barriers()

    def _wake_barriers(self) -> None:
        async def wake() -> None:
            async with self._answered:
                self._answered.notify_all()

        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(wake())

    async def _reread(self, client: ControlClient, what: Dirty) -> None:
        """Run the mirror's re-read of ``what`` over ``client``, then publish."""
        gen = self.mirror.reread(what)
        batch = next(gen, None)
        while batch is not None:
            replies = await client.run(*batch)
            try:
                batch = gen.send(replies)
            except StopIteration:
                batch = None
        self._publish()

    def _publish(self) -> None:
        """Publish the mirror's model; a window layout that could not be read (its panes
        then have no neighbours) is logged once per layout string."""
        state = self.mirror.state()
        self.hub.update(state)
        if self._exits is not None and state.by_window is not None:
            self._exits.follow(state.by_window)
        unreadable = self.hub.server(self.socket_path).builder.unreadable
        for window_id, layout in unreadable.items():
            if layout not in self._told_unreadable and len(self._told_unreadable) < 64:
                self._told_unreadable.add(layout)
                log.warning(
                    "tmux gave window %s a layout tmuxlocd cannot read; its panes have no "
                    "neighbours: %r",
                    window_id,
                    layout[:200],
                    extra={"tmux_socket": self.socket_path},
                )

    def _publish_applied(self) -> bool:
        """Publish here and now what the mirror applied without a read (a waiter round's
        rows), when that is all there is to do and the sync loop is idle; False leaves it to
        that loop.  Handing it over costs the subscribers a turn or two of the event loop
        (about 0.1 ms of a split's 2 ms at 100 panes, traced), and a publication needs no
        I/O.  Barriers are left to the sync loop: one asked for marks a full read, which
        this never does."""
        mirror = self.mirror
        if not self._sync_idle or not mirror.dirty.only_publish():
            return False
        mirror.take()
        self._publish()
        return True

    async def _sync_loop(self, client: ControlClient) -> None:
        mirror = self.mirror
        while True:
            self._sync_idle = True
            try:
                await self._dirty.wait()
            finally:
                self._sync_idle = False
            self._dirty.clear()
            what = mirror.take()
            if not what:
                continue
            ticket = self.barriers.requested
            try:
                await self._reread(client, what)
            except (CommandFailed, RowError) as exc:
                # Not retried on this connection: its replies may be out of step, and a row
                # that cannot be parsed now will most likely not parse a millisecond later.
                # The attachment ends (``_attempt`` raises this), is made anew with backoff,
                # and reports meanwhile.
                self._attachment_failure = exc
                await client.close()
                return
            self._serve(ticket)
            if mirror.dirty:  # marked while it read (a window not linked yet, say)
                self._dirty.set()

    def state(self) -> ServerState:
        return self.mirror.state()

    async def pane_format(self, pane_id: str, fmt: str) -> str | None:
        """One format of one pane, over the control client (the activity watcher asks for a
        dead pane's exit status this way); None when there is no client or tmux refused."""
        client = self.client
        if client is None or client.closed.is_set():
            return None
        argv = self.mirror.spell(("display-message", "-p", "-t", pane_id, fmt))
        try:
            (reply,) = await client.run(argv)
        except (TmuxUnavailable, CommandTimeout):
            return None
        if not reply.ok:
            return None
        return reply.lines[0] if reply.lines else ""

    async def commands(
        self, make: Callable[[Callable[[str], str]], Sequence[Argv]]
    ) -> list[list[str]] | None:
        """Commands the activity watcher builds (its pane-exited hook), respelled for this
        server: ``make`` gets the word speller for the command text inside a hook.  Each
        reply's lines; None when there is no client or tmux refused one."""
        client = self.client
        if client is None or client.closed.is_set():
            return None
        argvs = [self.mirror.spell(argv) for argv in make(self.mirror.spell.word)]
        try:
            replies = await client.run(*argvs)
        except (TmuxUnavailable, CommandTimeout):
            return None
        if not all(reply.ok for reply in replies):
            return None
        return [list(reply.lines) for reply in replies]


class Watcher:
    """Finds the servers to watch and runs one observer for each."""

    SCAN_INTERVAL = 1.0

    def __init__(self, hub: Hub, config: Config, *, tmux: str | None = None) -> None:
        self.hub = hub
        self.config = config
        self.tmux = tmux or shutil.which("tmux") or "tmux"
        self.observers: dict[str, ServerObserver] = {}
        self._scan: asyncio.Task[None] | None = None
        self._stopping: set[asyncio.Task[None]] = set()
        explicit = [resolve_server(n) for n in config.socket_name]
        explicit += [socket_path_key(p) for p in config.socket_path]
        self.explicit = explicit

    async def start(self) -> None:
        self.hub.attach(self)
        if not lifeline.available():
            log.info(
                "setpriv --pdeathsig is not available: should the daemon be killed, its tmux "
                "clients end only when their server wakes or answers them"
            )
        if self.explicit:
            for path in self.explicit:
                self._add(path)
        else:
            self._rescan()
            self._scan = asyncio.create_task(self._scan_loop(), name="tmux socket scan")

    def _add(self, path: str) -> None:
        if path not in self.observers:
            observer = ServerObserver(self.hub, path, tmux=self.tmux, hooks=self.config.hooks)
            self.observers[path] = observer
            self.hub.server(path)
            observer.start()

    def _rescan(self) -> None:
        present = set(list_sockets(socket_dir()))
        for path in sorted(present):
            self._add(path)
        for path in list(self.observers):
            # A socket file removed (the server exited cleanly): stop watching it once down.
            if path not in present and self.hub.server(path).observer != "attached":
                observer = self.observers.pop(path)
                task = asyncio.create_task(observer.stop())
                self._stopping.add(task)
                task.add_done_callback(self._stopping.discard)
                self.hub.server_down(path)
                self.hub.forget(path)

    async def _scan_loop(self) -> None:
        while True:
            await asyncio.sleep(self.SCAN_INTERVAL)  # a directory listing: no tmux work
            self._rescan()

    def _select(self, server: str | None) -> list[ServerObserver]:
        if server is None:
            return list(self.observers.values())
        path = resolve_server(server)
        return [o for p, o in self.observers.items() if p == path]

    async def sync(self, server: str | None = None) -> dict[str, str]:
        """Every selected server's barrier at once: the servers that failed, and why."""
        observers = self._select(server)
        answers = await asyncio.gather(*(o.sync() for o in observers))
        return {o.socket_path: why for o, why in zip(observers, answers, strict=True) if why}

    def notify(self, server: str | None = None) -> None:
        for observer in self._select(server):
            observer.mark(structure=True)

    async def pane_format(self, socket_path: str, pane_id: str, fmt: str) -> str | None:
        """(activity_watch.PaneReader) one format of one pane of a watched server."""
        observer = self.observers.get(socket_path)
        return None if observer is None else await observer.pane_format(pane_id, fmt)

    async def commands(
        self, socket_path: str, make: Callable[[Callable[[str], str]], Sequence[Argv]]
    ) -> list[list[str]] | None:
        """(activity_watch.PaneReader) commands to one watched server."""
        observer = self.observers.get(socket_path)
        return None if observer is None else await observer.commands(make)

    async def wait_synced(self, timeout: float) -> None:
        async def each(o: ServerObserver) -> None:
            if socket_alive(o.socket_path):
                await o.synced.wait()

        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await asyncio.gather(*(each(o) for o in self.observers.values()))

    async def stop(self) -> None:
        if self._scan is not None:
            self._scan.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scan
        await asyncio.gather(*(o.stop() for o in self.observers.values()))
