"""The results as tables: goals of SPEC §9 (met or not), then every measured series."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.rig import FLOOR_WRITES, Results
from bench.stats import fmt_bytes, fmt_ms, fmt_ratio, median, p99

MB = 1_000_000


@dataclass
class Row:
    id: str
    what: str
    panes: str
    median: str
    p99: str
    versus: str
    ratio: str
    goal: str
    met: bool | None


def _met(flag: bool | None) -> str:
    return "—" if flag is None else ("yes" if flag else "**no**")


def _fact(res: Results, key: str) -> Any:
    return res.facts.get(key)


def _at_least(goal: float) -> Callable[[float], bool]:
    return lambda r: r >= goal


def hook_gaps(res: Results, panes: int) -> list[float]:
    """Per split, the hook's rows after the control client's ``%layout-change``
    (bench.runner.hook_floor)."""
    lc = res.get("B3 floor hook layout-change", panes)
    rows = res.get("B3 floor hook rows", panes)
    return [b - a for a, b in zip(lc, rows, strict=True)] if lc and rows else []


def build_rows(res: Results) -> list[Row]:
    rows: list[Row] = []
    sizes: list[int] = res.facts.get("sizes", [])
    add = rows.append

    def series(name: str, panes: int) -> list[float]:
        return res.get(name, panes)

    def beside(what: str, panes: int, values: list[float], alt: str, delta: float) -> None:
        """A B3 row of no goal of its own, next to a goal row: ``delta`` over ``alt``."""
        add(
            Row(
                "B3",
                what,
                str(panes),
                fmt_ms(median(values)),
                fmt_ms(p99(values)),
                alt,
                f"{delta * 1000:+.2f} ms",
                "",
                None,
            )
        )

    def sched_row(label: str, where: str, nsubs: int, panes: int) -> None:
        """What a change cost the daemon in time on a CPU and in time runnable but waiting
        for one (``bench.runner.sched_per_change``), and the floors' in the same run: where
        the daemon's latency over its floor comes from on this machine."""

        def both(name: str) -> str | None:
            run, wait = series(f"{name} on-cpu", panes), series(f"{name} runnable", panes)
            return f"{fmt_ms(median(run))} / {fmt_ms(median(wait))}" if run and wait else None

        mine = both(label)
        if mine is None:
            return
        floors = [
            f"{what} {value}"
            for what, value in (
                ("the floor", both(f"B3 floor {where} {nsubs}")),
                ("on 3.3's path", both(f"B3 floor rows {where} {nsubs}")),
            )
            if value is not None
        ]
        add(
            Row(
                "B3",
                "… per change (a split or its kill), the daemon's time on a CPU / runnable "
                "but waiting for one",
                str(panes),
                mine,
                "",
                "; ".join(floors),
                "",
                "",
                None,
            )
        )

    def latency_row(
        ident: str,
        what: str,
        panes: int,
        mine: list[float],
        other: list[float],
        other_name: str,
        goal: str,
        test: Callable[[float], bool] | None,
        faster: bool,
    ) -> None:
        if not mine or not other:
            return
        m, o = median(mine), median(other)
        if faster:
            ratio = o / m
            ratio_s = f"{fmt_ratio(ratio)} faster"
        else:
            ratio = m / o
            ratio_s = fmt_ratio(ratio)
        add(
            Row(
                ident,
                what,
                str(panes),
                fmt_ms(m),
                fmt_ms(p99(mine)),
                f"{other_name} {fmt_ms(o)}",
                ratio_s,
                goal,
                None if test is None else test(ratio),
            )
        )

    for p in sizes:
        self_ka = series("B1 keepalive self", p)
        latency_row(
            "B1",
            "GET /v1/self, keep-alive",
            p,
            self_ka,
            series("B1 keepalive floor", p),
            "floor app",
            "≤ 1.3× floor",
            lambda r: r <= 1.3,
            faster=False,
        )
        disp_goal = {10: 5.0, 1000: 30.0}.get(p)
        disp_test = None if disp_goal is None else _at_least(disp_goal)
        latency_row(
            "B1",
            "GET /v1/self, keep-alive",
            p,
            self_ka,
            series("B1 display", p),
            "display-message -p",
            f"≥ {disp_goal:.0f}× faster" if disp_goal else "",
            disp_test,
            faster=True,
        )
        latency_row(
            "B1",
            "GET /v1/self, keep-alive",
            p,
            self_ka,
            series("B1 libtmux", p),
            "libtmux Pane.from_pane_id",
            "",
            None,
            faster=True,
        )
        latency_row(
            "B1",
            "GET /v1/self, keep-alive",
            p,
            self_ka,
            series("B1 three", p),
            "ps + 2× display-message (tty-checked)",
            "",
            None,
            faster=True,
        )
        latency_row(
            "B1",
            "GET /v1/self, back to back",
            p,
            series("B1 back-to-back self", p),
            series("B1 back-to-back floor", p),
            "floor app",
            "",
            None,
            faster=False,
        )
        latency_row(
            "B1",
            "GET /v1/panes/N (no identity), keep-alive",
            p,
            series("B1 keepalive pane", p),
            series("B1 keepalive pane floor", p),
            "floor app",
            "",
            None,
            faster=False,
        )
        latency_row(
            "B1",
            "GET /v1/self, one-shot curl",
            p,
            series("B1 curl self", p),
            series("B1 curl floor", p),
            "curl to floor app",
            "",
            None,
            faster=False,
        )
        latency_row(
            "B1",
            "GET /v1/self, one-shot curl",
            p,
            series("B1 curl self", p),
            series("B1 display", p),
            "display-message -p",
            "",
            None,
            faster=True,
        )

        # SPEC §10 raised B2 from 0.7x to 0.8x of the floor at every size.
        for conns, least in ((8, 0.8), (1, None)):
            mine, floor = series(f"B2 {conns} self", p), series(f"B2 {conns} floor", p)
            if mine and floor:
                # Each round measures both, one right after the other: the median of those
                # pairs' ratios, so that a change in the machine's other load between rounds
                # falls on both sides of a pair (the ratio of two medians mixes rounds).
                paired = len(mine) == len(floor)
                r = (
                    median([m / f for m, f in zip(mine, floor, strict=True)])
                    if paired
                    else median(mine) / median(floor)
                )
                add(
                    Row(
                        "B2",
                        f"/v1/self requests/s, {conns} keep-alive client(s)",
                        str(p),
                        f"{median(mine):,.0f}/s",
                        "",
                        f"floor app {median(floor):,.0f}/s",
                        fmt_ratio(r),
                        f"≥ {least}× floor" if least else "",
                        None if least is None else r >= least,
                    )
                )
            cpu, fcpu = series(f"B2 cpu {conns} self", p), series(f"B2 cpu {conns} floor", p)
            if cpu and fcpu:
                add(
                    Row(
                        "B2",
                        f"server CPU per /v1/self request, {conns} client(s)",
                        str(p),
                        fmt_ms(median(cpu)),
                        "",
                        f"floor app {fmt_ms(median(fcpu))}",
                        fmt_ratio(median(cpu) / median(fcpu)),
                        "",
                        None,
                    )
                )

        for where, alt_key, alt_name in (
            ("attached", "cm", "control client %layout-change"),
            ("other", "hook", "run-shell -b hook"),
        ):
            for nsubs_key in sorted(
                {int(k.split()[2]) for k in res.series if k.startswith(f"B3 {where} ")}
            ):
                label = f"B3 {where} {nsubs_key}"
                metric = "last" if nsubs_key > 1 else "first"
                mine, alt = series(f"{label} {metric}", p), series(f"{label} {alt_key}", p)
                if not mine or not alt:
                    continue
                delta = median(mine) - median(alt)
                goal = "p50 ≤ alt + 3 ms"
                ok = delta <= 0.003
                if p == 100:
                    goal += ", p99 ≤ 40 ms"
                    ok = ok and p99(mine) <= 0.040
                who = "every one of" if nsubs_key > 1 else "the"
                sess = "the observer's session" if where == "attached" else "another session"
                # When the split's own client got its answer: a query sent on the change
                # (tmux 3.3 has no other way to learn a new pane's tty and pid) is run only
                # after that command ends, so this is its floor.
                own = series(f"{label} cli", p)
                ends = f"; the split-window client's return {fmt_ms(median(own))}" if own else ""
                add(
                    Row(
                        "B3",
                        f"split-window -d in {sess} → {who} {nsubs_key} subscriber(s)",
                        str(p),
                        fmt_ms(median(mine)),
                        fmt_ms(p99(mine)),
                        f"{alt_name} {fmt_ms(median(alt))}{ends}",
                        f"{delta * 1000:+.2f} ms",
                        goal,
                        ok,
                    )
                )
                gaps = hook_gaps(res, p)
                if where == "attached" and nsubs_key == 1 and gaps:
                    # bench.runner.hook_floor: before the daemon starts, tmux alone with the
                    # daemon's own hooks (and, on 3.3, its own waiter client).
                    hook_lc = series("B3 floor hook layout-change", p)
                    beside(
                        "… tmux alone: the daemon's hooks hand the split's rows (3.3: through "
                        "its waiter client; 3.4+: a %message), no daemon running",
                        p,
                        series("B3 floor hook rows", p),
                        f"{alt_name} {fmt_ms(median(hook_lc))} (same samples)",
                        median(gaps),
                    )
                floor, floor_alt = (
                    series(f"B3 floor {where} {nsubs_key} last", p),
                    series(f"B3 floor {where} {nsubs_key} cm", p),
                )
                if floor and floor_alt:
                    # bench.fanout.split_floor: the daemon stopped, a process that only writes
                    # the split's bytes to as many streams on its control client's word.
                    beside(
                        f"… the floor: a process that only writes the same bytes to "
                        f"{nsubs_key} streams on its control client's %layout-change",
                        p,
                        floor,
                        f"{alt_name} {fmt_ms(median(floor_alt))} (same samples)",
                        median(floor) - median(floor_alt),
                    )
                rows_floor, rows_alt = (
                    series(f"B3 floor rows {where} {nsubs_key} last", p),
                    series(f"B3 floor rows {where} {nsubs_key} cm", p),
                )
                if rows_floor and rows_alt:
                    # bench.fanout.waiter_floor (tmux 3.3): the same, on the rows the
                    # daemon's hooks hand its waiter client, which is when the daemon can
                    # know the new pane there.
                    beside(
                        "… the floor on tmux 3.3's path: the same writes on the rows of the "
                        "daemon's hooks and waiter client, its own control client attached",
                        p,
                        rows_floor,
                        f"{alt_name} {fmt_ms(median(rows_alt))} (same samples)",
                        median(rows_floor) - median(rows_alt),
                    )
                if nsubs_key > 1:
                    sched_row(label, where, nsubs_key, p)
                    first = series(f"{label} first", p)
                    if first:
                        beside(
                            f"… the first of {nsubs_key} subscribers",
                            p,
                            first,
                            f"{alt_name} {fmt_ms(median(alt))}",
                            median(first) - median(alt),
                        )

    heavy = max(sizes) if sizes else 0
    rss = _fact(res, f"B4 RSS@{heavy}")
    nsubs = _fact(res, f"B4 subscribers@{heavy}")
    if rss is not None:
        add(
            Row(
                "B4",
                f"daemon RSS with {nsubs} subscribers",
                str(heavy),
                fmt_bytes(rss),
                "",
                "",
                "",
                "≤ 100 MB",
                rss <= 100 * MB,
            )
        )
    b4 = res.get("B4 keepalive self", heavy)
    small = min(sizes) if sizes else 0
    base = res.get("B1 keepalive self", small)
    floor = res.get("B4 keepalive floor", heavy)
    base_floor = res.get("B1 keepalive floor", small)
    if b4 and base:
        compared = f"same at {small} panes {fmt_ms(median(base))}"
        r = median(b4) / median(base)
        if floor and base_floor:
            # The two are minutes apart, and this machine's pace moves more than the goal's
            # margin in minutes: each is taken over the floor app measured beside it (round
            # robin, same probe), so the ratio is the daemon's own change.
            r /= median(floor) / median(base_floor)
            compared += (
                f", each over the floor app beside it ({fmt_ms(median(floor))} now,"
                f" {fmt_ms(median(base_floor))} then; raw ratio"
                f" {fmt_ratio(median(b4) / median(base))})"
            )
        add(
            Row(
                "B4",
                f"GET /v1/self keep-alive with {nsubs} subscribers",
                str(heavy),
                fmt_ms(median(b4)),
                fmt_ms(p99(b4)),
                compared,
                fmt_ratio(r),
                "≤ 1.2×",
                r <= 1.2,
            )
        )
        if floor:
            add(
                Row(
                    "B4",
                    f"GET /v1/self keep-alive with {nsubs} subscribers",
                    str(heavy),
                    fmt_ms(median(b4)),
                    fmt_ms(p99(b4)),
                    f"floor app {fmt_ms(median(floor))}",
                    fmt_ratio(median(b4) / median(floor)),
                    "",
                    None,
                )
            )

    idle = _fact(res, f"B5 idle with daemon@{heavy}")
    base_idle = _fact(res, f"B5 server idle without daemon@{heavy}")
    secs = _fact(res, "B5 idle seconds")
    if idle is not None and base_idle is not None and secs:
        scale = 60.0 / secs
        cpu = (idle["daemon"] + idle["clients"]) * scale
        add(
            Row(
                "B5",
                "daemon CPU (incl. its tmux clients), 60 s idle",
                str(heavy),
                f"{cpu:.3f} s",
                "",
                f"python {idle['daemon'] * scale:.3f} s + tmux clients "
                f"{idle['clients'] * scale:.3f} s",
                "",
                "≤ 0.3 s",
                cpu <= 0.3,
            )
        )
        extra = (idle["server"] - base_idle) * scale
        add(
            Row(
                "B5",
                "extra tmux-server CPU caused by the daemon, 60 s idle",
                str(heavy),
                f"{extra:.3f} s",
                "",
                f"server {idle['server'] * scale:.3f} s with, {base_idle * scale:.3f} s without",
                "",
                "≤ 0.6 s",
                extra <= 0.6,
            )
        )

    for p in sizes:
        text = _fact(res, f"B6 self text@{p}")
        if text is not None:
            add(
                Row(
                    "B6",
                    "/v1/self?format=text (window of 4 panes)",
                    str(p),
                    f"{text} B",
                    "",
                    "",
                    "",
                    "≤ 300 B",
                    text <= 300,
                )
            )
        summ = _fact(res, f"B6 summary@{p}")
        if summ is not None:
            dump = _fact(res, f"B6 dump location fields@{p}")
            lib = _fact(res, f"B6 dump libtmux fields@{p}")
            add(
                Row(
                    "B6",
                    "/v1/panes?window=self&detail=summary (4 panes)",
                    str(p),
                    f"{summ} B",
                    "",
                    f"list-panes -a as JSON: {fmt_bytes(dump)} (location fields), "
                    f"{fmt_bytes(lib)} (libtmux's fields)",
                    f"{dump / summ:,.0f}× smaller",
                    "≤ 1.5 KB",
                    summ <= 1536,
                )
            )

    k = _fact(res, f"B7 split_k@{heavy}")
    extra_rate = 0.0
    if idle is not None and base_idle is not None and secs:
        extra_rate = max(0.0, (idle["server"] - base_idle) / secs)
    listing = _fact(res, f"B7 list-panes location fields@{heavy}")
    own_listing = _fact(res, f"B7 list-panes daemon fields@{heavy}")
    for label in ("attached", "other"):
        with_ = _fact(res, f"B7 with {label}@{heavy}")
        without = _fact(res, f"B7 without {label}@{heavy}")
        if with_ is None or without is None or not k or listing is None:
            continue
        # Per change (a split or its kill): the difference, less the daemon's idle cost
        # (safety-net digest) over the with-daemon run's wall time.
        per = (with_[0] - without[0] - extra_rate * with_[1]) / (2 * k)
        # A listing too cheap to register one clock tick cannot be a denominator.
        r = per / listing if listing > 0 else math.nan
        sess = "the observer's session" if label == "attached" else "another session"
        # SPEC §10 raised the other sessions' goal to 0.05x; the observer's stays 0.1x.
        most = 0.1 if label == "attached" else 0.05
        add(
            Row(
                "B7",
                f"tmux-server CPU the daemon spends per split ({sess})",
                str(heavy),
                fmt_ms(per),
                "",
                f"one list-panes -a (location fields) {fmt_ms(listing)}; "
                f"with the daemon's own fields {fmt_ms(own_listing)}",
                fmt_ratio(r),
                f"≤ {most}×",
                None if math.isnan(r) else r <= most,
            )
        )
    costs = _fact(res, f"tmux command costs@{heavy}")
    if costs:
        # bench.tmux_costs: what each turn of tmux's loop costs it, with no daemon running.
        for name in ("display-message -p", "set-option -s @x"):
            alone, chained = costs.get(f"control {name}"), costs.get(f"chained {name}")
            if alone is None or chained is None:
                continue
            add(
                Row(
                    "B7",
                    f"tmux alone: server CPU of one `{name}` sent over a control client (a turn "
                    "of tmux's loop each)",
                    str(heavy),
                    fmt_ms(alone),
                    "",
                    f"the same chained in one client's message {fmt_ms(chained)}",
                    fmt_ratio(alone / chained) if chained > 0 else "",
                    "",
                    None,
                )
            )
    activity_rows(res, heavy, add)
    rows += fanout_rows(res)
    return rows


def activity_rows(res: Results, heavy: int, add: Callable[[Row], None]) -> None:
    """A1-A3: pane activity (spec "Pane activity"; the issue's goals)."""
    goals = (
        ("A1", "activity busy", "send-keys → the busy wait's answer", "≤ 1 s", 1.0),
        ("A2", "activity event", "a command's end (pidfd) → pane.activity idle", "≤ 50 ms", 0.05),
        (
            "A3",
            "activity wait",
            "a command's end (pidfd) → the idle wait's answer",
            "≤ 50 ms",
            0.05,
        ),
    )
    for ident, name, what, goal, limit in goals:
        values = res.get(name, heavy)
        if values:
            add(
                Row(
                    ident,
                    what,
                    str(heavy),
                    fmt_ms(median(values)),
                    fmt_ms(p99(values)),
                    f"max {fmt_ms(max(values))}, n={len(values)}",
                    "",
                    goal,
                    max(values) <= limit,
                )
            )
    cpu = _fact(res, f"A cpu@{heavy}")
    if not cpu:
        return
    base = cpu.get("0")
    for label in ("0", "10", "all"):
        c = cpu.get(label)
        if c is None or base is None:
            continue
        watched = int(cpu["panes"]["watched all"]) if label == "all" else int(label)
        add(
            Row(
                "A4",
                f"CPU per second with {watched} watched panes"
                + (" (all)" if label == "all" else ""),
                str(heavy),
                f"daemon {fmt_ms(c['daemon'] + c['clients'])}/s",
                "",
                f"tmux server {fmt_ms(c['server'])}/s (none watched: daemon "
                f"{fmt_ms(base['daemon'] + base['clients'])}/s, server {fmt_ms(base['server'])}/s)",
                "",
                "none watched: B5" if label == "0" else "",
                None,
            )
        )


def goal_table(rows: list[Row]) -> str:
    head = "| # | measurement | panes | median | p99 | compared with | ratio | goal | met |"
    out = [head, "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(
            f"| {r.id} | {r.what} | {r.panes} | {r.median} | {r.p99} | {r.versus} | "
            f"{r.ratio} | {r.goal} | {_met(r.met)} |"
        )
    return "\n".join(out)


def series_table(res: Results) -> str:
    out = ["| series | panes | n | median | p99 | min |", "|---|---|---|---|---|---|"]
    for name in sorted(res.series):
        for panes, values in sorted(res.series[name].items()):
            if name.startswith("B2") and not name.startswith("B2 cpu"):
                out.append(
                    f"| {name} (requests/s) | {panes} | {len(values)} | {median(values):,.0f} | "
                    f" | {min(values):,.0f} |"
                )
            else:
                out.append(
                    f"| {name} | {panes} | {len(values)} | {fmt_ms(median(values))} | "
                    f"{fmt_ms(p99(values))} | {fmt_ms(min(values))} |"
                )
    return "\n".join(out)


def facts_list(res: Results) -> str:
    out = []
    for key in sorted(res.facts):
        value = res.facts[key]
        if isinstance(value, float):
            value = f"{value:.4f}" if not math.isnan(value) else "n/a"
        elif isinstance(value, tuple):
            value = ", ".join(f"{v:.4f}" if isinstance(v, float) else str(v) for v in value)
        elif isinstance(value, dict):
            value = ", ".join(
                f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in value.items()
            )
        elif isinstance(value, str) and "\n" in value:
            value = "`" + value.replace("\n", "⏎") + "`"
        out.append(f"- {key}: {value}")
    return "\n".join(out)


def summary(rows: list[Row]) -> str:
    judged = [r for r in rows if r.met is not None]
    missed = [r for r in judged if not r.met]
    line = f"{len(judged) - len(missed)} of {len(judged)} goals met."
    if missed:
        grouped: dict[str, list[str]] = {}
        for r in missed:
            grouped.setdefault(f"{r.id} {r.what}", []).append(r.panes)
        line += (
            " Missed: "
            + "; ".join(f"{what} ({', '.join(panes)} panes)" for what, panes in grouped.items())
            + "."
        )
    return line


METHOD = """\
How it was measured (one run, one machine; every ratio compares numbers of the same run):

- Each size is a private tmux server (`-S` socket in a temp dir, no config) with panes
  running `sleep`, in several sessions and windows (400x200, tiled); one window of 4 panes
  holds the measuring client (`bench.client_probe`), which runs inside a pane so that
  `/v1/self` identifies it by its controlling tty.
- The daemon is `python -m tmuxlocd serve -S <socket> --listen unix:<dir>/d.sock`; the
  floor is `bench.floor_app`, a minimal aiohttp app returning a fixed JSON body of the same
  size as the `/v1/self` answer, on the same kind of socket, also with no access log.
- B1: the same keep-alive client (`http.client` over AF_UNIX) for daemon and floor, requests
  round robin between them, 1 ms apart ("back to back": no pause); one-shot `curl
  --unix-socket`; `display-message -p -t %N` with the Location's 17 fields as a subprocess;
  libtmux `Pane.from_pane_id` (one Server object reused); the tty-checked read of per-turn
  context plugins (`ps -o tty=`, `display-message` of `pane_tty`, then of the fields).
- B2: closed-loop keep-alive clients on asyncio streams (each sends its next request when the
  previous answer is complete); rounds alternate which server goes first, and the ratio is
  the median of each round's pair (since 2026-12-03; before, the ratio of the two medians).
- B3: from spawning `tmux split-window -d` (subprocess) until a subscriber of
  `/v1/events?format=ndjson` has the `pane.added` line (timestamped in the socket callback,
  before parsing). Next to it in the same samples: a bare control client
  (`-C attach -f no-output,ignore-size,read-only`) on the observer's session, its
  `%layout-change`; and a hook `window-layout-changed[9]` → `run-shell -b 'echo x > FIFO'`.
  The new pane is killed after every sample, and the next sample starts after 60 ms of quiet.
  One subscriber is read by the bench's own process, with the control client; 100 are held
  by `bench.fanout_probe` (its own process, raw sockets under one epoll, the same monotonic
  clock), which takes for every stream the time of the wait that reported its bytes, and
  which for those rows reads a second bare control client of its own under the same epoll:
  that is the alternative they are compared with, so that neither side's time holds the
  wake-up of a process the other does not need (on 2 busy cores, a few milliseconds at
  1,000 panes).  Read as 100 asyncio protocols in the bench's process (as before
  2026-12-02), the last stream's time also held that process's own reading of the other 99
  (about 26 KiB each per change at 1,000 panes), some 8 ms in a traced run.  Two floors
  (since 2026-12-02), each against a bare control client's `%layout-change` in the same
  samples: "tmux alone", before the daemon starts, installs the daemon's own hooks and, on
  3.3, starts its own waiter client (`ServerObserver.waiter_argv`), and takes the time the
  split's rows come (3.3: the waiter's round; 3.4+: the hook's `%message`), which is as soon
  as the daemon can know the new pane; "the floor" (`bench.fanout.split_floor`) writes the
  bytes of a split to 100 streams the moment its own control client reads the
  `%layout-change`, with the daemon stopped.  On tmux 3.3 a third (since 2026-12-03):
  "the floor on tmux 3.3's path" (`bench.fanout.waiter_floor`) makes the same writes when
  the daemon's own waiter client prints the split's rows, with the daemon's hooks installed
  and its own control client attached to the observer's session, as the daemon's is.
  With 100 subscribers, each side's time on a CPU and its time runnable but waiting for one
  (every thread's `/proc/<pid>/task/<tid>/schedstat`, nanoseconds) over the whole series, per
  change (each split and each kill): the daemon's and the floors' (since 2026-12-03), so that
  what a change's delay was made of (the process's own work, or its turn on a CPU while tmux
  and the readers had theirs) is in the same run.
- B5/B7: CPU from `/proc/<pid>/stat` (utime+stime). B7 splits and kills over a control
  connection (no client start-up), 40 ms apart, with the daemon waiting for its event of each
  change, and without the daemon; the difference, less the daemon's idle cost over the same
  wall time, divided by the number of changes (each split and each kill).
- A1-A4 (pane activity): a shell pane (`/bin/sh -i`, the pane's own process) runs `sleep 1`;
  the bench holds a pidfd on the sleep, so "the end" is the kernel's word. A1 from send-keys
  (a subprocess) to the answer of a pending `until=busy` wait; A2 to the `pane.activity` idle
  event of a stream on that pane; A3 to the answer of a pending `until=idle` wait. A4: CPU
  (utime+stime) per second over the interval, with none watched, 10 watched (10 pending
  `until=change` waits) and every pane watched (one `types=pane.activity` stream).
"""


def fanout_method() -> str:
    return FANOUT_METHOD


def render(res: Results) -> str:
    """A run's results in Markdown: every figure (a results file), or the latency section of
    one tmux version (``--section latency``, a section of one)."""
    rows = build_rows(res)
    f = res.facts
    latency = f.get("section") == "latency"
    parts = [
        f"## B3 and B7 on {f.get('tmux')}" if latency else "# tmuxlocd benchmark results",
        "",
        f"Date {f.get('date')}; {f.get('tmux')}; Python {f.get('python')}; "
        f"{f.get('cores')} cores; commit {f.get('commit', '?')}; sizes {f.get('sizes')} panes"
        + ("; **quick run** (few iterations, not for the record)" if f.get("quick") else "")
        + (
            ". Regenerate with `python -m bench --section latency`."
            if latency
            else ". Regenerate with `python -m bench`."
        ),
        "",
        "Load average (1 min) of the machine before/after each size: "
        + ", ".join(
            f"{p} panes " + ", ".join(f"{a:.1f}/{b:.1f}" for a, b in loads)
            for p in f.get("sizes", [])
            if (loads := f.get(f"load average (1 min) before, after@{p}"))
        )
        + " (other work on this 2-core machine shifts absolute numbers; ratios are taken"
        " between measurements interleaved in the same run).",
        "",
        summary(rows),
        "",
        goal_table(rows),
        "",
    ]
    if res.misses:
        parts += ["Timed-out samples:", "", *[f"- {m}" for m in res.misses], ""]
    if latency:
        return "\n".join(parts + latency_notes(res))
    parts += [
        METHOD,
        fanout_method(),
        "## All series",
        "",
        series_table(res),
        "",
        "## Facts",
        "",
        facts_list(res),
        "",
    ]
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------
# B8, B4 at 1,000 subscribers, B9 (bench.fanout's measurements).


def fanout_rows(res: Results) -> list[Row]:
    """The goal rows of B8, B4 at 1,000 subscribers and B9."""
    out: list[Row] = []
    sizes: list[int] = res.facts.get("sizes", [])
    for p in sizes:
        counts = sorted(
            int(name.split()[1])
            for name in res.series
            if name.endswith(" spread")
            and name.startswith("B8 ")
            and not name.startswith(("B8 floor ", "B8 split floor "))
            and p in res.series[name]
        )
        base = res.facts.get(f"B8 cpu per event@{p}/{counts[0]}") if counts else None
        for n in counts:
            spread = res.get(f"B8 {n} spread", p)
            first = res.get(f"B8 {n} first", p)
            if not spread or n < 2:
                continue
            goal_ms = 1.0 if n <= 100 else 10.0
            floors = {how: res.get(f"B8 floor {how} {n} spread", p) for how in FLOOR_WRITES}
            # The fair floor: written on the split itself, while tmux still works on it.
            on_split = res.get(f"B8 split floor {n} spread", p)
            floor = on_split or floors["transport"]
            out.append(
                Row(
                    "B8",
                    f"an event at the last of {n} subscribers, after the first",
                    str(p),
                    fmt_ms(median(spread)),
                    fmt_ms(p99(spread)),
                    "; ".join(
                        [f"first after the split's spawn {fmt_ms(median(first))}"]
                        + (
                            [
                                "floor on the split (written on its %layout-change, tmux "
                                + f"still busy) {fmt_ms(median(on_split))}"
                            ]
                            if on_split
                            else []
                        )
                        + [
                            f"floor ({how}) {fmt_ms(median(values))}, its writes "
                            f"{fmt_ms(median(res.get(f'B8 floor {how} {n} loop', p) or [0.0]))}"
                            for how, values in floors.items()
                            if values
                        ]
                    ),
                    # (A few streams may all be read in one wait: a spread of 0.)
                    f"{median(spread) / median(floor):.2f}×" if floor and median(floor) else "",
                    f"≤ {goal_ms:g} ms" if n in (100, 1000) else "",
                    median(spread) * 1000 <= goal_ms if n in (100, 1000) else None,
                )
            )
            cpu = res.facts.get(f"B8 cpu per event@{p}/{n}")
            if cpu is not None and base is not None:
                per = (cpu - base) / (n - counts[0])
                out.append(
                    Row(
                        "B8",
                        f"daemon CPU per event and subscriber ({n} subscribers)",
                        str(p),
                        f"{per * 1e6:.1f} µs",
                        "",
                        f"per event {fmt_ms(cpu)} with {n}, {fmt_ms(base)} with {counts[0]}",
                        "",
                        "",
                        None,
                    )
                )
    for p in sizes:
        held_rss = res.facts.get(f"B4 RSS 1000@{p}")
        if held_rss is not None and p == max(sizes):
            held, rss = held_rss
            before = res.facts.get(f"B4 RSS before the streams@{p}")
            out.append(
                Row(
                    "B4",
                    f"daemon RSS with {held} subscribers",
                    str(p),
                    fmt_bytes(rss),
                    "",
                    f"before them {fmt_bytes(before)}: {(rss - before) / held / 1024:.0f} KiB "
                    "per stream"
                    if before is not None and held
                    else "",
                    "",
                    "≤ 120 MB" if held >= 1000 else "",
                    rss <= 120 * MB if held >= 1000 else None,
                )
            )
    for p in sizes:
        storm = res.facts.get(f"B9@{p}")
        if storm is None:
            continue
        last = storm.get("last_snapshot")
        took = last - storm["t_spawn"] if last is not None else float("inf")
        refused = sum(storm.get("statuses", {}).values())
        ok = storm["resumed"] == storm["streams"] and refused == 0
        # The storm in two parts: the new daemon's start, then delivering the snapshots from
        # its first accepted reconnect; the floor delivers the same bytes with nothing else.
        alone = res.facts.get(f"B9 floor@{p}")
        first = storm.get("first_reopen")
        serving = last - first if last is not None and first is not None else None
        parts = []
        if serving is not None:
            parts.append(f"snapshots delivered in {fmt_ms(serving)} from the first reconnect")
        if alone is not None:
            each = fmt_bytes(alone["bytes"] / max(alone["streams"], 1))
            parts.append(
                f"floor (a process that only writes {alone['streams']} snapshots of "
                f"{each}) {fmt_ms(alone['seconds'])}, "
                f"its readers' CPU {alone['cpu']:.2f} s; an interpreter with asyncio alone "
                f"starts in {fmt_ms(alone['start'])}"
            )
        ratio = (
            f"{serving / alone['seconds']:.2f}×"
            if serving is not None and alone is not None and alone["seconds"] > 0
            else ""
        )
        out.append(
            Row(
                "B9",
                f"restart under {storm['streams']} Last-Event-ID subscribers → the last "
                "one's snapshot",
                str(p),
                fmt_ms(took) if last is not None else "never",
                "",
                f"{storm['resumed']} of {storm['streams']} resumed, {refused} refused; "
                f"from the old one's stop {fmt_ms(last - storm['t_stop']) if last else '—'}, "
                f"new one ready {fmt_ms(storm['t_ready'] - storm['t_spawn'])}"
                + (
                    f"; CPU: daemon {storm['daemon_cpu']:.2f} s, subscribers' reading "
                    f"{storm['cpu']:.2f} s (2 cores)"
                    if "daemon_cpu" in storm and "cpu" in storm
                    else ""
                )
                + "".join(f"; {part}" for part in parts),
                ratio,
                "all, ≤ 2 s",
                ok and took <= 2.0,
            )
        )
    return out


FANOUT_METHOD = """\\
- B8/B4/B9 (`bench.fanout`): the subscribers are held by `bench.fanout_probe`, one process with
  raw non-blocking sockets under one epoll, each stream's bytes stamped with the time the wait
  that reported them returned (an upper bound of the arrival).  Every read goes into one
  preallocated buffer: before 2026-12-02 each was a `recv(1 MiB)`, for which glibc maps and unmaps
  a fresh block (about 20 µs a read, against 2.6 µs), so the probe's own reading of 100 or 1,000
  streams made up most of the spreads it reported, the floor's included.  B8: `split-window -d`
  (subprocess) in the observer's session, then `kill-pane`, 60 ms of quiet before each; the spread
  is the last subscriber's `pane.added` less the first's, in the same sample.  Its floor:
  `bench.fanout_floor`, an asyncio process that only writes, to the same number of streams held by
  the same probe, one chunk of the bytes a split wrote to each stream at that size (the median),
  by `transport.write` and by `os.write`; "its writes" is the floor's own loop over the streams.
  That floor writes on a FIFO's word, on a quiet machine; the daemon writes while tmux is still
  busy with the split (the new pane's fork, the split's own client, its other clients), on the
  same 2 cores.  So since 2026-12-02 the ratio is taken against the floor on the split: after
  every other row of the size, with the daemon stopped, `bench.fanout_floor --control-argv` writes
  the same bytes to the same number of streams as soon as its own control client (attached to the
  observer's session, as the daemon's is) reads the split's `%layout-change`, for the same splits
  and kills.  The same run with 100 streams and B3's `run-shell -b` hook set gives B3's floor row:
  the last of the 100 streams less a bare control client's `%layout-change`, both stamped by the
  probe in the same sample. CPU per event and subscriber: the daemon's CPU per event line with N
  subscribers less that with 1, over N - 1.  B4: RSS with every stream connected and idle.  B9:
  SIGTERM to the daemon, a new one started at once; every stream that ends reconnects with its
  `Last-Event-ID` (retrying while nothing listens); the time is from the new process's spawn to
  the last stream's snapshot of the new instance, with the CPU the new daemon and the probe
  (reading every snapshot) used.  The daemon starts from its bytecode, as an installed one does
  (with `PYTHONDONTWRITEBYTECODE`, as on this machine, each start compiled its modules anew).  The
  probe scans each chunk for line ends where it was read and keeps only each line's first 200
  bytes: before 2026-12-02 it copied each snapshot byte about five times, and at 1,000 panes its
  reading (1.4 to 1.9 s of CPU) outweighed the daemon's writing.  Its floor: `bench.fanout_floor
  --snapshot-bytes`, which answers every connection with a line of the daemon's snapshot size and
  does nothing else, the same number of streams connecting at once under the same probe; the ratio
  is the daemon's delivery (from its first accepted reconnect to the last snapshot) over the
  floor's.
"""


def plan_many(res: Results, panes: int) -> int:
    """The largest number of subscribers B3 was measured with at ``panes``."""
    counts = {int(k.split()[2]) for k in res.series if k.startswith("B3 attached ")}
    return max((c for c in counts if res.get(f"B3 attached {c} last", panes)), default=1)


def latency_notes(res: Results) -> list[str]:
    """What the latency section (``--section latency``) says below its goal rows: the B3
    samples behind them, and tmux alone on the hook path and a query-based path."""
    b3 = []
    for p in res.facts.get("sizes", []):
        for where, alt in (("attached", "cm"), ("other", "hook")):
            for count in sorted({1, plan_many(res, p)}):
                key, metric = str(count), "last" if count > 1 else "first"
                mine = res.get(f"B3 {where} {key} {metric}", p)
                other = res.get(f"B3 {where} {key} {alt}", p)
                if mine and other:
                    b3.append(
                        f"{where} {p} ({key} subscriber(s)): n={len(mine)}, daemon "
                        f"{fmt_ms(median(mine))}, alternative {fmt_ms(median(other))}"
                    )
    parts = ["Samples: " + "; ".join(b3) + ".", ""]
    floors = []
    for p in res.facts.get("sizes", []):
        lc = res.get("B3 floor layout-change", p)
        answered = res.get("B3 floor query answered", p)
        if lc and answered:
            gaps = [b - a for a, b in zip(lc, answered, strict=True)]
            floors.append(f"{p} panes +{fmt_ms(median(gaps))} (n={len(gaps)})")
    hooks = []
    for p in res.facts.get("sizes", []):
        gaps = hook_gaps(res, p)
        if gaps:
            hooks.append(f"{p} panes {median(gaps) * 1000:+.2f} ms (n={len(gaps)})")
    if hooks:
        parts += [
            "tmux alone, before the daemon starts: the daemon's own hooks hand a split's rows "
            "to a bare control client attached to its session (3.4+: their `%message` on it) "
            "after its `%layout-change` by: " + "; ".join(hooks) + ".",
            "",
        ]
    if floors:
        parts += [
            "tmux alone, before the daemon starts: a bare control client's `list-panes -t @W` "
            "(the daemon's window query), sent as it reads the split's `%layout-change`, is "
            "answered after that `%layout-change` by: " + "; ".join(floors) + ". A path that "
            "needs a query (tmux 3.3, the observer's session) cannot beat this.",
            "",
        ]
    return parts
