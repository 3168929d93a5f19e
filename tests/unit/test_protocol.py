"""Tests of the control-mode parser and of command quoting.

Three kinds: synthetic lines for each rule, real transcripts captured from tmux 3.3a (fed whole,
byte by byte and in random pieces), and properties (any bytes give events or ProtocolError;
how the bytes are split never matters).  ``command()`` against a private tmux server over a
real control connection: ``tests/integration/test_protocol_live.py``.
"""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tmuxlocd.core.errors import ProtocolError
from tmuxlocd.core.protocol import (
    NEED_DATA,
    ClientDetached,
    ClientSessionChanged,
    ConfigError,
    Continue,
    ControlParser,
    Event,
    Exit,
    ExtendedOutput,
    LayoutChange,
    Message,
    Output,
    PaneModeChanged,
    PasteBufferChanged,
    PasteBufferDeleted,
    Pause,
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
    command,
    unescape_output,
)

TRANSCRIPTS = Path(__file__).resolve().parent.parent / "data" / "transcripts"
TRANSCRIPT_FILES = sorted(TRANSCRIPTS.glob("*.bin"))


def parse(data: bytes, *, max_line: int | None = None) -> list[Event]:
    parser = ControlParser() if max_line is None else ControlParser(max_line=max_line)
    parser.receive_data(data)
    parser.receive_data(b"")
    return parser.events()


def drive(chunks: list[bytes], *, max_line: int = 1 << 20) -> tuple[list[Event], bool]:
    """Feed non-empty chunks then EOF, draining after each; (events, whether it failed)."""
    parser = ControlParser(max_line=max_line)
    events: list[Event] = []
    try:
        for chunk in [*chunks, b""]:
            parser.receive_data(chunk)
            while (event := parser.next_event()) is not NEED_DATA:
                events.append(event)
    except ProtocolError:
        return events, True
    return events, False


def split_at(data: bytes, points: list[int]) -> list[bytes]:
    cuts = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(cuts) if b > a]


# --- blocks ---------------------------------------------------------------------------------


def test_reply_block() -> None:
    events = parse(b"%begin 1700000000 268 1\nrow one\nrow\ttwo\n%end 1700000000 268 1\n")
    assert events == [
        Reply(number=268, time=1700000000, flags=1, ok=True, lines=("row one", "row\ttwo"))
    ]


def test_error_block_and_flags_zero() -> None:
    events = parse(b"%begin 5 9 0\n%end 5 9 0\n%begin 5 12 1\nparse error: x\n%error 5 12 1\n")
    assert events == [
        Reply(number=9, time=5, flags=0, ok=True, lines=()),
        Reply(number=12, time=5, flags=1, ok=False, lines=("parse error: x",)),
    ]


def test_inside_a_block_everything_but_the_matching_guard_is_content() -> None:
    content = [
        b"%0",
        b"%output %1 x",
        b"%begin 1 2 1",
        b"%end 1 3 1",  # another number
        b"%end 1 2 0",  # same number, other flags
        b"%end 1 2 1 extra",
        b"%end 1 2",
        b"%error x 2 1",
        b"%exit",
        b"",
    ]
    data = b"%begin 1 2 1\n" + b"\n".join(content) + b"\n%error 7 2 1\n"
    assert parse(data) == [
        Reply(number=2, time=1, flags=1, ok=False, lines=tuple(c.decode() for c in content))
    ]


def test_notifications_are_only_recognised_outside_blocks() -> None:
    events = parse(b"%window-add @1\n%begin 1 2 1\n%window-add @2\n%end 1 2 1\n%window-add @3\n")
    assert events == [
        WindowAdd(window_id="@1", unlinked=False),
        Reply(number=2, time=1, flags=1, ok=True, lines=("%window-add @2",)),
        WindowAdd(window_id="@3", unlinked=False),
    ]


def test_reply_lines_keep_cr_and_replace_invalid_utf8() -> None:
    events = parse(b"%begin 1 2 1\na\rb\r\n\xff\xc3\xa9\n%end 1 2 1\n")
    assert events == [Reply(number=2, time=1, flags=1, ok=True, lines=("a\rb\r", "\ufffdé"))]


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"%begin\n", id="begin-no-fields"),
        pytest.param(b"%begin 1 2\n", id="begin-two-fields"),
        pytest.param(b"%begin 1 2 3 4\n", id="begin-five-fields"),
        pytest.param(b"%begin 1 x 1\n", id="begin-not-a-number"),
        pytest.param(b"%begin 1 -2 1\n", id="begin-negative"),
        pytest.param(b"%begin 1 2 1\r\n", id="begin-cr"),
        pytest.param(b"%begin 1 " + b"9" * 30 + b" 1\n", id="begin-huge-number"),
        pytest.param(b"%end 1 2 1\n", id="end-outside-block"),
        pytest.param(b"%error 1 2 1\n", id="error-outside-block"),
        pytest.param(b"%end\n", id="bare-end-outside-block"),
        pytest.param(b"%begin 1 2 1\nrow\n", id="eof-inside-block"),
        pytest.param(b"%begin 1 2 1\nrow", id="eof-inside-block-partial-line"),
        pytest.param(b"%begin 1 2 1", id="eof-in-begin-line"),
    ],
)
def test_protocol_errors(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        parse(data)


def test_error_is_sticky() -> None:
    parser = ControlParser()
    parser.receive_data(b"%end 1 2 1\n%window-add @1\n")
    with pytest.raises(ProtocolError) as first:
        parser.next_event()
    with pytest.raises(ProtocolError) as again:
        parser.next_event()
    assert again.value is first.value


def test_line_longer_than_max_line() -> None:
    assert parse(b"x" * 16 + b"\n", max_line=16) == [Unknown(line=b"x" * 16)]
    with pytest.raises(ProtocolError):
        parse(b"x" * 17 + b"\n", max_line=16)
    # A line still arriving is refused as soon as it is too long, before its newline.
    parser = ControlParser(max_line=16)
    parser.receive_data(b"%output %1 " + b"y" * 5)
    assert parser.next_event() is NEED_DATA
    parser.receive_data(b"y")
    with pytest.raises(ProtocolError):
        parser.next_event()


def test_need_data_eof_and_unterminated_last_line() -> None:
    parser = ControlParser()
    assert parser.next_event() is NEED_DATA
    parser.receive_data(b"%window-add @1\n%exi")
    assert parser.events() == [WindowAdd(window_id="@1", unlinked=False)]
    assert parser.next_event() is NEED_DATA
    parser.receive_data(b"t")
    parser.receive_data(b"")
    assert parser.events() == [Exit(reason=None)]
    assert parser.next_event() is NEED_DATA
    parser.receive_data(b"")  # a second EOF is harmless
    with pytest.raises(RuntimeError):
        parser.receive_data(b"more")


def test_bare_and_unknown_lines() -> None:
    assert parse(b"BARE-LINE\n\n%future-thing a b\n%window-add nope\n%\n") == [
        Unknown(line=b"BARE-LINE"),
        Unknown(line=b""),
        Unknown(line=b"%future-thing a b"),
        Unknown(line=b"%window-add nope"),
        Unknown(line=b"%"),
    ]


# --- notifications --------------------------------------------------------------------------

NOTIFICATIONS: list[tuple[bytes, Event]] = [
    (b"%output %3 a\\134b\\011c \xff\\015\\012", Output(pane_id="%3", data=b"a\\b\tc \xff\r\n")),
    (b"%output %3 ", Output(pane_id="%3", data=b"")),
    (b"%output %3", Output(pane_id="%3", data=b"")),
    (
        b"%extended-output %0 17 : x : y\\012",
        ExtendedOutput(pane_id="%0", age_ms=17, data=b"x : y\n"),
    ),
    (
        b"%extended-output %0 17 future fields : z",
        ExtendedOutput(pane_id="%0", age_ms=17, data=b"z"),
    ),
    (b"%extended-output %0 17 : ", ExtendedOutput(pane_id="%0", age_ms=17, data=b"")),
    (
        b"%layout-change @1 b25d,80x24,0,0,0 b25d,80x24,0,0,0 *Z",
        LayoutChange(
            window_id="@1",
            layout="b25d,80x24,0,0,0",
            visible_layout="b25d,80x24,0,0,0",
            flags="*Z",
        ),
    ),
    (
        b"%layout-change @1 L V ",
        LayoutChange(window_id="@1", layout="L", visible_layout="V", flags=""),
    ),
    (
        b"%layout-change @1 L V",
        LayoutChange(window_id="@1", layout="L", visible_layout="V", flags=""),
    ),
    (b"%window-add @4", WindowAdd(window_id="@4", unlinked=False)),
    (b"%unlinked-window-add @4", WindowAdd(window_id="@4", unlinked=True)),
    (b"%window-close @4", WindowClose(window_id="@4", unlinked=False)),
    (b"%unlinked-window-close @4", WindowClose(window_id="@4", unlinked=True)),
    (
        b"%window-renamed @4 tab\\there two  spaces ",
        WindowRenamed(window_id="@4", name="tab\\there two  spaces ", unlinked=False),
    ),
    (b"%unlinked-window-renamed @4 ", WindowRenamed(window_id="@4", name="", unlinked=True)),
    (b"%window-pane-changed @1 %7", WindowPaneChanged(window_id="@1", pane_id="%7")),
    (b"%session-changed $2 my session", SessionChanged(session_id="$2", name="my session")),
    (
        b"%client-session-changed client-42 $3 B \\$x",
        ClientSessionChanged(client="client-42", session_id="$3", name="B \\$x"),
    ),
    (b"%session-renamed $2 \xc3\xbc", SessionRenamed(session_id="$2", name="ü")),
    (b"%sessions-changed", SessionsChanged()),
    (b"%session-window-changed $1 @3", SessionWindowChanged(session_id="$1", window_id="@3")),
    (b"%client-detached /dev/pts/4", ClientDetached(client="/dev/pts/4")),
    (b"%pane-mode-changed %5", PaneModeChanged(pane_id="%5")),
    (b"%pause %5", Pause(pane_id="%5")),
    (b"%continue %5", Continue(pane_id="%5")),
    (
        b"%subscription-changed sess $0 - - - : A : 1",
        SubscriptionChanged(
            name="sess",
            session_id="$0",
            window_id="-",
            window_index="-",
            pane_id="-",
            value="A : 1",
        ),
    ),
    (
        b"%subscription-changed p $0 @1 2 %3 new field : ",
        SubscriptionChanged(
            name="p", session_id="$0", window_id="@1", window_index="2", pane_id="%3", value=""
        ),
    ),
    (b"%exit", Exit(reason=None)),
    (b"%exit server exited", Exit(reason="server exited")),
    (b"%message hello world", Message(text="hello world")),
    (b"%config-error /etc/tmux.conf:1: bad", ConfigError(text="/etc/tmux.conf:1: bad")),
    (b"%paste-buffer-changed buffer0", PasteBufferChanged(name="buffer0")),
    (b"%paste-buffer-deleted buffer0", PasteBufferDeleted(name="buffer0")),
]


@pytest.mark.parametrize(("line", "event"), NOTIFICATIONS, ids=lambda v: repr(v)[:40])
def test_notification(line: bytes, event: Event) -> None:
    assert parse(line + b"\n") == [event]


@pytest.mark.parametrize(
    "line",
    [
        b"%output 3 x",
        b"%output %x y",
        b"%extended-output %0 x : y",
        b"%extended-output %0 1 no colon",
        b"%layout-change @1 only-one",
        b"%layout-change 1 a b c",
        b"%window-add",
        b"%window-close $1",
        b"%window-renamed 4 name",
        b"%window-pane-changed @1",
        b"%window-pane-changed @1 @2",
        b"%session-changed @1 x",
        b"%client-session-changed client @1 x",
        b"%client-session-changed",
        b"%session-window-changed $1",
        b"%client-detached",
        b"%pane-mode-changed",
        b"%pause @1",
        b"%subscription-changed s $0 - - -",
        b"%subscription-changed s @0 - - - : v",
    ],
)
def test_malformed_notification_is_unknown(line: bytes) -> None:
    assert parse(line + b"\n") == [Unknown(line=line)]


def test_events_are_frozen_and_encodable() -> None:
    event = WindowAdd(window_id="@1", unlinked=False)
    with pytest.raises(AttributeError):
        event.window_id = "@2"  # type: ignore[misc]
    assert msgspec.json.decode(msgspec.json.encode(event)) == {"window_id": "@1", "unlinked": False}


def test_unescape_output() -> None:
    assert unescape_output(b"plain") == b"plain"
    assert unescape_output(b"\\134\\000\\037\\177") == b"\\\x00\x1f\x7f"
    assert unescape_output(b"\\134101") == b"\\101"  # no rescan of what was decoded
    assert unescape_output(b"\\400 \\9 \\12 \\") == b"\\400 \\9 \\12 \\"  # not from tmux: kept
    assert unescape_output(bytes(range(32, 256)).replace(b"\\", b"\\134")) == bytes(range(32, 256))


# --- transcripts ----------------------------------------------------------------------------


def test_transcripts_exist() -> None:
    assert {p.name for p in TRANSCRIPT_FILES} >= {
        "startup.bin",
        "notifications.bin",
        "output.bin",
        "hooks.bin",
        "subscriptions.bin",
        "kill_server.bin",
        "names.bin",
    }


@pytest.mark.parametrize("path", TRANSCRIPT_FILES, ids=lambda p: p.name)
def test_transcript_split_anywhere(path: Path) -> None:
    data = path.read_bytes()
    whole, failed = drive([data])
    assert not failed
    assert not any(isinstance(e, Unknown) for e in whole) or path.name == "hooks.bin"
    assert isinstance(whole[-1], Exit)
    assert drive([data[i : i + 1] for i in range(len(data))]) == (whole, False)
    rng = random.Random(path.name)
    for _ in range(20):
        points = [rng.randrange(len(data)) for _ in range(rng.randrange(1, 40))]
        assert drive(split_at(data, points)) == (whole, False)


def transcript(name: str) -> list[Event]:
    return parse((TRANSCRIPTS / name).read_bytes())


def replies(events: list[Event]) -> list[Reply]:
    return [e for e in events if isinstance(e, Reply)]


def test_transcript_startup() -> None:
    events = transcript("startup.bin")
    attach = events[0]
    assert isinstance(attach, Reply) and attach.flags == 0 and attach.ok and attach.lines == ()
    assert events[1] == SessionChanged(session_id="$0", name="A")
    ours = [r for r in replies(events) if r.flags == 1]
    numbers = [r.number for r in ours]
    assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers)
    by_first = {r.lines[0].split("\t")[0] if r.lines else "": r for r in ours}
    assert all(len(row.split("\t")) == 5 for row in by_first["P"].lines)
    assert [row.split("\t")[3] for row in by_first["P"].lines] == ["%0", "%2", "%1"]
    assert ("%0", "%2", "%1") in [r.lines for r in ours]
    errors = [r.lines for r in ours if not r.ok]
    assert errors == [("parse error: unknown command: bogus-command",), ("can't find pane: %9999",)]
    one = [r.lines for r in ours].index(("one",))
    assert ours[one + 1].lines == ("two",) and ours[one + 1].number == ours[one].number + 1
    for guard in ["%end 1 2 1", "%begin 1 2 1", "%error 1 2 1"]:
        assert (guard,) in [r.lines for r in ours]
    assert events[-1] == Exit(reason=None)


def test_transcript_notifications() -> None:
    events = transcript("notifications.bin")
    kinds = {type(e) for e in events}
    assert kinds >= {
        Reply,
        SessionChanged,
        WindowPaneChanged,
        LayoutChange,
        WindowRenamed,
        WindowAdd,
        WindowClose,
        SessionWindowChanged,
        PaneModeChanged,
        SessionsChanged,
        SessionRenamed,
        ClientSessionChanged,
        ClientDetached,
        Exit,
    }
    assert all(r.ok and r.lines == () for r in replies(events)[1:])
    layouts = [e for e in events if isinstance(e, LayoutChange)]
    assert {e.flags for e in layouts} >= {"*", "*Z", ""}
    zoomed = next(e for e in layouts if e.flags == "*Z")
    assert zoomed.visible_layout != zoomed.layout
    renamed = [e for e in events if isinstance(e, WindowRenamed)]
    assert WindowRenamed(window_id="@0", name="alpha", unlinked=False) in renamed
    assert WindowRenamed(window_id="@1", name="beta", unlinked=True) in renamed
    assert {(e.window_id, e.unlinked) for e in events if isinstance(e, WindowAdd)} >= {
        ("@2", False),
        ("@3", True),
    }
    assert {e.unlinked for e in events if isinstance(e, WindowClose)} == {True, False}
    assert SessionRenamed(session_id="$2", name="C2") in events
    moved = [e for e in events if isinstance(e, ClientSessionChanged)]
    assert [(e.session_id, e.name) for e in moved] == [("$1", "B"), ("$0", "A")]
    detached = [e for e in events if isinstance(e, ClientDetached)]
    assert [e.client for e in detached] == [moved[0].client]


def test_transcript_output() -> None:
    events = transcript("output.bin")
    written = b"a\\b\tc \xc3\xa9 \xff\x1b[1m end\r\r\n"  # the tty turns \n into \r\n
    assert Output(pane_id="%1", data=written) in events
    assert ExtendedOutput(pane_id="%2", age_ms=0, data=written) in events
    # 3.3a writes these from inside the refresh-client block: content, not notifications.
    lines = [r.lines for r in replies(events)]
    assert ("%pause %2",) in lines and ("%continue %2",) in lines
    assert not any(isinstance(e, Pause | Continue) for e in events)


def test_transcript_hooks() -> None:
    events = transcript("hooks.bin")
    answer = replies(events)[1]
    assert answer.flags == 1 and answer.lines == ("@0",)
    hook = events[events.index(answer) + 1]
    assert isinstance(hook, Reply) and hook.flags == 0 and hook.lines == ("HOOKOUT",)
    assert hook.number > answer.number
    assert Unknown(line=b"BARE-LINE") in events


def test_transcript_subscriptions() -> None:
    subs = {
        (e.name, e.pane_id): e
        for e in transcript("subscriptions.bin")
        if isinstance(e, SubscriptionChanged)
    }
    assert subs == {
        ("panes", "%0"): SubscriptionChanged(
            name="panes",
            session_id="$0",
            window_id="@0",
            window_index="0",
            pane_id="%0",
            value="%0 0",
        ),
        ("panes", "%1"): SubscriptionChanged(
            name="panes",
            session_id="$0",
            window_id="@0",
            window_index="0",
            pane_id="%1",
            value="%1 1",
        ),
        ("sess", "-"): SubscriptionChanged(
            name="sess",
            session_id="$0",
            window_id="-",
            window_index="-",
            pane_id="-",
            value="A : 1",
        ),
        ("wins", "-"): SubscriptionChanged(
            name="wins",
            session_id="$0",
            window_id="@0",
            window_index="0",
            pane_id="-",
            value="@0",
        ),
    }


def test_transcript_kill_server() -> None:
    events = transcript("kill_server.bin")
    assert events[-3:] == [SessionsChanged(), SessionsChanged(), Exit(reason=None)]


# --- properties -----------------------------------------------------------------------------

_GUARD = st.builds(
    lambda kind, t, n, f: b"%s %d %d %d" % (kind, t, n, f),
    st.sampled_from([b"%begin", b"%end", b"%error"]),
    st.integers(0, 1),
    st.integers(0, 2),
    st.integers(0, 1),
)
_NAMES = [line.split(b" ")[0] for line, _ in NOTIFICATIONS] + [b"%begin", b"%end", b"%error"]
_LINE = st.one_of(
    _GUARD,
    st.sampled_from([line for line, _ in NOTIFICATIONS]),
    st.builds(
        lambda name, tail: name + tail,
        st.sampled_from(_NAMES),
        st.binary(max_size=24).map(lambda b: b.replace(b"\n", b" ")),
    ),
    st.binary(max_size=24).map(lambda b: b.replace(b"\n", b"")),
)
_STREAM = st.builds(
    lambda lines, tail: b"\n".join(lines) + tail,
    st.lists(_LINE, max_size=25),
    st.sampled_from([b"\n", b""]),
)


@given(st.binary(max_size=4096))
def test_any_bytes_give_events_or_protocol_error(data: bytes) -> None:
    drive([data])


@given(_STREAM, st.lists(st.integers(min_value=0), max_size=12), st.sampled_from([16, 1 << 20]))
def test_protocol_like_streams_split_anywhere(
    data: bytes, points: list[int], max_line: int
) -> None:
    assert drive(split_at(data, points), max_line=max_line) == drive([data], max_line=max_line)


# --- command() ------------------------------------------------------------------------------


def test_command_quotes_every_argument() -> None:
    assert command("list-panes", "-a", "-F", "#{pane_id}\t#{pane_tty}") == (
        b"'list-panes' '-a' '-F' '#{pane_id}\t#{pane_tty}'\n"
    )
    assert command("display-message", "-p", "it's") == b"'display-message' '-p' 'it'\\''s'\n"
    assert command("x", "") == b"'x' ''\n"
    assert command("x", "日本") == "'x' '日本'\n".encode()


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("display", "a\nb"),
        ("display", "a\rb"),
        ("display", "a\0b"),
        ("\n",),
        ("A=b",),
        ("x", "\ud800"),
    ],
)
def test_command_refuses(args: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        command(*args)
