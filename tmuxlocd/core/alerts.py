"""Alerts on agents (SPEC §14): the decisions, without I/O or a clock of their own.

An agent that has been ``waiting`` for ``delay`` seconds gets one alert for that wait; none
again until it has left ``waiting`` and entered it anew.  The delay is there because a
permission a harness approves on its own (an allow rule, an auto mode) shows ``waiting`` for
a moment: that is no reason to call the user.  When the agent stops waiting, its alert is
cleared (where a channel can take one back).  Optionally, a turn that ends (``working`` ->
``idle``) after at least ``turn_end`` seconds of work gets an alert too, cleared when the
agent works again.

``Alerter`` is fed the registry's changes and the time (a monotonic clock the caller owns);
it answers with what to send (``Fire``) and what to take back (``Clear``), and when it next
needs the time (``next_due``).  The channels (desktop, terminal, tmux, a command) are I/O in
the daemon (``tmuxlocd.daemon.alerts``); what they say is made here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from tmuxlocd.core.agents import IDLE, WAITING, WORKING, Agent
from tmuxlocd.core.location import Location

Kind = Literal["waiting", "turn-end", "test"]
CHANNELS = ("desktop", "terminal", "tmux", "command")
DEFAULT_DELAY_S = 2.0


class Alert:
    """One alert: what it is about (the agent as it was when it fired), where its pane is
    (``place``: ``session:window.pane``, empty when unknown), and how long the agent had
    waited or worked (``seconds``)."""

    __slots__ = ("agent", "id", "kind", "place", "seconds", "window")

    def __init__(
        self,
        id: int,
        kind: Kind,
        agent: Agent | None,
        seconds: float,
        place: str = "",
        window: str = "",
    ) -> None:
        self.id = id
        self.kind = kind
        self.agent = agent
        self.seconds = seconds
        self.place = place
        self.window = window

    def __repr__(self) -> str:
        return f"Alert({self.id}, {self.kind!r}, {self.agent!r}, {self.seconds!r})"


class Fire:
    __slots__ = ("alert",)

    def __init__(self, alert: Alert) -> None:
        self.alert = alert

    def __repr__(self) -> str:
        return f"Fire({self.alert!r})"


class Clear:
    __slots__ = ("alert",)

    def __init__(self, alert: Alert) -> None:
        self.alert = alert

    def __repr__(self) -> str:
        return f"Clear({self.alert!r})"


Action = Fire | Clear


class Alerter:
    """Per agent (by its key): the wait not yet alerted and since when, the alert standing,
    and when its turn started."""

    def __init__(self, delay: float = DEFAULT_DELAY_S, turn_end: float = 0.0) -> None:
        self.delay = delay
        self.turn_end = turn_end  # 0: no alert when a turn ends
        self.pending: dict[tuple[str, str], tuple[float, Agent]] = {}
        self.standing: dict[tuple[str, str], Alert] = {}
        self.turns: dict[tuple[str, str], float] = {}
        self._ids = 0

    def _new(self, kind: Kind, agent: Agent, seconds: float) -> Alert:
        self._ids += 1
        return Alert(self._ids, kind, agent, seconds)

    def test_alert(self) -> Alert:
        """The alert ``tmuxlocd alert --test`` sends: of no agent."""
        self._ids += 1
        return Alert(self._ids, "test", None, 0.0)

    def change(self, before: Agent | None, after: Agent | None, now: float) -> list[Action]:
        """One agent's change at ``now`` (None before: new; None after: gone)."""
        agent = after or before
        if agent is None:
            return []
        key = agent.key
        was = before.state if before is not None else None
        state = after.state if after is not None else None
        out: list[Action] = []
        standing = self.standing.get(key)
        if standing is not None and was != state:
            # Whatever it was about is over: the wait ended, or the agent works again.
            del self.standing[key]
            out.append(Clear(standing))
        elif standing is not None and after is not None:
            standing.agent = after  # moved panes, or its reason was told again
        if after is not None and state == WAITING:
            if was != WAITING:
                self.pending[key] = (now, after)
            elif key in self.pending:
                self.pending[key] = (self.pending[key][0], after)
        else:
            self.pending.pop(key, None)
        if state in (WORKING, WAITING) and was in (None, IDLE):
            # A turn is from leaving idle to idle again, its waits for the user included.
            self.turns[key] = now
        elif state in (None, IDLE):
            started = self.turns.pop(key, None)
            # Only a turn that ended on its own: a denied permission (waiting -> idle) was
            # answered by the user, who is there.
            if (
                after is not None
                and was == WORKING
                and started is not None
                and self.turn_end > 0
                and now - started >= self.turn_end
            ):
                alert = self._new("turn-end", after, now - started)
                self.standing[key] = alert
                out.append(Fire(alert))
        return out

    def due(self, now: float) -> list[Action]:
        """The waits that have lasted ``delay`` by ``now``: one alert each."""
        out: list[Action] = []
        for key, (since, agent) in list(self.pending.items()):
            if now - since >= self.delay:
                del self.pending[key]
                alert = self._new("waiting", agent, now - since)
                self.standing[key] = alert
                out.append(Fire(alert))
        return out

    def next_due(self) -> float | None:
        """When ``due`` next has something to say (on the caller's clock), or None."""
        if not self.pending:
            return None
        return min(since for since, _ in self.pending.values()) + self.delay

    def forget(self) -> list[Action]:
        """Everything standing taken back (the daemon stops)."""
        out: list[Action] = [Clear(alert) for alert in self.standing.values()]
        self.standing.clear()
        self.pending.clear()
        return out


# ----------------------------------------------------------------------------------------------
# What an alert says.


def place(location: Location | None) -> str:
    """``main:1.0``: the pane's session name, window index and pane index."""
    if location is None:
        return ""
    return f"{location.session.name}:{location.window.index}.{location.pane.index}"


def title(alert: Alert) -> str:
    agent = alert.agent
    if agent is None:
        return "tmuxlocd test alert"
    if alert.kind == "turn-end":
        return f"{agent.harness} is done"
    return f"{agent.harness} is waiting"


def body(alert: Alert) -> str:
    """``permission: Bash, in main:1.0 (%4)``."""
    agent = alert.agent
    if agent is None:
        return "an alert from tmuxlocd alert --test"
    if alert.kind == "turn-end":
        what = f"worked {round(alert.seconds)} s"
    else:
        what = agent.reason or "waiting"
    where = f"{alert.place} ({agent.pane})" if alert.place else agent.pane
    return f"{what}, in {where}"


def environment(alert: Alert, cleared: bool = False) -> dict[str, str]:
    """What a user's command is given (as environment variables, never in its command
    line): the alert and the agent's fields."""
    agent = alert.agent
    env = {
        "TMUXLOCD_ALERT": "clear" if cleared else alert.kind,
        "TMUXLOCD_ALERT_KIND": alert.kind,
        "TMUXLOCD_ALERT_ID": str(alert.id),
        "TMUXLOCD_ALERT_TITLE": title(alert),
        "TMUXLOCD_ALERT_BODY": body(alert),
        "TMUXLOCD_ALERT_SECONDS": f"{alert.seconds:.3f}",
    }
    if agent is not None:
        env.update(
            TMUXLOCD_AGENT_HARNESS=agent.harness,
            TMUXLOCD_AGENT_SESSION_ID=agent.session_id,
            TMUXLOCD_AGENT_STATE=agent.state,
            TMUXLOCD_AGENT_REASON=agent.reason,
            TMUXLOCD_AGENT_PID=str(agent.proc.pid),
            TMUXLOCD_TMUX_SOCKET=agent.server,
            TMUXLOCD_PANE=agent.pane,
            TMUXLOCD_PLACE=alert.place,
        )
    return env


def _printable(text: str, drop: str = "") -> str:
    """One line without control characters (nor those in ``drop``): nothing in an alert's
    text can end the escape sequence it is carried in, or start another."""
    return "".join(c if c.isprintable() and c not in drop else " " for c in text)


def osc(alert: Alert, sequence: Literal["osc9", "osc777"]) -> bytes:
    """The terminal's notification: OSC 9 (iTerm2, WezTerm, kitty, Windows Terminal,
    ghostty) or OSC 777 (urxvt, foot, ghostty, Konsole), ended by BEL."""
    if sequence == "osc777":
        text = f"\x1b]777;notify;{_printable(title(alert), ';')};{_printable(body(alert))}\x07"
    else:
        text = f"\x1b]9;{_printable(title(alert))}: {_printable(body(alert))}\x07"
    return text.encode("utf-8", "replace")


def tmux_text(text: str) -> str:
    """Text for ``display-message`` and option values that formats show: ``#`` doubled, so
    that tmux prints it rather than expanding it."""
    return _printable(text).replace("#", "##")


def gvariant_string(text: str) -> str:
    """A string in GVariant text format (what ``gdbus call`` parses each argument as)."""
    escaped = _printable(text).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{escaped}'"


def attached_clients(rows: Iterable[str]) -> list[str]:
    """The ttys of the clients a person looks at, from ``list-clients -F
    '#{client_control_mode} #{client_tty}'`` rows: not control-mode clients (the daemon's own
    among them), which have no terminal."""
    out = []
    for row in rows:
        control, _, tty = row.partition(" ")
        if control == "0" and tty.startswith("/"):
            out.append(tty)
    return out


def latest_client(rows: Iterable[str]) -> str | None:
    """The tty of the client used last, from ``list-clients -F '#{client_control_mode}
    #{client_activity} #{client_tty}'`` rows: where a notification's action switches to."""
    best: tuple[int, str] | None = None
    for row in rows:
        control, _, rest = row.partition(" ")
        activity, _, tty = rest.partition(" ")
        if control != "0" or not tty.startswith("/") or not activity.isdigit():
            continue
        if best is None or int(activity) > best[0]:
            best = (int(activity), tty)
    return None if best is None else best[1]


def parse_notify_id(output: str) -> int | None:
    """The id ``gdbus call ... Notify`` prints: ``(uint32 7,)``."""
    words = output.replace("(", " ").replace(")", " ").replace(",", " ").split()
    for i, word in enumerate(words[:-1]):
        if word == "uint32" and words[i + 1].isdigit():
            return int(words[i + 1])
    return None


def parse_action(line: str) -> tuple[int, str] | None:
    """A ``gdbus monitor`` line of an invoked action: (notification id, action key), from
    ``/org/freedesktop/Notifications: org.freedesktop.Notifications.ActionInvoked
    (uint32 7, 'default')``."""
    _, found, rest = line.partition(".ActionInvoked (")
    if not found:
        return None
    words = rest.rstrip(")\n ").split(",", 1)
    if len(words) != 2:
        return None
    number = words[0].strip().removeprefix("uint32").strip()
    key = words[1].strip().strip("'\"")
    if not number.isdigit():
        return None
    return int(number), key


def window_option(standing: Iterable[Alert], server: str, window: str) -> str | None:
    """What ``@tmuxlocd_alert`` shows on ``window`` of ``server``: the newest standing alert
    there (``claude is waiting``), None when there is none."""
    here = [
        a
        for a in standing
        if a.window == window and a.agent is not None and a.agent.server == server
    ]
    if not here:
        return None
    return tmux_text(title(max(here, key=lambda a: a.id)))
