"""The client core without sockets: requests, answers, errors, ETags and the resume machine."""

from __future__ import annotations

from typing import Literal

import msgspec
import pytest

from tests.unit.test_cli_units import LOC
from tmuxlocd.core import answers
from tmuxlocd.core.activity import Activity, Outcome
from tmuxlocd.core.client_core import (
    Call,
    ClientCore,
    ClientError,
    DaemonUnavailable,
    EventStream,
    Step,
    SyncFailedError,
    _Backoff,
)
from tmuxlocd.core.events import Lagged, PaneAdded, Reset, SnapshotEvent, encoder
from tmuxlocd.core.urls import query_string, url_id

# ----------------------------------------------------------------------------------------------
# Requests.

ANCESTOR = ClientCore(accept_ancestor=True)
PLAIN = ClientCore()

REQUESTS: list[tuple[Call[object], str, str, bytes | None]] = [
    (PLAIN.where_am_i(), "GET", "/v1/self", None),
    (ANCESTOR.where_am_i(fresh=True), "GET", "/v1/self?fresh=1&accept=ancestor", None),
    (
        ANCESTOR.text("self", 2, True),
        "GET",
        "/v1/self?format=text&turn=2&neighbors=1&accept=ancestor",
        None,
    ),
    (ANCESTOR.text("%4", None, False), "GET", "/v1/panes/4?format=text", None),
    (
        PLAIN.location("%3", "/tmp/a b", True),
        "GET",
        "/v1/panes/3?server=%2Ftmp%2Fa%20b&fresh=1",
        None,
    ),
    (ANCESTOR.location("self", None, False), "GET", "/v1/panes/self?accept=ancestor", None),
    (PLAIN.neighbors(None, "3", None), "GET", "/v1/panes/3/neighbors", None),
    (
        ANCESTOR.neighbors("right", "self", "/s"),
        "GET",
        "/v1/panes/self/neighbors/right?server=%2Fs&accept=ancestor",
        None,
    ),
    (
        ANCESTOR.panes("session", "summary", 5, 10, None),
        "GET",
        "/v1/panes?session=self&detail=summary&limit=5&offset=10&accept=ancestor",
        None,
    ),
    (ANCESTOR.panes("all", "full", None, None, "/s"), "GET", "/v1/panes?server=%2Fs", None),
    (PLAIN.tree(), "GET", "/v1/tree", None),
    (PLAIN.wait("%3", "idle", None, None), "GET", "/v1/panes/3/wait?until=idle", None),
    (
        ANCESTOR.wait("self", "busy", 0.2, "/s"),
        "GET",
        "/v1/panes/self/wait?until=busy&timeout_s=0.2&server=%2Fs&accept=ancestor",
        None,
    ),
    # Seconds as the daemon reads them: decimal digits, never an exponent.
    (
        PLAIN.wait("3", "exit", 1e-5, None),
        "GET",
        "/v1/panes/3/wait?until=exit&timeout_s=0.00001",
        None,
    ),
    (
        PLAIN.wait("3", "change", 3600, None),
        "GET",
        "/v1/panes/3/wait?until=change&timeout_s=3600",
        None,
    ),
    (PLAIN.health(), "GET", "/v1/health", None),
    (PLAIN.sync(None), "POST", "/v1/sync", b""),
    (PLAIN.sync("/s"), "POST", "/v1/sync?server=%2Fs", b""),
    (
        PLAIN.notify("after-split-window", "", "%1"),
        "POST",
        "/v1/notify?hook=after-split-window&target=%251",
        b"",
    ),
]


@pytest.mark.parametrize(("call", "method", "url", "body"), REQUESTS)
def test_request_building(call: Call[object], method: str, url: str, body: bytes | None) -> None:
    assert (call.request.method, call.request.url, call.request.body) == (method, url, body)


def test_request_headers() -> None:
    core = ClientCore()
    assert core.headers(core.tree()) == {"Accept": "application/json"}
    assert core.headers(core.text("self", None, False)) == {"Accept": "text/plain"}
    assert core.headers(core.sync(None)) == {
        "Accept": "application/json",
        "Content-Type": "application/json",
    }


@pytest.mark.parametrize(
    "bad",
    [
        lambda c: c.location("x", None, False),
        lambda c: c.neighbors("up", "self", None),
        lambda c: c.panes("planet", "full", None, None, None),
        lambda c: c.wait("self", "soon", None, None),
        lambda c: c.wait("self", "idle", -1, None),
        lambda c: c.wait("self", "idle", 3600.5, None),
        lambda c: c.wait("self", "idle", float("nan"), None),
        lambda c: c.wait("self", "idle", True, None),
        lambda c: c.wait("x", "idle", None, None),
        lambda c: c.events(
            "/s",
            pane=None,
            window="%1",
            session=None,
            server=None,
            types=None,
            format="ndjson",
            min_interval_ms=None,
            last_event_id=None,
            reconnect=True,
        ),
    ],
)
def test_bad_arguments_fail_before_any_request(bad: object) -> None:
    with pytest.raises(ValueError):
        bad(PLAIN)  # type: ignore[operator]


def test_only_a_long_poll_has_its_own_read_timeout() -> None:
    """A wait's answer may take its timeout_s (the daemon's 300 s when not given), and then
    some; every other call has the transport's request timeout."""
    assert PLAIN.wait("self", "idle", None, None).read_timeout == 310.0
    assert PLAIN.wait("self", "idle", 0.2, None).read_timeout == pytest.approx(10.2)
    assert PLAIN.wait("self", "idle", 0, None).read_timeout == 10.0
    assert PLAIN.tree().read_timeout is None and PLAIN.sync(None).read_timeout is None
    assert PLAIN.headers(PLAIN.wait("self", "idle", None, None)) == {"Accept": "application/json"}


def test_one_id_spelling() -> None:
    assert url_id("%3", "pane") == url_id("3", "pane") == "3"
    assert url_id("@2", "window") == "2" and url_id("$0", "session") == "0"
    assert url_id("self", "window") == "self"
    for bad in ("", "%", "@3", "%3a", "%-1", "%\u0663"):  # the last: an Arabic-Indic three
        with pytest.raises(ValueError):
            url_id(bad, "pane")
    assert query_string({"a": "x,y", "b": None}) == "?a=x%2Cy"
    assert query_string({"a": "x,y"}, comma=True) == "?a=x,y"


# ----------------------------------------------------------------------------------------------
# Answers.

SELF = answers.SelfAnswer(
    inside_tmux=True,
    verified_by="tty",
    caller=answers.Caller(pid=9, tty="/dev/pts/5"),
    location=LOC,
)
ENTRY = answers.NeighborEntry(id="%4", index=1, shared=40)

# A wait met (its command ended: the shell is in front) and one that timed out (cat still is).
WAITED: tuple[tuple[float, Outcome, str, float], ...] = (
    (5, "idle", "sh", 1234.5),
    (0.2, "timeout", "cat", 200.4),
)

DECODED: list[tuple[Call[object], object]] = [
    (PLAIN.where_am_i(), SELF),
    (PLAIN.location("%3", None, False), LOC),
    (PLAIN.neighbors(None, "%3", None), answers.PaneNeighbors(pane="%3", right=(ENTRY,))),
    (
        PLAIN.neighbors("right", "%3", None),
        answers.DirectionNeighbors(pane="%3", direction="right", panes=(ENTRY,)),
    ),
    (PLAIN.panes("window", "full", None, None, None), answers.PaneList(panes=(LOC,), total=1)),
    (
        PLAIN.panes("window", "summary", None, None, None),
        answers.PaneSummaryList(panes=(answers.summary_of(LOC),), total=3, truncated=True),
    ),
    (PLAIN.tree(), answers.Tree(servers=(answers.TreeServer(socket_path="/s", running=True),))),
    *(
        (
            PLAIN.wait("%3", "idle", timeout_s, None),
            answers.WaitAnswer(
                outcome=outcome,
                until="idle",
                met=outcome == "idle",
                location=LOC,
                activity=Activity(command=now, busy=now != "sh"),
                before=Activity(command="sleep", busy=True),
                waited_ms=waited_ms,
            ),
        )
        for timeout_s, outcome, now, waited_ms in WAITED
    ),
    (
        PLAIN.wait("%3", "busy", None, None),
        answers.WaitAnswer(outcome="gone", until="busy", met=False, reason="the pane was removed"),
    ),
    (
        PLAIN.health(),
        answers.Health(
            status="ok", servers=(answers.ServerHealth(socket_path="/s", running=True),)
        ),
    ),
]


@pytest.mark.parametrize(("call", "value"), DECODED)
def test_answers_decode_into_the_shared_structs(call: Call[object], value: object) -> None:
    body = msgspec.json.encode(value)
    assert ClientCore().answer(call, 200, None, body) == value


def test_answers_without_a_struct() -> None:
    core = ClientCore()
    assert core.answer(core.sync(None), 200, None, b'{"seq":"a:7"}') == "a:7"
    assert core.answer(core.notify(None, None, None), 202, None, b'{"accepted":true}') is None
    text = core.text("self", None, False)
    assert core.answer(text, 200, None, "name «é»\n".encode()) == "name «é»\n"
    assert core.answer(text, 204, None, b"") is None


def test_a_newer_daemons_extra_fields_are_ignored() -> None:
    body = b'{"seq":"a:1","new":1}'
    assert PLAIN.answer(PLAIN.sync(None), 200, None, body) == "a:1"


# ----------------------------------------------------------------------------------------------
# Errors.


def test_error_answers() -> None:
    core = ClientCore()
    with pytest.raises(ClientError) as exc:
        core.answer(
            core.location("%9", None, False),
            404,
            None,
            b'{"error":{"code":"not_found","message":"no pane %9"}}',
        )
    assert (exc.value.status, exc.value.code, exc.value.message) == (404, "not_found", "no pane %9")
    assert type(exc.value) is ClientError
    body = (
        b'{"error":{"code":"sync_failed","message":"re-read failed","servers":'
        b'[{"socket_path":"/s1","error":"timeout"},{"socket_path":"/s2","error":"gone"}]}}'
    )
    with pytest.raises(SyncFailedError) as failed:
        core.answer(core.sync(None), 503, None, body)
    assert failed.value.status == 503 and failed.value.code == "sync_failed"
    assert failed.value.servers == {"/s1": "timeout", "/s2": "gone"}
    with pytest.raises(ClientError) as exc:
        core.answer(
            core.wait("%9", "idle", None, None),
            400,
            None,
            b'{"error":{"code":"bad_until","message":"until: soon"}}',
        )
    assert (exc.value.status, exc.value.code) == (400, "bad_until")
    with pytest.raises(ClientError) as exc:
        core.answer(core.tree(), 502, None, b"<html>Bad Gateway</html>")
    assert (exc.value.code, exc.value.message) == ("http_502", "<html>Bad Gateway</html>")
    unavailable = DaemonUnavailable("/s", "Connection refused")
    assert isinstance(unavailable, ClientError) and unavailable.status == 0
    assert unavailable.code == "unavailable"


# ----------------------------------------------------------------------------------------------
# ETags.


def test_etag_revalidation_policy() -> None:
    core = ClientCore()
    call = core.location("%3", None, False)
    assert "If-None-Match" not in core.headers(call)
    first = core.answer(call, 200, '"v1"', msgspec.json.encode(LOC))
    assert call.request.url in core.etags
    again = core.location("%3", None, False)
    assert core.headers(again)["If-None-Match"] == '"v1"'
    assert core.answer(again, 304, None, b"") is first  # the very object, not decoded again
    # Another URL has its own entry; the text form and POSTs are never revalidated.
    assert "If-None-Match" not in core.headers(core.location("%4", None, False))
    core.answer(core.text("%3", None, False), 200, '"t"', b"x")
    assert "If-None-Match" not in core.headers(core.text("%3", None, False))
    assert "If-None-Match" not in core.headers(core.sync(None))
    # A new answer replaces the kept one; one without an ETag forgets it.
    core.answer(again, 200, '"v2"', msgspec.json.encode(LOC))
    assert core.headers(again)["If-None-Match"] == '"v2"'
    core.answer(again, 200, None, msgspec.json.encode(LOC))
    assert call.request.url not in core.etags


def test_a_304_with_nothing_kept_is_an_error() -> None:
    core = ClientCore()
    with pytest.raises(ClientError) as exc:
        core.answer(core.tree(), 304, None, b"")
    assert exc.value.status == 304


# ----------------------------------------------------------------------------------------------
# The resume machine.

SNAP = encoder.encode(SnapshotEvent(id="a:5", time=1.0, panes=(LOC,))) + b"\n"
ADDED = encoder.encode(PaneAdded(id="a:6", time=1.0, location=LOC)) + b"\n"
RESET = encoder.encode(Reset(id="b:0", time=2.0)) + b"\n"
SNAP_B = encoder.encode(SnapshotEvent(id="b:0", time=2.0, panes=())) + b"\n"
LAGGED = encoder.encode(Lagged(id="a:9", time=2.0)) + b"\n"
SNAP_9 = encoder.encode(SnapshotEvent(id="a:9", time=2.0, panes=())) + b"\n"
BEAT = b'{"type":"heartbeat"}\n'


def _stream(**kw: object) -> EventStream:
    return EventStream("/s", "/v1/events", backoff=_Backoff(0.05, 0.2), **kw)  # type: ignore[arg-type]


def _run(stream: EventStream, script: list[tuple[str, object]]) -> list[object]:
    """Feeds the machine a script of outcomes; returns, per outcome, what it said (a Step,
    an event's type, or the exception raised) and the Last-Event-ID of each connection."""
    said: list[object] = []
    for what, arg in script:
        try:
            if what == "connect":
                said.append(("asks", stream.headers().get("Last-Event-ID")))
                continue
            if what == "refused":
                out: object = stream.connect_failed(str(arg))
            elif what == "status":
                assert isinstance(arg, tuple)
                status, retry_after = arg
                out = stream.answered(status, retry_after, b"")
            elif what == "line":
                event = stream.feed(arg)  # type: ignore[arg-type]
                out = event.id if event is not None else None
            elif what == "ended":
                out = stream.ended()
            else:
                out = stream.dropped()  # a cut, or no line within the heartbeat deadline
        except ClientError as exc:
            out = type(exc).__name__
        said.append(out)
    return said


RETRY: Literal["retry"] = "retry"

RESUME_TABLE: list[tuple[str, dict[str, object], list[tuple[str, object]], list[object]]] = [
    (
        "exact resume after a cut",
        {},
        [
            ("connect", None),
            ("status", (200, None)),
            ("line", SNAP),
            ("line", BEAT),
            ("line", ADDED),
            ("dropped", None),
            ("connect", None),
            ("status", (200, None)),
        ],
        [
            ("asks", None),
            Step("read"),
            "a:5",
            None,
            "a:6",
            Step(RETRY, 0.05),
            ("asks", "a:6"),
            Step("read"),
        ],
    ),
    (
        "resume from the caller's id",
        {"last_event_id": "a:3"},
        [("connect", None)],
        [("asks", "a:3")],
    ),
    (
        "reset after a daemon restart: resumes after the new snapshot",
        {},
        [
            ("status", (200, None)),
            ("line", ADDED),
            ("ended", None),
            ("refused", "refused"),
            ("status", (200, None)),
            ("line", RESET),
            ("line", SNAP_B),
            ("dropped", None),
            ("connect", None),
        ],
        [
            Step("read"),
            "a:6",
            Step(RETRY, 0.05),
            Step(RETRY, 0.1),
            Step("read"),
            "b:0",
            "b:0",
            Step(RETRY, 0.05),
            ("asks", "b:0"),
        ],
    ),
    (
        "reset, then cut before the snapshot: asks again from the old id",
        {},
        [
            ("status", (200, None)),
            ("line", ADDED),
            ("line", RESET),
            ("dropped", None),
            ("connect", None),
        ],
        [Step("read"), "a:6", "b:0", Step(RETRY, 0.05), ("asks", "a:6")],
    ),
    (
        "lagged: the snapshot that follows is the resume point",
        {},
        [
            ("status", (200, None)),
            ("line", ADDED),
            ("line", LAGGED),
            ("connect", None),
            ("line", SNAP_9),
            ("connect", None),
        ],
        [Step("read"), "a:6", "a:9", ("asks", "a:6"), "a:9", ("asks", "a:9")],
    ),
    (
        "503 too_many_streams: waits Retry-After, else the backoff",
        {},
        [
            ("status", (503, "3")),
            ("status", (503, None)),
            ("status", (503, "soon")),
            ("status", (200, None)),
            ("dropped", None),
        ],
        [Step(RETRY, 3.0), Step(RETRY, 0.1), Step(RETRY, 0.2), Step("read"), Step(RETRY, 0.05)],
    ),
    (
        "no daemon at the first connection",
        {},
        [("refused", "Connection refused")],
        ["DaemonUnavailable"],
    ),
    (
        "an error answer ends the stream",
        {},
        [("status", (200, None)), ("dropped", None), ("status", (400, None))],
        [Step("read"), Step(RETRY, 0.05), "ClientError"],
    ),
    (
        "backoff doubles to its cap while the daemon is away, and resets on success",
        {},
        [
            ("status", (200, None)),
            ("dropped", None),
            ("refused", "x"),
            ("refused", "x"),
            ("refused", "x"),
            ("status", (200, None)),
            ("dropped", None),
        ],
        [
            Step("read"),
            Step(RETRY, 0.05),
            Step(RETRY, 0.1),
            Step(RETRY, 0.2),
            Step(RETRY, 0.2),
            Step("read"),
            Step(RETRY, 0.05),
        ],
    ),
    (
        "without reconnect: a cut or the end stops, a refusal is an error",
        {"reconnect": False},
        [
            ("status", (200, None)),
            ("line", SNAP),
            ("dropped", None),
            ("ended", None),
            ("refused", "x"),
        ],
        [Step("read"), "a:5", Step("stop"), Step("stop"), "DaemonUnavailable"],
    ),
]


@pytest.mark.parametrize(
    ("kw", "script", "said"), [row[1:] for row in RESUME_TABLE], ids=[r[0] for r in RESUME_TABLE]
)
def test_resume_machine(
    kw: dict[str, object], script: list[tuple[str, object]], said: list[object]
) -> None:
    assert _run(_stream(**kw), script) == said


def test_stream_headers_and_a_fresh_decoder_per_connection() -> None:
    stream = EventStream("/s", "/v1/events?pane=self", "sse", last_event_id="a:1")
    assert stream.headers() == {"Accept": "text/event-stream", "Last-Event-ID": "a:1"}
    stream.answered(200, None)
    assert stream.feed(b"data: " + ADDED.strip() + b"\n") is None  # cut before the blank line
    stream.dropped()
    stream.answered(200, None)
    assert stream.feed(b"\n") is None  # the half event of the old connection is gone
    assert stream.headers()["Last-Event-ID"] == "a:1"
