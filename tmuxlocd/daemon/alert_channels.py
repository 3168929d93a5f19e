"""The alert channels (SPEC §14): each one's I/O, with a deadline the caller puts on it.

- ``desktop``: the freedesktop notification service, through ``gdbus`` (GLib's, on every
  desktop that has the service): ``Notify``, ``CloseNotification`` to clear, and, where the
  server lists the ``actions`` capability, a ``default`` action read from ``gdbus monitor``
  that switches the tmux client used last to the agent's pane.
- ``terminal``: OSC 9 or OSC 777 written to the tty of each attached tmux client (what
  reaches a terminal over ssh).  Not passed through a pane: tmux forwards a pane's
  passthrough only with ``allow-passthrough`` set, and before ``all`` (3.4) only from a
  visible pane, which the agent's is not when the user is elsewhere.
- ``tmux``: ``display-message`` on every attached client, and the window option
  ``@tmuxlocd_alert`` (for window-status-format) while an alert stands in the window, over
  the observers' control clients.
- ``command``: the user's argv, the alert's and the agent's fields in its environment.

A channel raises ``ChannelError`` (or OSError) when it fails; it never retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

from tmuxlocd.core import alerts
from tmuxlocd.core.alerts import Alert
from tmuxlocd.core.mirror import Argv
from tmuxlocd.host.lifeline import tied

log = logging.getLogger(__name__)

ALERT_OPTION = "@tmuxlocd_alert"
NOTIFICATIONS = ("--dest", "org.freedesktop.Notifications")
NOTIFICATIONS_PATH = ("--object-path", "/org/freedesktop/Notifications")
METHOD = "org.freedesktop.Notifications."
MESSAGE_MS = 5000  # how long display-message shows an alert
ERROR_CHARS = 200


class ChannelError(Exception):
    pass


class Commands(Protocol):
    """The observers' control connections (``observer.Watcher.commands``)."""

    async def commands(
        self, socket_path: str, make: Callable[[Callable[[str], str]], Sequence[Argv]]
    ) -> list[list[str]] | None: ...


class Tmux:
    """What the channels ask of the tmux servers, over the observers' control clients."""

    def __init__(self, commands: Commands, servers: Callable[[], list[str]]) -> None:
        self.commands = commands
        self.servers = servers  # the socket paths of the running watched servers

    async def run(self, server: str, *argvs: Argv) -> list[list[str]]:
        def make(_word: Callable[[str], str]) -> list[Argv]:
            return list(argvs)

        replies = await self.commands.commands(server, make)
        if replies is None:
            raise ChannelError(f"tmux at {server} refused {argvs[0][0]} (or is not attached)")
        return replies

    async def clients(self, server: str) -> list[str]:
        fmt = "#{client_control_mode} #{client_tty}"
        (rows,) = await self.run(server, ("list-clients", "-F", fmt))
        return alerts.attached_clients(rows)

    async def switch(self, server: str, pane: str) -> bool:
        """The client used last on ``server`` to ``pane`` (its session, window and pane)."""
        fmt = "#{client_control_mode} #{client_activity} #{client_tty}"
        (rows,) = await self.run(server, ("list-clients", "-F", fmt))
        client = alerts.latest_client(rows)
        if client is None:
            return False
        await self.run(
            server,
            ("switch-client", "-c", client, "-t", pane),
            ("select-window", "-t", pane),
            ("select-pane", "-t", pane),
        )
        return True


async def run_process(
    argv: Sequence[str], env: dict[str, str] | None = None, *, output: bool = False
) -> str:
    """``argv`` run to its end (the caller's deadline cancels it: the process group is
    killed then); its output if asked; ChannelError on a non-zero exit, with its first
    words of error."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *tied(list(argv)),  # a channel's program ends with the daemon, killed or not
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if output else asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # its children die with it on a deadline
        )
    except OSError as exc:
        raise ChannelError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None
    try:
        out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
    if proc.returncode != 0:
        words = " ".join(err.decode("utf-8", "replace").split())[:ERROR_CHARS]
        raise ChannelError(f"{argv[0]} exited with status {proc.returncode}: {words}".rstrip(": "))
    return out.decode("utf-8", "replace") if out is not None else ""


class Channel:
    name = ""

    async def fire(self, alert: Alert) -> None:
        raise NotImplementedError

    async def clear(self, alert: Alert) -> None:
        """Take the alert back, where the channel can (most cannot)."""

    async def close(self) -> None:
        """Stop what the channel keeps running."""


class Desktop(Channel):
    name = "desktop"

    def __init__(self, switch: Callable[[Alert], Awaitable[None]], gdbus: str = "gdbus") -> None:
        self.gdbus = gdbus
        self.switch = switch
        self.capabilities: frozenset[str] | None = None
        self.shown: dict[int, Alert] = {}  # notification id -> its alert
        self.ids: dict[int, int] = {}  # alert id -> notification id
        self.monitor: asyncio.Task[None] | None = None

    async def _call(self, method: str, *args: str) -> str:
        argv = [self.gdbus, "call", "--session", *NOTIFICATIONS, *NOTIFICATIONS_PATH]
        return await run_process([*argv, "--method", METHOD + method, *args], output=True)

    async def fire(self, alert: Alert) -> None:
        if self.capabilities is None:
            out = await self._call("GetCapabilities")
            self.capabilities = frozenset(w.strip("'[](),") for w in out.split())
        actions = alert.agent is not None and "actions" in self.capabilities
        out = await self._call(
            "Notify",
            "'tmuxlocd'",
            "uint32 0",
            "''",
            alerts.gvariant_string(alerts.title(alert)),
            alerts.gvariant_string(alerts.body(alert)),
            "['default', 'Go to pane']" if actions else "@as []",
            "{'urgency': <byte 1>}",
            "int32 -1",
        )
        number = alerts.parse_notify_id(out)
        if number is None:
            raise ChannelError(f"the notification service answered {out.strip()[:80]!r}")
        self.shown[number] = alert
        self.ids[alert.id] = number
        if actions and (self.monitor is None or self.monitor.done()):
            self.monitor = asyncio.create_task(self._follow())

    async def clear(self, alert: Alert) -> None:
        number = self.ids.pop(alert.id, None)
        if number is None:
            return
        self.shown.pop(number, None)
        await self._call("CloseNotification", f"uint32 {number}")

    async def _follow(self) -> None:
        """The actions the user picks: ``gdbus monitor`` for as long as the daemon runs."""
        argv = [self.gdbus, "monitor", "--session", *NOTIFICATIONS, *NOTIFICATIONS_PATH]
        try:
            proc = await asyncio.create_subprocess_exec(
                *tied(argv),  # it follows the desktop for as long as the daemon runs, no longer
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            log.warning("alerts: cannot follow the notifications' actions: %s", exc)
            return
        assert proc.stdout is not None
        try:
            while line := await proc.stdout.readline():
                found = alerts.parse_action(line.decode("utf-8", "replace"))
                alert = self.shown.get(found[0]) if found is not None else None
                if alert is not None:
                    await self.switch(alert)
            log.warning("alerts: gdbus monitor ended; no action until the next notification")
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await asyncio.shield(proc.wait())

    async def close(self) -> None:
        if self.monitor is not None:
            self.monitor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.monitor


class Terminal(Channel):
    name = "terminal"

    def __init__(self, tmux: Tmux, sequence: Literal["osc9", "osc777"]) -> None:
        self.tmux = tmux
        self.sequence = sequence

    async def fire(self, alert: Alert) -> None:
        data = alerts.osc(alert, self.sequence)
        ttys: dict[str, None] = {}
        for server in self.tmux.servers():
            for tty in await self.tmux.clients(server):
                ttys[tty] = None
        failed = []
        for tty in ttys:
            # Non-blocking: a terminal that takes nothing (a stopped ssh) fails at once.  One
            # write: the tty layer never interleaves it with tmux's own.
            try:
                fd = os.open(tty, os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
                try:
                    os.write(fd, data)
                finally:
                    os.close(fd)
            except OSError as exc:
                failed.append(f"{tty}: {exc.strerror or exc}")
        if failed:
            raise ChannelError("cannot write to " + ", ".join(failed))


class TmuxMessage(Channel):
    name = "tmux"

    def __init__(self, tmux: Tmux, standing: Callable[[], list[Alert]]) -> None:
        self.tmux = tmux
        self.standing = standing  # the alerts that stand now (the window option's source)

    async def fire(self, alert: Alert) -> None:
        text = alerts.tmux_text(f"{alerts.title(alert)}: {alerts.body(alert)}")
        for server in self.tmux.servers():
            clients = await self.tmux.clients(server)
            if clients:
                await self.tmux.run(
                    server,
                    *(("display-message", "-c", c, "-d", str(MESSAGE_MS), text) for c in clients),
                )
        await self._window(alert)

    async def clear(self, alert: Alert) -> None:
        await self._window(alert)

    async def _window(self, alert: Alert) -> None:
        agent = alert.agent
        if agent is None or not alert.window:
            return
        value = alerts.window_option(self.standing(), agent.server, alert.window)
        if value is None:
            argv: Argv = ("set-option", "-w", "-u", "-t", alert.window, ALERT_OPTION)
        else:
            argv = ("set-option", "-w", "-t", alert.window, ALERT_OPTION, value)
        with contextlib.suppress(ChannelError):
            # A window closed meanwhile has no option to take out: not a failure.
            await self.tmux.run(agent.server, argv)
            return
        if value is not None:
            raise ChannelError(f"cannot set {ALERT_OPTION} on {alert.window}")


class Command(Channel):
    name = "command"

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)

    async def fire(self, alert: Alert) -> None:
        await run_process(self.argv, {**os.environ, **alerts.environment(alert)})

    async def clear(self, alert: Alert) -> None:
        await run_process(self.argv, {**os.environ, **alerts.environment(alert, cleared=True)})
