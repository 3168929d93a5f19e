"""Alerts on agents (SPEC §14): the registry's changes into ``core.alerts.Alerter``, a timer
for the waits that reach the delay, and each alert out through the configured channels.

Off the event loop's critical path: each channel has its own worker and queue, each delivery
a deadline (``alert-timeout``); a subprocess that outlives it is killed.  A channel that
hangs delays only its own queue, bounded (``QUEUE``: past it an alert is dropped, and that is
a failure).  A failure is logged once (a WARNING when the channel starts failing, DEBUG
while it goes on, INFO when it works again), counted in ``/v1/health``, never retried.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil

from tmuxlocd.core.agents import Change
from tmuxlocd.core.alerts import Action, Alert, Alerter, Clear, Fire, place
from tmuxlocd.core.answers import AlertChannelHealth, AlertsHealth, AlertTestResult
from tmuxlocd.daemon.agent_registry import AgentRegistry
from tmuxlocd.daemon.alert_channels import (
    Channel,
    ChannelError,
    Command,
    Commands,
    Desktop,
    Terminal,
    Tmux,
    TmuxMessage,
)
from tmuxlocd.daemon.config import Config
from tmuxlocd.daemon.hub import Hub

log = logging.getLogger(__name__)

QUEUE = 32  # deliveries waiting per channel; past it, dropped (a hanging channel's backlog)


class Outlet:
    """One channel, its queue, its worker and its health."""

    def __init__(self, channel: Channel, timeout: float) -> None:
        self.channel = channel
        self.timeout = timeout
        self.queue: asyncio.Queue[Action] = asyncio.Queue(QUEUE)
        self.sent = 0
        self.failed = 0
        self.failing = False
        self.last_error: str | None = None
        self.worker: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.channel.name

    def submit(self, action: Action) -> None:
        if self.worker is None:
            self.worker = asyncio.create_task(self._work())
        try:
            self.queue.put_nowait(action)
        except asyncio.QueueFull:
            self.fail(f"{QUEUE} deliveries still queued (the channel hangs?); one dropped")

    async def _work(self) -> None:
        while True:
            action = await self.queue.get()
            await self.deliver(action)

    async def deliver(self, action: Action) -> str | None:
        """One delivery within the deadline: None when it went, else why not."""
        try:
            async with asyncio.timeout(self.timeout):
                if isinstance(action, Fire):
                    await self.channel.fire(action.alert)
                else:
                    await self.channel.clear(action.alert)
        except TimeoutError:
            return self.fail(f"no answer within {self.timeout:g} s")
        except (ChannelError, OSError) as exc:
            return self.fail(str(exc))
        except Exception as exc:  # a bug must not end the worker: said, counted
            log.exception("alerts: %s failed", self.name)
            return self.fail(repr(exc))
        if isinstance(action, Fire):
            self.sent += 1
        if self.failing:
            log.info("alerts: the %s channel works again", self.name)
        self.failing = False
        return None

    def fail(self, why: str) -> str:
        self.failed += 1
        self.last_error = why
        if not self.failing:
            log.warning("alerts: the %s channel failed: %s", self.name, why)
        else:
            log.debug("alerts: the %s channel failed again: %s", self.name, why)
        self.failing = True
        return why

    def health(self) -> AlertChannelHealth:
        return AlertChannelHealth(
            name=self.name,
            sent=self.sent,
            failed=self.failed,
            failing=self.failing,
            last_error=self.last_error,
        )

    async def close(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.worker
        await self.channel.close()


class Alerts:
    def __init__(self, config: Config, registry: AgentRegistry, commands: Commands, hub: Hub):
        self.config = config
        self.registry = registry
        self.hub = hub
        self.alerter = Alerter(config.alert_delay, config.alert_turn_end)
        self.standing: dict[int, Alert] = {}
        self._timer: asyncio.TimerHandle | None = None
        self.tmux = Tmux(commands, self._servers)
        self.outlets = [
            Outlet(self._channel(name), config.alert_timeout) for name in config.channels
        ]

    def _channel(self, name: str) -> Channel:
        if name == "desktop":
            return Desktop(self._switch, shutil.which("gdbus") or "gdbus")
        if name == "terminal":
            return Terminal(self.tmux, self.config.alert_terminal)
        if name == "tmux":
            return TmuxMessage(self.tmux, lambda: list(self.standing.values()))
        return Command(self.config.alert_command)

    def _servers(self) -> list[str]:
        return [path for path, entry in sorted(self.hub.servers.items()) if entry.state.running]

    def start(self) -> None:
        self.registry.on_change.append(self.changed)
        log.info(
            "alerts on",
            extra={"alert_channels": " ".join(o.name for o in self.outlets)},
        )

    async def close(self) -> None:
        """Takes back what stands (where a channel can) within the deadline, then stops."""
        with contextlib.suppress(ValueError):
            self.registry.on_change.remove(self.changed)
        if self._timer is not None:
            self._timer.cancel()
        cleared = self.alerter.forget()
        self.standing.clear()
        for outlet in self.outlets:
            if outlet.worker is not None:
                outlet.worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await outlet.worker
                outlet.worker = None
        await asyncio.gather(
            *(outlet.deliver(action) for outlet in self.outlets for action in cleared),
            return_exceptions=True,
        )
        for outlet in self.outlets:
            await outlet.close()

    # ------------------------------------------------------------------ decisions

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def changed(self, changes: list[Change]) -> None:
        """(From the registry.) Each agent's change, then the waits due."""
        now = self._now()
        actions: list[Action] = []
        for change in changes:
            actions += self.alerter.change(change.before, change.after, now)
        actions += self.alerter.due(now)
        self._dispatch(actions)

    def _tick(self) -> None:
        self._timer = None
        self._dispatch(self.alerter.due(self._now()))

    def _dispatch(self, actions: list[Action]) -> None:
        for action in actions:
            alert = action.alert
            if isinstance(action, Fire):
                self._placed(alert)
                self.standing[alert.id] = alert
                log.info(
                    "alert",
                    extra={"alert": alert.kind, "pane": alert.agent.pane if alert.agent else ""},
                )
            elif isinstance(action, Clear):
                self.standing.pop(alert.id, None)
            for outlet in self.outlets:
                outlet.submit(action)
        self._arm()

    def _placed(self, alert: Alert) -> None:
        agent = alert.agent
        if agent is None:
            return
        where = self.registry.location(agent.server, agent.pane)
        alert.place = place(where)
        alert.window = where.window.id if where is not None else ""

    def _arm(self) -> None:
        due = self.alerter.next_due()
        if self._timer is not None and (due is None or self._timer.when() != due):
            self._timer.cancel()
            self._timer = None
        if due is not None and self._timer is None:
            self._timer = asyncio.get_running_loop().call_at(due, self._tick)

    # ------------------------------------------------------------------ the rest

    async def _switch(self, alert: Alert) -> None:
        """A notification's action: the client used last to the agent's pane."""
        agent = alert.agent
        if agent is None:
            return
        try:
            async with asyncio.timeout(self.config.alert_timeout):
                await self.tmux.switch(agent.server, agent.pane)
        except (TimeoutError, ChannelError) as exc:
            log.warning("alerts: cannot switch to %s: %s", agent.pane, exc)

    async def test(self) -> list[AlertTestResult]:
        """One test alert through each channel, each within its deadline."""
        alert = self.alerter.test_alert()
        results = await asyncio.gather(*(o.deliver(Fire(alert)) for o in self.outlets))
        return [
            AlertTestResult(name=o.name, ok=why is None, error=why)
            for o, why in zip(self.outlets, results, strict=True)
        ]

    def health(self) -> AlertsHealth:
        return AlertsHealth(
            delay_s=self.config.alert_delay,
            turn_end_s=self.config.alert_turn_end,
            pending=len(self.alerter.pending),
            standing=len(self.standing),
            channels=tuple(o.health() for o in self.outlets),
        )
