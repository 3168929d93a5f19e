"""A pane's end told at once where tmux may not tell it (before 3.6): one server's exit watches.

tmux runs pane-died, whose rows the daemon's hook hands over (``mirror.HOOKS``), once it has
both the pane's end and the exit status, which comes with the SIGCHLD of the pane's process.
Before 3.6 a tmux built with libutempter can lose that SIGCHLD (libutempter's own child
takes it): the pane then shows dead without a status, and no hook runs, until another
SIGCHLD arrives -- seconds or hours later (``mirror.loses_sigchld``).  So on such a server
the observer watches each live pane's process's exit (a pidfd, or the portable host's queue:
tmuxlocd.host.system): the kernel says the moment it ends.
If tmux has not shown the death with its status a moment later, the server is sent a SIGCHLD
(tmux's own handler reaps: the same as the next child's end would do; the daemon runs as the
server's user) and the window is re-read; again on a growing backoff, a few times, then left
as it is (``exit_status``/``exit_signal`` null: tmux never said).  A dead pane found without
its status (read after its end, or by the safety net) is chased the same way.

Cost: one pidfd per live pane in the event loop's epoll set (one kevent each on macOS);
nothing runs until one
ends.  Panes are followed by window: a window whose panes are the same tuple as at the last
publication is not looked at (``ServerState.by_window``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Callable, Mapping
from functools import partial

from tmuxlocd.core.mirror import death_told
from tmuxlocd.core.model import Pane
from tmuxlocd.host.system import HOST, Exit

log = logging.getLogger(__name__)

# After a pane's process ended: when tmux is looked at (its hook's rows normally came by
# the first), and poked if it has not told the death with its status.  About 1.5 s in all.
CHASE_S = (0.01, 0.04, 0.15, 0.4, 0.9)


class PaneExits:
    """The exit watches on one server's live panes, and the chase of deaths tmux has not
    told."""

    def __init__(
        self,
        socket_path: str,
        server_pid: int,
        *,
        pane: Callable[[str], Pane | None],
        reread: Callable[[str], None],
    ) -> None:
        self.socket_path = socket_path
        self.server_pid = server_pid
        self._pane = pane  # the model's pane now
        self._reread = reread  # marks a window to re-read
        self._windows: dict[str, tuple[Pane, ...]] = {}
        self._fds: dict[str, tuple[int, Exit]] = {}  # pane id -> (pid, its exit watch)
        self._chasing: dict[str, asyncio.TimerHandle] = {}
        self._told_unchased = False
        self.pokes = 0  # SIGCHLDs sent (tests and the log read it)

    @staticmethod
    def usable(server_pid: int | None) -> bool:
        """The server's pid names a tmux server here (not one of another pid namespace,
        whose pids mean other processes here)."""
        if not server_pid:
            return False
        record = HOST.record(server_pid)
        return record is not None and record.comm.startswith("tmux")

    def follow(self, by_window: Mapping[str, tuple[Pane, ...]]) -> None:
        """The model was published: watch the exit of each live pane of the windows that
        changed, let go those of panes gone or dead, chase deaths told without a status."""
        last = self._windows
        for window_id, panes in by_window.items():
            if last.get(window_id) is not panes:
                self._window(panes)
        for window_id in last.keys() - by_window.keys():
            for pane in last[window_id]:
                self._forget(pane.id)
        self._windows = dict(by_window)

    def _window(self, panes: tuple[Pane, ...]) -> None:
        for pane in panes:
            held = self._fds.get(pane.id)
            if pane.dead:
                self._release(pane.id)
                if not death_told(pane):
                    self._chase(pane.id, pane.window_id)
                continue
            if held is not None and held[0] == pane.pid:
                continue
            self._release(pane.id)  # respawned: a new process
            if pane.pid <= 0:
                continue
            watch = HOST.watch_exit(pane.pid, partial(self._ended, pane.id, pane.window_id))
            if watch is None:
                # Ended (and reaped) before it could be held: it is chased all the same.
                self._chase(pane.id, pane.window_id)
                continue
            self._fds[pane.id] = (pane.pid, watch)

    def _forget(self, pane_id: str) -> None:
        self._release(pane_id)
        timer = self._chasing.pop(pane_id, None)
        if timer is not None:
            timer.cancel()

    def _release(self, pane_id: str) -> None:
        held = self._fds.pop(pane_id, None)
        if held is not None:
            held[1].cancel()

    def _ended(self, pane_id: str, window_id: str) -> None:
        self._release(pane_id)
        self._chase(pane_id, window_id)

    def _chase(self, pane_id: str, window_id: str) -> None:
        if pane_id in self._chasing:
            return
        loop = asyncio.get_running_loop()
        self._chasing[pane_id] = loop.call_later(CHASE_S[0], self._look, pane_id, window_id, 0)

    def _look(self, pane_id: str, window_id: str, step: int) -> None:
        pane = self._pane(pane_id)
        if death_told(pane) or (pane is not None and not pane.dead and pane.pid in self._held()):
            # Told; or a new process in the pane (respawned), held by then.
            self._chasing.pop(pane_id, None)
            return
        if step + 1 >= len(CHASE_S):
            self._chasing.pop(pane_id, None)
            if not self._told_unchased:
                self._told_unchased = True
                log.info(
                    "tmux told no exit status for pane %s (and may not for others: its "
                    "exit_status and exit_signal stay null)",
                    pane_id,
                    extra={"tmux_socket": self.socket_path},
                )
            return
        self._poke()
        self._reread(pane.window_id if pane is not None else window_id)
        loop = asyncio.get_running_loop()
        delay = CHASE_S[step + 1] - CHASE_S[step]
        self._chasing[pane_id] = loop.call_later(delay, self._look, pane_id, window_id, step + 1)

    def _held(self) -> set[int]:
        return {pid for pid, _ in self._fds.values()}

    def _poke(self) -> None:
        """A SIGCHLD to the tmux server: its handler reaps every child that ended, which runs
        pane-died for a pane whose SIGCHLD was lost."""
        try:
            os.kill(self.server_pid, signal.SIGCHLD)
            self.pokes += 1
        except OSError as exc:
            log.debug("could not signal the tmux server %d: %s", self.server_pid, exc)

    def close(self) -> None:
        for pane_id in list(self._fds):
            self._release(pane_id)
        for timer in self._chasing.values():
            timer.cancel()
        self._chasing.clear()
        self._windows = {}
