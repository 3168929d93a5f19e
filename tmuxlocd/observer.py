"""Observers: keep the hub's picture of every watched tmux server right, at all times.

One ``ServerObserver`` per server attaches a single control-mode client and combines three
sources of freshness (SPEC §1), because control mode alone covers only the attached session
and some changes are signalled to nobody:

1. notifications: each one marks what it names dirty (a window, or the structure); the
   sync loop re-reads only that, so a burst read in one chunk costs one re-read;
2. hooks at a private array index for every session, fork-free: they signal a ``wait-for``
   channel that a separate, unattached ``tmux wait-for`` client waits on (a queued
   ``wait-for`` would block the observer's own command queue);
3. a safety net: a format subscription digest that tmux itself re-evaluates once a second;
   comparing it with the model names exactly the windows to re-read (respawned panes,
   silent swap-window, renumbering, dead panes), and costs nothing when nothing changed.

The ``Watcher`` finds servers (every socket in the user's tmux socket directory, including
ones that appear later, or only those named with -L / -S) and runs their observers.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shutil
import socket
import stat
from collections.abc import Iterable
from pathlib import Path

from tmuxlocd import protocol, spelling
from tmuxlocd.config import Config
from tmuxlocd.control import ControlClient, tmux_env
from tmuxlocd.errors import CommandFailed, CommandTimeout, RowError, TmuxUnavailable
from tmuxlocd.hub import Hub
from tmuxlocd.model import (
    DIGEST_FORMAT,
    DIGEST_NAME,
    PANE_FORMAT,
    PANE_WINDOW_FORMAT,
    SESSION_FORMAT,
    WINDOW_FORMAT,
    Pane,
    ServerState,
    Session,
    Window,
    Winlink,
    compare_digest,
    id_number,
    join_rows,
    parse_pane_row,
    parse_session_row,
    parse_window_query,
    parse_window_row,
    sort_winlinks,
)
from tmuxlocd.names import output_escapes_dollars, undo_output_dollars
from tmuxlocd.protocol import (
    ClientSessionChanged,
    Event,
    LayoutChange,
    Message,
    Reply,
    SessionChanged,
    SessionRenamed,
    SessionsChanged,
    SessionWindowChanged,
    SubscriptionChanged,
    Unknown,
    WindowAdd,
    WindowClose,
    WindowPaneChanged,
    WindowRenamed,
)

log = logging.getLogger(__name__)

# Hooks go at this index of each hook's array, so a user's hooks (normally at [0], [1] ...)
# are never replaced; `set-hook -gu 'name[7741]'` removes exactly ours.
HOOK_INDEX = 7741
# Only one hook is needed.  Every other location change in a session we are not attached to
# is announced to all control clients anyway (window add/close/rename, active pane, current
# window, session create/close/rename: research §2.1), or to nobody at all (respawn, silent
# swap-window, renumbering: the digest's job).  What reaches only the attached session is
# %layout-change: splits, kills, resizes, layouts, pane exits, break/join -- all of which
# fire window-layout-changed.
HOOKS = ("window-layout-changed",)

LIST_SESSIONS = ("list-sessions", "-F", SESSION_FORMAT)
LIST_WINDOWS = ("list-windows", "-a", "-F", WINDOW_FORMAT)
LIST_PANES = ("list-panes", "-a", "-F", PANE_FORMAT)

RETRY_MAX = 2.0  # seconds between attempts while a server is down or failing (capped backoff)
# The longest a barrier (/v1/sync) waits for tmux: a server that answers nothing for this
# long (stopped, wedged) makes the barrier fail (503), never answer with the model as it was.
SYNC_TIMEOUT = 10.0
ATTACH_WAIT = 5.0  # for %session-changed after attaching
PROBE_TIMEOUT = 5.0  # for the plain clients that read aliases and sessions before attaching
# A control client that ends before its attach completes is a race once (the session was
# killed between the probe and the attach); twice in a row it is a failure to report.
EARLY_EXITS = 2
# A window whose own listing fails while the structure still lists it, this many times in
# a row, is a failing command (not a window that just went away).
WINDOW_MISSES = 2
# A barrier fails after this many failed attempts made while it waits (the first may fail on
# a connection chosen before the user's aliases changed; the next attachment reads them).
BARRIER_TRIES = 3
WAITER_RETRY_MIN = 0.05  # the first pause before a failed hook waiter is started again
# After a hook wakes the waiter, a new waiter takes a few ms to register; two signals in that
# gap cancel each other in tmux (wait-for semantics).  What they announced is not lost: the
# digest carries every window's layout, so the safety net re-reads it within about a second.


def socket_dir(env: dict[str, str] | None = None) -> Path:
    env = dict(os.environ) if env is None else env
    return Path(env.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"


def resolve_server(name_or_path: str, env: dict[str, str] | None = None) -> str:
    """A -L name or a socket path -> the socket path."""
    if "/" in name_or_path:
        return os.path.abspath(name_or_path)
    return str(socket_dir(env) / name_or_path)


def socket_alive(path: str) -> bool:
    """Is a tmux server listening on ``path``?  A connect() tells, and starts nothing."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISSOCK(st.st_mode):
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.setblocking(False)
        try:
            sock.connect(path)
        except BlockingIOError:
            return True  # the backlog is full: someone is there
        except OSError as exc:
            return exc.errno not in (errno.ECONNREFUSED, errno.ENOENT)
    return True


class ServerObserver:
    def __init__(self, hub: Hub, socket_path: str, *, tmux: str, hooks: bool) -> None:
        self.hub = hub
        self.socket_path = socket_path
        self.tmux = tmux
        self.use_hooks = hooks
        self.client: ControlClient | None = None
        self.version = ""
        self.pid: int | None = None
        self.client_name = ""
        # One channel per user, not per daemon: a daemon that was killed leaves its waiter
        # blocked in the server, and a restarted daemon's hooks, signalling the same channel,
        # then wake it and it exits instead of waiting forever.
        self.channel = f"tmuxlocd-{os.getuid()}"
        self.synced = asyncio.Event()  # set after each first sync of an attachment
        self._attached = asyncio.Event()  # %session-changed came: the attach is complete
        self._hooks_installed = False
        self._stopping = asyncio.Event()
        self._kick = asyncio.Event()  # a barrier is waiting: retry now, not after the backoff
        self._task: asyncio.Task[None] | None = None
        # model
        self.sessions: dict[str, Session] = {}
        self.winlinks: tuple[Winlink, ...] = ()
        self.windows: dict[str, Window] = {}
        self.panes: dict[str, Pane] = {}
        # what to re-read
        self._dirty = asyncio.Event()
        self._full = False
        self._structure = False
        self._layouts = False
        self._dirty_windows: set[str] = set()
        self.attached_session = ""
        self._rehook = False
        # The spelling of each command that no command-alias of the user's takes over.
        self.spell = spelling.PLAIN
        # The failure episode under way (None while the server reads well): one WARNING
        # when it starts, one INFO when it ends, debug in between.
        self.error: str | None = None
        self._early_exits = 0
        self._window_misses: dict[str, int] = {}
        self._attachment_failure: CommandFailed | RowError | None = None
        # barrier: requests are numbered; the sync loop records the last one it served, and
        # the last one a failed re-read could not serve (with why)
        self._requested = 0
        self._served = 0
        self._failed = 0
        self._failure = ""
        self._tries = 0  # failed attempts since the oldest pending barrier was asked for
        self._served_cond = asyncio.Condition()

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
        self._release_waiters()

    async def _pause(self, seconds: float) -> None:
        stopping = asyncio.ensure_future(self._stopping.wait())
        kicked = asyncio.ensure_future(self._kick.wait())
        try:
            await asyncio.wait((stopping, kicked), timeout=seconds,
                               return_when=asyncio.FIRST_COMPLETED)
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
            if self._pending():
                backoff = min(backoff, 0.2)  # a barrier waits: its tries come quickly
            await self._pause(backoff)

    def _went_down(self) -> None:
        self.sessions, self.winlinks, self.windows, self.panes = {}, (), {}, {}
        self._hooks_installed = False
        self._early_exits = 0
        if self.error is not None:
            log.info("tmux server gone while failing (%s)", self.error,
                     extra={"tmux_socket": self.socket_path})
            self.error = None
        self.hub.server_down(self.socket_path)
        self._release_waiters()

    def _fail(self, why: str) -> None:
        """A command failed, or its answer could not be used: report it (health, one WARNING
        per episode), fail the barriers waiting, and leave the attachment to be made anew."""
        if self.error is None:
            log.warning("cannot read tmux: %s; retrying with a fresh control client", why,
                        extra={"tmux_socket": self.socket_path})
        elif why != self.error:
            log.debug("still cannot read tmux: %s", why, extra={"tmux_socket": self.socket_path})
        self.error = why
        self.hub.set_observer(self.socket_path, "error", why)
        self._tries += 1
        if self._tries >= BARRIER_TRIES:
            self._fail_waiters(why)

    def _recovered(self) -> None:
        if self.error is not None:
            log.info("tmux reads well again (after: %s)", self.error,
                     extra={"tmux_socket": self.socket_path})
            self.error = None
        self.hub.set_observer(self.socket_path, "attached")

    async def _plain(self, *argv: str) -> tuple[int, list[str], str]:
        """One command as a plain client (it never starts a server: no STARTSERVER), with a
        deadline: exit status, output lines, the first line of its error output."""
        proc = await asyncio.create_subprocess_exec(
            self.tmux, "-S", self.socket_path, *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=tmux_env(),
            start_new_session=True,
        )
        try:
            async with asyncio.timeout(PROBE_TIMEOUT):
                out, err = await proc.communicate()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.communicate()
            raise CommandTimeout(argv[0], f"no answer within {PROBE_TIMEOUT:g} s") from None
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
                if chosen.describe() != self.spell.describe() and chosen.describe():
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
        self.spell = spell
        if spell.blocked:
            raise CommandFailed(spell.blocked[0], spell.describe())
        rc, lines, err = await self._plain(
            *spell(("list-sessions", "-F", "#{session_id} #{session_attached}"))
        )
        if rc != 0 and not lines:  # (rows and status 1: a user's after-hook failed)
            if not socket_alive(self.socket_path):
                return None
            raise CommandFailed("list-sessions", err or f"exit status {rc}")
        sessions = []
        for line in lines:
            sid, _, attached = line.partition(" ")
            if not (sid.startswith("$") and sid[1:].isdigit() and attached.isdigit()):
                raise CommandFailed("list-sessions", f"unexpected answer {line[:100]!r}")
            sessions.append((sid, int(attached)))
        return sessions

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
            self.sessions, self.winlinks, self.windows, self.panes = {}, (), {}, {}
            self.hub.update(self.state())
            self._release_waiters()
            return False
        # Prefer a session a real client already has: attaching there changes no
        # session_attached from 0 and no focus (measured side effects of attaching).
        sid = min(sessions, key=lambda s: (s[1] == 0, id_number(s[0])))[0]
        client = ControlClient(self._on_event)
        self._attachment_failure = None
        self.attached_session = sid
        self._attached.clear()
        await client.start(
            self.tmux, self.socket_path, sid, attach=self.spell.word("attach-session")
        )
        self.client = client
        sync_task: asyncio.Task[None] | None = None
        waiter_task: asyncio.Task[None] | None = None
        try:
            await self._until_attached(client)
            self._early_exits = 0
            (info,) = await client.run(
                self.spell(("display-message", "-p", "#{pid}\t#{version}\t#{client_name}"))
            )
            _check(("display-message",), info)
            pid, version, name = [*info.lines[0].split("\t"), "", "", ""][:3] if info.lines else (
                "", "", ""
            )
            if not pid.isdigit() or not version or not name:
                raise CommandFailed("display-message", f"unexpected answer {info.lines[:1]!r}")
            self.pid = int(pid)
            self.version, self.client_name = version, name
            # Barriers asked for before this full re-read are answered by it (their tickets
            # may have been lost with the previous client, mid-sync).
            ticket = self._requested
            await self._sync(full=True, structure=False, windows=set())
            if self.use_hooks:
                if not self._uses_message_hooks():
                    # Wakes a waiter left blocked by a daemon that was killed (same channel),
                    # so that it exits; ours then sees one spurious wake-up, a cheap re-read.
                    (woke,) = await client.run(self.spell(("wait-for", "-S", self.channel)))
                    _check(("wait-for",), woke)
                    waiter_task = asyncio.create_task(self._waiter())
                await self._install_hooks(client)
            (sub,) = await client.run(
                self.spell(("refresh-client", "-B", f"{DIGEST_NAME}::{DIGEST_FORMAT}"))
            )
            # Without it the safety net would be off, silently, for the whole attachment.
            _check(("refresh-client",), sub)
            self._recovered()
            await self._serve(ticket)
            self.synced.set()
            sync_task = asyncio.create_task(self._sync_loop())
            await client.closed.wait()
            failure = self._attachment_failure or client.failure
            if failure is not None:
                raise failure
            if self.error is None:
                log.info(
                    "control client ended (%s)", client.exit_reason,
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
                        self.spell.word("attach-session"),
                        f"the control client ended before attaching ({client.exit_reason or exc})",
                    ) from None
            log.info("observer detached: %s", exc, extra={"tmux_socket": self.socket_path})
            return self.synced.is_set()
        finally:
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
                self.spell.word("attach-session"), f"no %session-changed within {ATTACH_WAIT:g} s"
            )

    # ------------------------------------------------------------------ hooks

    def _uses_message_hooks(self) -> bool:
        # tmux 3.4+ delivers `display-message -c <control client>` as a %message line: a
        # push with no extra client.  3.3 has no such line, so it uses a wait-for channel.
        digits = "".join(ch if ch.isdigit() or ch == "." else " " for ch in self.version)
        parts = digits.split()
        try:
            major, minor = [*parts[0].split("."), "0"][:2]
            return (int(major), int(minor or 0)) >= (3, 4)
        except (ValueError, IndexError):
            return False

    def _hook_command(self, hook: str) -> str:
        # The guard is a format evaluated inside the server (no fork): windows of the attached
        # session already send us %layout-change, and a hook for them would only cost a
        # second, wider re-read.  #{session_id} is the session the hook's window was found in.
        guard = f"#{{!=:#{{session_id}},{self.attached_session}}}"
        if self._uses_message_hooks():
            # 3.4+: the message names the window, so only that window is re-read.  The guard
            # goes inside the message, not around it in if-shell: a command that if-shell
            # inserts inherits its client, and when that is our control client its %begin/%end
            # 0 guard is written to us with the %message inside it, as block content, unseen.
            # A hook's own command has no client yet when its guard is written.  For windows
            # of the attached session the message is empty and ignored.
            text = f"#{{?{guard},tmuxlocd {hook} #{{window_id}},}}"
            return f"{self.spell.word('display-message')} -c '{self.client_name}' '{text}'"
        # tmux parses a hook's command when it runs, so its words are respelled too.
        wait_for = self.spell.word("wait-for")
        return f"{self.spell.word('if-shell')} -F '{guard}' \"{wait_for} -S {self.channel}\""

    async def _install_hooks(self, client: ControlClient) -> None:
        replies = await client.run(
            *(
                self.spell(("set-hook", "-g", f"{hook}[{HOOK_INDEX}]", self._hook_command(hook)))
                for hook in HOOKS
            )
        )
        self._hooks_installed = True
        # Without the hook, changes in other sessions would only be seen by the digest,
        # a second late: not a wrong model, but a slower one the user should hear of.
        _check(("set-hook",), *replies)

    async def _remove_hooks(self, client: ControlClient) -> None:
        if not self._hooks_installed:
            return
        self._hooks_installed = False
        await client.run(
            *(self.spell(("set-hook", "-gu", f"{hook}[{HOOK_INDEX}]")) for hook in HOOKS),
            timeout=1.0,
        )
        if not self._uses_message_hooks():
            # Release our waiter, which would otherwise sit in the server until it dies.
            await client.run(self.spell(("wait-for", "-S", self.channel)), timeout=1.0)

    async def _waiter(self) -> None:
        """The unattached ``tmux wait-for`` client that hooks wake (tmux 3.3).

        Should it end without being woken (killed from outside, or the server is going
        away), it is started again, after a pause that grows while that repeats; without it
        hooks would reach nobody for the rest of the attachment.  When the server is gone
        the attachment ends and cancels this task.
        """
        pause = WAITER_RETRY_MIN
        while True:
            # The same client lists the windows the moment it is woken: at 1,000 panes every
            # tmux client and every command costs the server milliseconds, so the wake and
            # the read share one.  Its rows only say which windows to re-read (over the
            # control connection); they are never applied, since they may be older than a
            # re-read already done.  The environment is cut to PATH: tmux copies a client's
            # environment into the server.
            spawn = asyncio.ensure_future(
                asyncio.create_subprocess_exec(
                    self.tmux, "-S", self.socket_path,
                    self.spell.word("wait-for"), self.channel, ";", *self.spell(LIST_WINDOWS),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.DEVNULL,
                    env={"PATH": os.environ.get("PATH", os.defpath)},
                    start_new_session=True,
                )
            )
            try:
                proc = await asyncio.shield(spawn)
            except asyncio.CancelledError:
                # Cancelled while the process was being made: it may exist all the same.
                with contextlib.suppress(Exception):
                    made = await spawn
                    with contextlib.suppress(ProcessLookupError):
                        made.kill()
                    await made.communicate()
                raise
            try:
                assert proc.stdout is not None
                # The listing is complete at EOF, which comes as the client exits: act on it
                # then, before learning the exit status (that takes a child-watcher round).
                out = await proc.stdout.read()
                if out and not self._stopping.is_set():
                    self._dirty_from_window_rows(out.decode("utf-8", "replace").splitlines())
                    # Let the sync loop send its query before the next waiter's fork.
                    await asyncio.sleep(0)
                rc = await proc.wait()
            except asyncio.CancelledError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.communicate()  # to EOF too: the pipe's transport then closes
                raise
            if self._stopping.is_set():
                return
            if rc != 0 and not out:  # a listing with status 1: a user's after-hook failed
                await self._pause(pause)
                pause = min(pause * 2, RETRY_MAX)
                # hooks may have fired while nobody waited
                self.mark(layouts=True)
                continue
            pause = WAITER_RETRY_MIN
            if not out:
                self.mark(layouts=True)  # woken, but the listing was lost: read it ourselves

    def _dirty_from_window_rows(self, lines: list[str]) -> None:
        """Mark what a window listing shows to differ from the model."""
        structure = False
        windows: set[str] = set()
        try:
            for row in join_rows(self._rows(tuple(lines)), "W"):
                _, window = parse_window_row(row)
                known = self.windows.get(window.id)
                if known is None:
                    structure = True
                elif known != window:
                    windows.add(window.id)
        except RowError:
            structure = True
        self.mark(structure=structure, windows=windows)

    # ------------------------------------------------------------------ notifications

    def _on_event(self, event: Event) -> None:
        match event:
            case LayoutChange(window_id=w) | WindowPaneChanged(window_id=w) | WindowRenamed(
                window_id=w
            ):
                self.mark(windows=(w,))
            case SessionChanged(session_id=sid):
                # The attach completed, or our client was moved to another session: the
                # hooks' guard must follow.
                self._attached.set()
                self.attached_session = sid
                self._rehook = self._hooks_installed
                self.mark(structure=True)
            case (
                WindowAdd()
                | WindowClose()
                | SessionWindowChanged()
                | SessionsChanged()
                | SessionRenamed()
            ):
                self.mark(structure=True)
            case SubscriptionChanged(name=name, value=value) if name == DIGEST_NAME:
                found = compare_digest(value, self.state())
                if found.winlinks_differ or found.windows:
                    self.mark(structure=found.winlinks_differ, windows=found.windows)
            case Message(text=text) if text.startswith("tmuxlocd "):
                window = text.rsplit(" ", 1)[-1]
                if window.startswith("@") and window[1:].isdigit():
                    self.mark(windows=(window,))
                else:
                    self.mark(layouts=True)
            case ClientSessionChanged():
                pass  # another client switched session: no pane moved
            case protocol.ConfigError(text=text):
                # tmux 3.4+ keeps the errors of a configuration loaded by a detached start for
                # the first client that attaches; when that is us the user never sees them.
                log.warning("tmux configuration error: %s", text,
                            extra={"tmux_socket": self.socket_path})
            case Unknown(line=line):
                log.debug("stray line from tmux: %r", line[:200])
            case _:
                pass

    def mark(
        self,
        *,
        full: bool = False,
        structure: bool = False,
        layouts: bool = False,
        windows: Iterable[str] = (),
    ) -> None:
        """Ask the sync loop to re-read: everything (``full``), sessions and windows
        (``structure``), windows only (``layouts``: list-windows -a, then the windows that
        differ), or the named windows."""
        self._full |= full
        self._structure |= structure
        self._layouts |= layouts
        self._dirty_windows.update(windows)
        if self._full or self._structure or self._layouts or self._dirty_windows:
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
        if not socket_alive(self.socket_path) and not self.hub.server(
            self.socket_path
        ).state.running:
            return None
        if not self._pending():
            self._tries = 0
        self._requested += 1
        ticket = self._requested
        self.mark(full=True)
        self._kick.set()
        try:
            async with asyncio.timeout(timeout):
                async with self._served_cond:
                    await self._served_cond.wait_for(
                        lambda: self._served >= ticket or self._failed >= ticket
                    )
        except TimeoutError:
            why = f"no re-read published within {timeout:g} s"
            return f"{why} (last error: {self.error})" if self.error else why
        if self._served >= ticket:
            return None
        return self._failure

    async def _serve(self, ticket: int) -> None:
        self._tries = 0
        if ticket > self._served:
            self._served = ticket
            async with self._served_cond:
                self._served_cond.notify_all()

    def _release_waiters(self) -> None:
        """Every barrier asked for so far is answered: the server's going down, or its
        having no session, was published."""
        self._served = self._requested
        self._tries = 0
        self._release_waiters_only()

    def _pending(self) -> bool:
        return self._requested > max(self._served, self._failed)

    def _fail_waiters(self, why: str) -> None:
        """Every barrier asked for so far is answered: failed, with why."""
        if not self._pending():
            return
        self._failed, self._failure = self._requested, why
        self._tries = 0
        self._release_waiters_only()

    def _release_waiters_only(self) -> None:
        async def wake() -> None:
            async with self._served_cond:
                self._served_cond.notify_all()

        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(wake())

    async def _sync_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            full, structure, windows = self._full, self._structure, self._dirty_windows
            layouts = self._layouts
            self._full, self._structure, self._layouts = False, False, False
            self._dirty_windows = set()
            ticket = self._requested
            try:
                if self._rehook and self.client is not None:
                    self._rehook = False
                    await self._install_hooks(self.client)
                await self._sync(
                    full=full, structure=structure, windows=windows, layouts=layouts
                )
            except (CommandFailed, RowError) as exc:
                # Not retried on this connection: its replies may be out of step, and a row
                # that cannot be parsed now will most likely not parse a millisecond later.
                # The attachment ends (``_attempt`` raises this), is made anew with backoff,
                # and reports meanwhile.
                self._attachment_failure = exc
                if self.client is not None:
                    await self.client.close()
                return
            await self._serve(ticket)

    def state(self) -> ServerState:
        return ServerState(
            socket_path=self.socket_path,
            pid=self.pid,
            running=True,
            sessions=dict(self.sessions),
            winlinks=self.winlinks,
            windows=dict(self.windows),
            panes=dict(self.panes),
        )

    async def _sync(
        self, *, full: bool, structure: bool, windows: set[str], layouts: bool = False
    ) -> None:
        client = self.client
        if client is None:
            raise TmuxUnavailable("not attached")
        spell = self.spell
        if full:
            rs, rw, rp = await client.run(
                spell(LIST_SESSIONS), spell(LIST_WINDOWS), spell(LIST_PANES)
            )
            _check(("list-sessions", "list-windows", "list-panes"), rs, rw, rp)
            self._apply_structure(rs, rw)
            panes: dict[str, Pane] = {}
            for row in rp.lines:
                pane = parse_pane_row(row)
                panes[pane.id] = pane
            self.panes = panes
        else:
            if structure:
                rs, rw = await client.run(spell(LIST_SESSIONS), spell(LIST_WINDOWS))
                _check(("list-sessions", "list-windows"), rs, rw)
                windows |= self._apply_structure(rs, rw)
            elif layouts:
                (rw,) = await client.run(spell(LIST_WINDOWS))
                _check(("list-windows",), rw)
                windows |= self._apply_structure(None, rw)
            if structure or layouts:
                windows = {w for w in windows if w in self.windows}
            if windows:
                order = sorted(windows, key=id_number)
                replies = await client.run(
                    *(spell(("list-panes", "-t", w, "-F", PANE_WINDOW_FORMAT)) for w in order)
                )
                for wid, reply in zip(order, replies, strict=True):
                    self._apply_window(wid, reply)
        self.hub.update(self.state())

    def _apply_structure(self, rs: Reply | None, rw: Reply) -> set[str]:
        """Take sessions (when read) and winlinks; return the windows to re-read."""
        if rs is not None:
            self.sessions = {s.id: s for s in map(parse_session_row, self._rows(rs.lines))}
        links: list[Winlink] = []
        windows: dict[str, Window] = {}
        for row in join_rows(self._rows(rw.lines), "W"):
            link, window = parse_window_row(row)
            links.append(link)
            windows[window.id] = window
        stale: set[str] = set()
        for wid, window in windows.items():
            old = self.windows.get(wid)
            # The full layout names every pane and its geometry; zoom changes geometry without
            # changing it, so the whole window row is compared.
            if old != window:
                stale.add(wid)
        gone = set(self.windows) - set(windows)
        if gone:
            self.panes = {k: p for k, p in self.panes.items() if p.window_id not in gone}
        self.winlinks = tuple(sort_winlinks(links))
        self.windows = windows
        return stale

    def _rows(self, lines: tuple[str, ...]) -> Iterable[str]:
        # Rows that carry names.  tmux 3.4 puts a backslash before `$` in all command output,
        # which unvis would take for part of the name (names.undo_output_dollars).
        if output_escapes_dollars(self.version):
            return [undo_output_dollars(line) for line in lines]
        return lines

    def _apply_window(self, wid: str, reply: Reply) -> None:
        if not reply.ok:
            # The window went away between the notification and the query: the structure
            # tells where its panes are now.  A window the structure keeps listing while
            # its own listing keeps failing is a failing command instead.
            misses = self._window_misses.get(wid, 0) + 1
            if misses >= WINDOW_MISSES:
                self._window_misses.pop(wid, None)
                _check(("list-panes",), reply)
            self._window_misses[wid] = misses
            self.panes = {k: p for k, p in self.panes.items() if p.window_id != wid}
            self.windows.pop(wid, None)
            self.mark(structure=True)
            return
        self._window_misses.pop(wid, None)
        window, panes = parse_window_query(self._rows(reply.lines))
        self.panes = {k: p for k, p in self.panes.items() if p.window_id != wid}
        for pane in panes:
            self.panes[pane.id] = pane
        if window is not None:
            self.windows[wid] = window
        if not any(link.window_id == wid for link in self.winlinks):
            self.mark(structure=True)  # a window we have not seen linked yet


def _check(names: tuple[str, ...], *replies: Reply) -> None:
    """Raise for the first reply that is an ``%error``, naming its command and tmux's words."""
    for i, reply in enumerate(replies):
        if not reply.ok:
            name = names[min(i, len(names) - 1)]
            raise CommandFailed(name, " ".join(reply.lines)[:200] or "%error with no message")


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
        explicit += [os.path.abspath(p) for p in config.socket_path]
        self.explicit = explicit

    async def start(self) -> None:
        self.hub.syncer = self.sync
        self.hub.notifier = self.notify
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
        directory = socket_dir()
        try:
            names = os.listdir(directory)
        except OSError:
            names = []
        present = set()
        for name in names:
            path = str(directory / name)
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.stat(path).st_mode):
                    present.add(path)
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
