"""The alerts' decisions (core/alerts.py): one alert per wait that lasts the delay, cleared
when the wait ends, none for a shorter one; the turn-end alert; what each channel says."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tmuxlocd.core import alerts
from tmuxlocd.core.agents import IDLE, WAITING, WORKING, Agent, Proc
from tmuxlocd.core.alerts import Alerter, Clear, Fire

DELAY = 2.0


def agent(n: int, state: str, reason: str = "") -> Agent:
    return Agent(
        "claude", f"s{n}", "/tmp/tmux-1/default", f"%{n}", Proc(100 + n, 1), state, reason, 0.0
    )


def run(
    alerter: Alerter, steps: list[tuple[int, str | None, float]]
) -> list[tuple[float, str, int, str]]:
    """Feed ``steps`` (agent, new state or None for gone, seconds since the last step), with
    ``due`` called when ``next_due`` says (as the daemon's timer does): each action as
    (time, fire/clear, agent, kind)."""
    now = 0.0
    states: dict[int, Agent] = {}
    out: list[tuple[float, str, int, str]] = []

    def record(actions: list[Fire | Clear], at: float) -> None:
        for action in actions:
            a = action.alert.agent
            assert a is not None
            kind = "fire" if isinstance(action, Fire) else "clear"
            out.append((at, kind, int(a.pane[1:]), action.alert.kind))

    for n, state, dt in steps:
        target = now + dt
        while (due := alerter.next_due()) is not None and due <= target:
            record(alerter.due(due), due)
        now = target
        before = states.get(n)
        if state is None:
            if before is None:
                continue
            del states[n]
            after = None
        else:
            after = agent(n, state, "permission: Bash" if state == WAITING else "")
            if before is not None and before.state == state:
                continue  # the registry reports no change that is none
            states[n] = after
        record(alerter.change(before, after, now), now)
        record(alerter.due(now), now)
    return out


def waits(
    steps: list[tuple[int, str | None, float]],
) -> dict[int, list[tuple[float, float | None]]]:
    """Each agent's maximal stretches in ``waiting``: (start, end or None if still)."""
    now = 0.0
    states: dict[int, str] = {}
    out: dict[int, list[tuple[float, float | None]]] = {}
    for n, state, dt in steps:
        now += dt
        was = states.get(n)
        if state is None:
            states.pop(n, None)
        else:
            states[n] = state
        if state == WAITING and was != WAITING:
            out.setdefault(n, []).append((now, None))
        elif was == WAITING and state != WAITING:
            start, _ = out[n][-1]
            out[n][-1] = (start, now)
    return out


step = st.tuples(
    st.integers(0, 2),
    st.sampled_from([WORKING, WAITING, IDLE, None]),
    st.sampled_from([0.0, 0.125, 0.5, 1.0, 1.875, 2.0, 2.5, 5.0]),
)


@settings(max_examples=400)
@given(st.lists(step, max_size=40))
def test_one_alert_per_wait_that_lasts_the_delay_cleared_when_it_ends(
    steps: list[tuple[int, str | None, float]],
) -> None:
    alerter = Alerter(DELAY)
    actions = [a for a in run(alerter, steps) if a[3] == "waiting"]
    expected = []
    for n, stretches in waits(steps).items():
        for start, end in stretches:
            if end is None or end - start >= DELAY:
                if end is None:
                    continue  # still waiting: checked below
                expected.append((start + DELAY, "fire", n, "waiting"))
                expected.append((end, "clear", n, "waiting"))
    # Still waiting at the end: fired if the timer came by before the last step.
    total = sum(dt for _, _, dt in steps)
    for n, stretches in waits(steps).items():
        start, end = stretches[-1]
        if end is None and start + DELAY <= total:
            expected.append((start + DELAY, "fire", n, "waiting"))
    assert sorted(actions) == sorted(expected)


@settings(max_examples=300)
@given(st.lists(step, max_size=40), st.sampled_from([0.5, 3.0]))
def test_a_turn_end_alert_for_a_long_turn_only_cleared_when_it_works_again(
    steps: list[tuple[int, str | None, float]], threshold: float
) -> None:
    alerter = Alerter(DELAY, turn_end=threshold)
    actions = [a for a in run(alerter, steps) if a[3] == "turn-end"]
    # Every fire is followed by its clear before the next fire of that agent.
    standing: dict[int, bool] = {}
    for _, kind, n, _ in actions:
        if kind == "fire":
            assert not standing.get(n)
            standing[n] = True
        else:
            assert standing.get(n)
            standing[n] = False


def test_a_turn_end_alert_names_how_long_it_worked() -> None:
    alerter = Alerter(DELAY, turn_end=10.0)
    assert alerter.change(None, agent(1, IDLE), 0.0) == []
    assert alerter.change(agent(1, IDLE), agent(1, WORKING), 1.0) == []
    (fired,) = alerter.change(agent(1, WORKING), agent(1, IDLE), 12.0)
    assert isinstance(fired, Fire) and fired.alert.kind == "turn-end"
    assert fired.alert.seconds == 11.0
    assert alerts.title(fired.alert) == "claude is done"
    # A short one: nothing.
    (cleared,) = alerter.change(agent(1, IDLE), agent(1, WORKING), 13.0)
    assert isinstance(cleared, Clear) and cleared.alert is fired.alert
    assert alerter.change(agent(1, WORKING), agent(1, IDLE), 14.0) == []


def test_a_denied_permission_ends_the_turn_without_an_alert() -> None:
    alerter = Alerter(DELAY, turn_end=1.0)
    alerter.change(None, agent(1, WORKING), 0.0)
    alerter.change(agent(1, WORKING), agent(1, WAITING), 5.0)
    assert alerter.change(agent(1, WAITING), agent(1, IDLE), 6.0) == []


def test_a_reason_told_again_while_waiting_is_the_same_wait() -> None:
    alerter = Alerter(DELAY)
    alerter.change(None, agent(1, WAITING, "permission"), 0.0)
    alerter.change(agent(1, WAITING, "permission"), agent(1, WAITING, "permission: Bash"), 1.0)
    assert alerter.next_due() == DELAY
    (fired,) = alerter.due(DELAY)
    assert isinstance(fired, Fire) and fired.alert.agent is not None
    assert fired.alert.agent.reason == "permission: Bash"
    assert alerter.due(10.0) == []


def test_forget_takes_back_what_stands() -> None:
    alerter = Alerter(0.0)
    alerter.change(None, agent(1, WAITING), 0.0)
    (fired,) = alerter.due(0.0)
    (cleared,) = alerter.forget()
    assert cleared.alert is fired.alert and alerter.next_due() is None


def test_what_each_channel_says() -> None:
    alert = alerts.Alert(3, "waiting", agent(4, WAITING, "permission: Bash"), 2.5, "main:1.0")
    assert alerts.title(alert) == "claude is waiting"
    assert alerts.body(alert) == "permission: Bash, in main:1.0 (%4)"
    assert (
        alerts.osc(alert, "osc9")
        == b"\x1b]9;claude is waiting: permission: Bash, in main:1.0 (%4)\x07"
    )
    assert alerts.osc(alert, "osc777") == (
        b"\x1b]777;notify;claude is waiting;permission: Bash, in main:1.0 (%4)\x07"
    )
    env = alerts.environment(alert)
    assert env["TMUXLOCD_ALERT"] == "waiting" and env["TMUXLOCD_PANE"] == "%4"
    assert env["TMUXLOCD_AGENT_REASON"] == "permission: Bash"
    assert alerts.environment(alert, cleared=True)["TMUXLOCD_ALERT"] == "clear"


def test_text_cannot_escape_its_carrier() -> None:
    hostile = agent(1, WAITING, "a\x07b\x1b]0;x#{pane_id}'\\")
    alert = alerts.Alert(1, "waiting", hostile, 2.0)
    sequence = alerts.osc(alert, "osc9")
    assert sequence.count(b"\x07") == 1 and sequence.count(b"\x1b") == 1
    assert "#{" not in alerts.tmux_text(hostile.reason).replace("##", "")
    assert alerts.gvariant_string("it's \\") == "'it\\'s \\\\'"


def test_gdbus_output_and_monitor_lines() -> None:
    assert alerts.parse_notify_id("(uint32 17,)\n") == 17
    assert alerts.parse_notify_id("nonsense") is None
    line = (
        "/org/freedesktop/Notifications: "
        "org.freedesktop.Notifications.ActionInvoked (uint32 7, 'default')\n"
    )
    assert alerts.parse_action(line) == (7, "default")
    assert (
        alerts.parse_action(
            "/x: org.freedesktop.Notifications.NotificationClosed (uint32 7, uint32 2)"
        )
        is None
    )


def test_clients_a_person_looks_at() -> None:
    rows = ["1 /dev/pts/3", "0 /dev/pts/4", "0 ", "0 /dev/pts/9"]
    assert alerts.attached_clients(rows) == ["/dev/pts/4", "/dev/pts/9"]
    rows = ["1 900 /dev/pts/3", "0 100 /dev/pts/4", "0 200 /dev/pts/9"]
    assert alerts.latest_client(rows) == "/dev/pts/9"
    assert alerts.latest_client(["1 900 /dev/pts/3"]) is None


def test_the_window_option_shows_the_newest_alert_there() -> None:
    a = alerts.Alert(1, "waiting", agent(1, WAITING), 2.0, window="@1")
    b = alerts.Alert(2, "turn-end", agent(2, IDLE), 20.0, window="@1")
    server = "/tmp/tmux-1/default"
    assert alerts.window_option([a, b], server, "@1") == "claude is done"
    assert alerts.window_option([a], server, "@2") is None
    assert alerts.window_option([a], "/other", "@1") is None
