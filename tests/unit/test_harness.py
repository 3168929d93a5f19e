"""The decisions of ``tmuxlocd context`` (``tmuxlocd.core.harness``), without any I/O."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmuxlocd.core import harness
from tmuxlocd.core.caller import SHARED_ANCESTOR
from tmuxlocd.core.harness import (
    ABSENT,
    ORIGIN_START,
    ORIGIN_TURN,
    PRECOMPACT,
    PROMPT,
    REBUILT,
    START,
    TOOL,
    UNCHANGED,
    HookEvent,
    Reading,
    State,
    check_from,
    conclude,
    decode_state,
    encode_state,
    expired,
    labelled,
    parse_event,
    parse_min_interval,
    plan,
    rebuilt_in,
    render,
    state_name,
)
from tmuxlocd.core.procstat import ProcStat
from tmuxlocd.host import paths

REPO = str(Path(__file__).resolve().parents[2])

A = (
    'tmux location:\nsession s, window 0 "w", pane 0 %1\nwindow active=1, pane active=1, '
    "layout x\nneighbors: above none; below none; left none; right none\n"
)
B = A.replace("below none", "below %2")


NAMES = {
    "claude": {START: "SessionStart", PROMPT: "UserPromptSubmit", TOOL: "PostToolUse"},
    "codex": {START: "SessionStart", PROMPT: "UserPromptSubmit", TOOL: "PostToolUse"},
    "gemini": {START: "SessionStart", PROMPT: "BeforeAgent", TOOL: "AfterTool"},
    "copilot": {START: "sessionStart", PROMPT: "userPromptSubmitted", TOOL: "postToolUse"},
    "qwen": {START: "SessionStart", PROMPT: "UserPromptSubmit", TOOL: "PostToolUse"},
    "opencode": {START: "SessionStart", PROMPT: "UserPromptSubmit", TOOL: "PostToolUse"},
    # Antigravity CLI has one event, a turn's first model call; the other kinds stand for
    # what the pure functions do with them.
    "antigravity": {START: "PreInvocation", PROMPT: "PreInvocation", TOOL: "PreInvocation"},
    # The harnesses of documented contracts: their events, or one standing for the others.
    "cursor": {START: "sessionStart", PROMPT: "sessionStart", TOOL: "sessionStart"},
    "goose": {START: "SessionStart", PROMPT: "UserPromptSubmit", TOOL: "PostToolUse"},
    "crush": {START: "PreToolUse", PROMPT: "PreToolUse", TOOL: "PreToolUse"},
    "kiro": {START: "agentSpawn", PROMPT: "userPromptSubmit", TOOL: "postToolUse"},
    # pi's extension and Cline's plugin send no session start to the context hook; START
    # stands for what the pure functions do with one.
    "pi": {START: "SessionStart", PROMPT: "UserPromptSubmit", TOOL: "PostToolUse"},
    "cline": {START: "SessionStart", PROMPT: "UserPromptSubmit", TOOL: "PostToolUse"},
}
NAMES["gemini"][PRECOMPACT] = "PreCompress"
# The harnesses whose history keeps what was told (Antigravity CLI's steps last one turn:
# tests/unit/test_more_harnesses.py).
PERSISTENT = tuple(h for h in harness.HARNESSES if h not in harness.EPHEMERAL)
TRANSCRIPT = "/home/u/.gemini/tmp/p/chats/session-1.jsonl"


def ev(
    kind: str,
    name: str = "claude",
    source: str = "",
    transcript: str = TRANSCRIPT,
    trigger: str = "",
) -> HookEvent:
    return HookEvent(name, NAMES[name][kind], kind, "s1", source, transcript, trigger)


def loc(block: str, etag: str = '"e1"') -> Reading:
    return Reading("location", block, etag)


def step_and_conclude(
    kind: str | HookEvent,
    prior: State | None,
    reading: Reading | None,
    now: int = 1000,
    floor: int = 0,
    rebuilt: bool = False,
) -> tuple[bool, harness.Outcome]:
    event = ev(kind) if isinstance(kind, str) else kind
    step = plan(event, prior, now, floor, rebuilt)
    return step.ask, conclude(event, step, reading if step.ask else None, now)


# ----------------------------------------------------------------------------------------------
# Events.


@pytest.mark.parametrize(
    ("name", "event", "kind"),
    [
        ("claude", "SessionStart", START),
        ("claude", "UserPromptSubmit", PROMPT),
        ("claude", "PostToolUse", TOOL),
        ("codex", "SessionStart", START),
        ("codex", "UserPromptSubmit", PROMPT),
        ("codex", "PostToolUse", TOOL),
        ("gemini", "SessionStart", START),
        ("gemini", "BeforeAgent", PROMPT),
        ("gemini", "AfterTool", TOOL),
        ("gemini", "PreCompress", PRECOMPACT),
    ],
)
def test_events_of_each_harness(name: str, event: str, kind: str) -> None:
    data = json.dumps({"hook_event_name": event, "session_id": "abc", "prompt": "x"}).encode()
    parsed = parse_event(name, data)
    assert parsed is not None
    assert (parsed.kind, parsed.name, parsed.session) == (kind, event, "abc")
    assert (parsed.source, parsed.transcript, parsed.trigger) == ("", "", "")


@pytest.mark.parametrize(
    ("name", "event", "tool", "told"),
    [
        ("claude", "PostToolUse", "Bash", True),
        ("claude", "PostToolUse", "Edit", False),
        ("claude", "PostToolUse", "mcp__tmux__where_am_i", False),
        ("codex", "PostToolUse", "Bash", True),
        ("gemini", "AfterTool", "run_shell_command", True),
        ("gemini", "AfterTool", "write_file", False),
        ("qwen", "PostToolUse", "run_shell_command", True),
        ("qwen", "PostToolUse", "edit", False),
    ],
)
def test_only_the_shell_tools_after_event_is_a_tool_event(
    name: str, event: str, tool: str, told: bool
) -> None:
    # Another tool's after-event runs the hook for the agent's state only (agents.ASKING_TOOLS).
    data = json.dumps({"hook_event_name": event, "session_id": "abc", "tool_name": tool})
    parsed = parse_event(name, data.encode())
    assert (parsed is not None and parsed.kind == TOOL) is told


def test_the_fields_a_decision_reads() -> None:
    data = {
        "hook_event_name": "PreCompress",
        "session_id": "abc",
        "source": "resume",
        "transcript_path": TRANSCRIPT,
        "trigger": "manual",
    }
    parsed = parse_event("gemini", json.dumps(data).encode())
    assert parsed is not None
    assert (parsed.source, parsed.transcript, parsed.trigger) == ("resume", TRANSCRIPT, "manual")


@pytest.mark.parametrize(
    "path", ["relative/t.jsonl", "/t\n.jsonl", "/t\r", "/t\x00", "/" + "x" * 4096, 7, None]
)
def test_a_transcript_path_it_would_not_read_later_is_none(path: object) -> None:
    data = {"hook_event_name": "PreCompress", "session_id": "a", "transcript_path": path}
    parsed = parse_event("gemini", json.dumps(data).encode())
    assert parsed is not None and parsed.transcript == ""


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"{",
        b"null",
        b"[]",
        b'"x"',
        b'{"session_id": "a"}',
        b'{"hook_event_name": "UserPromptSubmit"}',
        b'{"hook_event_name": "UserPromptSubmit", "session_id": ""}',
        b'{"hook_event_name": "UserPromptSubmit", "session_id": 7}',
        b'{"hook_event_name": "Stop", "session_id": "a"}',
        b'{"hook_event_name": "BeforeAgent", "session_id": "a"}',  # Gemini's name, not Claude's
        b"[" * 100_000,
        b"\xff",
    ],
)
def test_events_refused(data: bytes) -> None:
    assert parse_event("claude", data) is None


def test_unknown_harness_and_oversized_input() -> None:
    ok = b'{"hook_event_name": "SessionStart", "session_id": "a"}'
    assert parse_event("vim", ok) is None
    assert parse_event("claude", ok + b" " * harness.MAX_STDIN) is None
    long_id = json.dumps({"hook_event_name": "SessionStart", "session_id": "a" * 513})
    assert parse_event("claude", long_id.encode()) is None


@given(st.binary(max_size=300))
def test_any_bytes_parse_or_refuse(data: bytes) -> None:
    for name in harness.HARNESSES:
        event = parse_event(name, data)
        assert event is None or event.kind in (START, PROMPT, TOOL, PRECOMPACT)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("250", 250),
        ("86400000", 86_400_000),
        ("86400001", None),
        ("-1", None),
        ("1.5", None),
        ("", None),
        (" 5", None),
        ("٣", None),
        ("1e3", None),
        ("9" * 40, None),
    ],
)
def test_min_interval(text: str, value: int | None) -> None:
    assert parse_min_interval(text) == value


# ----------------------------------------------------------------------------------------------
# JSON without the json package: the same answers as json.loads.


def reject_constant(name: str) -> object:
    raise ValueError(name)


def json_loads(text: str) -> object:
    return json.loads(text, parse_constant=reject_constant)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300)
@given(json_values, st.sampled_from([None, 0, 2, "\t"]), st.booleans())
def test_parse_json_agrees_with_json_loads(
    value: object, indent: int | str | None, ascii_only: bool
) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert harness.parse_json(text) == json_loads(text)


json_alphabet = st.sampled_from(list('{}[],:"\\/ \t\n0123456789-+.eEtrufalsn\u00e9\x01ux'))


@settings(max_examples=1000)
@given(st.text(json_alphabet, max_size=30))
def test_parse_json_accepts_and_refuses_as_json_loads(text: str) -> None:
    try:
        expected = json_loads(text)
    except (ValueError, RecursionError):
        with pytest.raises(ValueError):
            harness.parse_json(text)
        return
    assert harness.parse_json(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "Infinity",
        "-Infinity",
        "[" * 65 + "]" * 65,
        '{"a": 1,}',
        "[1,]",
        "01",
        "1.",
        ".5",
        "-",
        '"\x01"',
        "",
    ],
)
def test_parse_json_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        harness.parse_json(text)


def test_parse_json_nesting_limit() -> None:
    assert harness.parse_json("[" * 64 + "]" * 64) is not None


# ----------------------------------------------------------------------------------------------
# The schedule.


def told(block: str, turn: int = 1, time_ms: int = 1000, origin: str = ORIGIN_TURN) -> State:
    return State(turn, time_ms, '"e1"', block, origin)


def test_first_prompt_injects_with_turn_one() -> None:
    ask, out = step_and_conclude(PROMPT, None, loc(A))
    assert ask
    assert out.text == labelled(A, 1) and out.text.startswith("tmux location (turn 1):\n")
    assert out.state == State(1, 1000, '"e1"', A, ORIGIN_TURN)


def test_unchanged_prompt_counts_the_turn_only() -> None:
    prior = told(A)
    step = plan(ev(PROMPT), prior, 2000, 0)
    assert step.ask and step.etag == '"e1"'  # the conditional request
    out = conclude(ev(PROMPT), step, UNCHANGED, 2000)
    assert out.text is None and out.state == told(A, turn=2)
    # A 200 with the same text (a new ETag, e.g. a daemon restart) is unchanged too.
    out = conclude(ev(PROMPT), step, loc(A, '"e2"'), 2000)
    assert out.text is None and out.state == State(2, 1000, '"e2"', A, ORIGIN_TURN)


def test_changed_prompt_injects() -> None:
    ask, out = step_and_conclude(PROMPT, told(A, turn=4), loc(B, '"e2"'), now=5000)
    assert ask and out.text == labelled(B, 5)
    assert out.state == State(5, 5000, '"e2"', B, ORIGIN_TURN)


def test_tool_call_injects_only_a_change_and_writes_nothing_otherwise() -> None:
    prior = told(A, turn=3)
    step = plan(ev(TOOL), prior, 2000, 0)
    assert step.ask and step.etag == '"e1"'
    assert conclude(ev(TOOL), step, UNCHANGED, 2000).state is None
    assert conclude(ev(TOOL), step, ABSENT, 2000).state is None
    assert conclude(ev(TOOL), step, loc(A), 2000).state is None
    out = conclude(ev(TOOL), step, loc(B, '"e2"'), 2000)
    assert out.text == labelled(B, 3)  # the turn it happened in
    assert out.state == State(3, 2000, '"e2"', B, ORIGIN_TURN)


def test_tool_call_before_anything_was_told_asks_nothing() -> None:
    assert not plan(ev(TOOL), None, 0, 0).ask
    assert not plan(ev(TOOL), State(2), 0, 0).ask
    assert step_and_conclude(TOOL, None, None)[1].state is None


@pytest.mark.parametrize("name", PERSISTENT)
def test_what_a_session_start_tells_counts_as_told(name: str) -> None:
    """The first prompt of a session carries nothing the session start already told."""
    ask, out = step_and_conclude(ev(START, name, "startup"), None, loc(A))
    assert ask and out.text == A  # no turn label: no turn has started
    assert out.state == State(0, 1000, '"e1"', A, ORIGIN_START)
    step = plan(ev(PROMPT, name), out.state, 2000, 0)
    assert step.ask and step.etag == '"e1"'
    after = conclude(ev(PROMPT, name), step, UNCHANGED, 2000)
    assert after.text is None and after.state == State(1, 1000, '"e1"', A, ORIGIN_START)
    # and a change after it is told, by the prompt or by a tool call
    tool = conclude(ev(TOOL, name), plan(ev(TOOL, name), after.state, 3000, 0), loc(B), 3000)
    assert tool.text == labelled(B, 1)


@pytest.mark.parametrize(
    ("name", "source", "origin", "holds"),
    [
        # A resumed history replays what was told: every injection in Claude Code and
        # Codex, only those of a turn in Gemini CLI (it drops a session start's turn).
        ("claude", "resume", ORIGIN_START, True),
        ("claude", "resume", ORIGIN_TURN, True),
        ("codex", "resume", ORIGIN_START, True),
        ("codex", "resume", ORIGIN_TURN, True),
        ("gemini", "resume", ORIGIN_TURN, True),
        ("gemini", "resume", ORIGIN_START, False),
        # Cleared or compacted: the model lost the history; a new start of the same id or
        # a source this version does not know: tell.
        ("claude", "clear", ORIGIN_TURN, False),
        ("claude", "compact", ORIGIN_TURN, False),
        ("codex", "clear", ORIGIN_START, False),
        ("codex", "compact", ORIGIN_START, False),
        ("gemini", "clear", ORIGIN_TURN, False),
        ("claude", "startup", ORIGIN_TURN, False),
        ("codex", "fork", ORIGIN_TURN, False),
        ("gemini", "", ORIGIN_TURN, False),
    ],
)
def test_a_session_start_tells_what_its_history_does_not_hold(
    name: str, source: str, origin: str, holds: bool
) -> None:
    prior = told(A, turn=7, origin=origin)
    event = ev(START, name, source)
    step = plan(event, prior, 5000, 0)
    assert step.ask and step.held == (A if holds else "")
    assert step.etag == ('"e1"' if holds else "")  # conditional only when it would be 304
    if holds:
        out = conclude(event, step, UNCHANGED, 5000)
        assert out.text is None and out.state is None  # nothing told, nothing written
        out = conclude(event, step, loc(A, '"e9"'), 5000)
        assert out.text is None and out.state == State(7, 1000, '"e9"', A, origin)
    else:
        out = conclude(event, step, loc(A), 5000)
        assert out.text == A and out.state == State(7, 5000, '"e1"', A, ORIGIN_START)
    # Changed since: told once, whatever the history holds.
    out = conclude(event, step, loc(B, '"e2"'), 5000)
    assert out.text == B and out.state == State(7, 5000, '"e2"', B, ORIGIN_START)


def test_a_session_start_outside_a_pane() -> None:
    ask, out = step_and_conclude(ev(START, source="startup"), None, ABSENT)
    assert ask and out.text is None and out.state == State()
    # A cleared session outside a pane holds nothing any more; a resumed one keeps it.
    _, out = step_and_conclude(ev(START, source="clear"), told(A, turn=3), ABSENT)
    assert out.state == State(3)
    _, out = step_and_conclude(ev(START, source="resume"), told(A, turn=3), ABSENT)
    assert out.text is None and out.state is None


def test_no_prompt_repeats_what_a_session_was_told() -> None:
    """The issue's first two commands: start, then a prompt: the location once."""
    state: State | None = None
    texts = []
    for event in (ev(START, source="startup"), ev(PROMPT), ev(PROMPT), ev(TOOL)):
        step = plan(event, state, 1000, 0)
        reading = None
        if step.ask:
            reading = UNCHANGED if step.etag == '"e1"' else loc(A)
        out = conclude(event, step, reading, 1000)
        texts.append(out.text)
        state = out.state or state
    assert texts == [A, None, None, None]


# Gemini CLI's PreCompress and the transcript.


def gemini(kind: str, source: str = "", trigger: str = "auto") -> HookEvent:
    return ev(kind, "gemini", source, TRANSCRIPT, trigger)


def test_precompress_marks_the_transcript_and_forgets_nothing() -> None:
    prior = told(A, turn=2)
    step = plan(gemini(PRECOMPACT), prior, 2000, 0)
    assert not step.ask and step.measure == TRANSCRIPT
    out = conclude(gemini(PRECOMPACT), step, None, 2000, size=4096)
    assert out.text is None
    assert out.state == State(2, 1000, '"e1"', A, ORIGIN_TURN, 4096, TRANSCRIPT)
    assert check_from(gemini(TOOL), out.state) == (TRANSCRIPT, 4096)
    assert check_from(gemini(PROMPT), out.state) == (TRANSCRIPT, 4096)
    assert check_from(gemini(START, "resume"), out.state) == (TRANSCRIPT, 4096)
    assert check_from(gemini(PRECOMPACT), out.state) is None
    # A mark pending stays where it is: the check reads from the first one.
    again = plan(gemini(PRECOMPACT), out.state, 2100, 0)
    assert again.measure == ""
    assert conclude(gemini(PRECOMPACT), again, None, 2100).state is None


def test_precompress_before_anything_was_told_does_nothing() -> None:
    for prior in (None, State(3)):
        step = plan(gemini(PRECOMPACT), prior, 0, 0)
        assert step.measure == "" and not step.ask
        assert conclude(gemini(PRECOMPACT), step, None, 0).state is None


def test_precompress_without_a_transcript() -> None:
    prior = told(A, turn=2)
    # auto: fires before every request; nothing to check later, so nothing changes
    step = plan(gemini(PRECOMPACT), prior, 0, 0)
    assert conclude(gemini(PRECOMPACT), step, None, 0, size=None).state is None
    nopath = ev(PRECOMPACT, "gemini", "", "", "auto")
    assert plan(nopath, prior, 0, 0).measure == ""
    assert conclude(nopath, plan(nopath, prior, 0, 0), None, 0).state is None
    # manual (/compress): compression is forced, so what was told is taken as lost
    for manual in (
        gemini(PRECOMPACT, trigger="manual"),
        ev(PRECOMPACT, "gemini", "", "", "manual"),
    ):
        out = conclude(manual, plan(manual, prior, 0, 0), None, 0, size=None)
        assert out.state == State(2)
        assert conclude(manual, plan(manual, None, 0, 0), None, 0).state is None


@pytest.mark.parametrize("kind", [PROMPT, TOOL])
def test_a_mark_with_no_rebuild_after_it_changes_nothing(kind: str) -> None:
    marked = State(2, 1000, '"e1"', A, ORIGIN_TURN, 4096, TRANSCRIPT)
    step = plan(gemini(kind), marked, 2000, 0, rebuilt=False)
    assert step.ask and step.etag == '"e1"' and step.held == A
    out = conclude(gemini(kind), step, UNCHANGED, 2000)
    assert out.text is None
    assert out.state == told(A, turn=3 if kind == PROMPT else 2)  # the mark is spent


@pytest.mark.parametrize("kind", [PROMPT, TOOL])
def test_a_rebuilt_history_is_told_the_location_again(kind: str) -> None:
    """Gemini compressed the history since the mark: the next prompt, or the tool call that
    follows the compressed request, tells the (unchanged) location."""
    marked = State(2, 1000, '"e1"', A, ORIGIN_TURN, 4096, TRANSCRIPT)
    step = plan(gemini(kind), marked, 2000, 0, rebuilt=True)
    assert step.ask and step.etag == "" and step.held == ""
    out = conclude(gemini(kind), step, loc(A), 2000)
    turn = 3 if kind == PROMPT else 2
    assert out.text == labelled(A, turn)
    assert out.state == State(turn, 2000, '"e1"', A, ORIGIN_TURN)


def test_a_rebuild_seen_under_the_floor_is_told_by_the_next_prompt() -> None:
    marked = State(2, 1000, '"e1"', A, ORIGIN_TURN, 4096, TRANSCRIPT)
    ask, out = step_and_conclude(gemini(TOOL), marked, loc(A), now=1100, floor=500, rebuilt=True)
    assert not ask and out.text is None and out.state == State(2)
    ask, out = step_and_conclude(gemini(PROMPT), out.state, loc(A), now=1200, floor=500)
    assert ask and out.text == labelled(A, 3)


def test_a_gemini_resume_reads_the_mark_its_last_request_left() -> None:
    marked = State(2, 1000, '"e1"', A, ORIGIN_TURN, 4096, TRANSCRIPT)
    _, out = step_and_conclude(gemini(START, "resume"), marked, loc(A), rebuilt=False)
    assert out.text is None and out.state == told(A, turn=2)
    _, out = step_and_conclude(gemini(START, "resume"), marked, loc(A), rebuilt=True)
    assert out.text == A and out.state == told(A, turn=2, origin=ORIGIN_START)


def test_rebuilt_in() -> None:
    line = b'{"$set":{"sessionId":"119aa4c9-39f4-4cf8-8a3e-57745dd53829"}}\n'
    assert line.startswith(REBUILT)
    assert rebuilt_in(b'{"$set":{"lastUpdated":"x"}}\n' + line)
    assert not rebuilt_in(b'{"$set":{"lastUpdated":"x"}}\n{"$set":{"messages":[]}}\n')
    assert not rebuilt_in(b'{"sessionId":"a","projectHash":"b"}\n')  # a new file's first line
    assert not rebuilt_in(b"")


def test_the_floor() -> None:
    prior = told(A)
    for kind in (PROMPT, TOOL):
        assert not plan(ev(kind), prior, 1000 + 499, 500).ask
        assert plan(ev(kind), prior, 1000 + 500, 500).ask
    out = conclude(ev(PROMPT), plan(ev(PROMPT), prior, 1200, 500), None, 1200)
    assert out.text is None and out.state == told(A, turn=2)
    # A clock that went backwards does not hold the floor forever.
    assert plan(ev(PROMPT), prior, 10, 500).ask
    # Nothing told yet: the floor does not apply.
    assert plan(ev(PROMPT), State(1, 1000), 1001, 500).ask


def test_absent_location() -> None:
    _, out = step_and_conclude(PROMPT, told(A), ABSENT)
    assert out.text is None and out.state == told(A, turn=2)


# Against a model of what the model's history holds.

SOURCES = ("startup", "resume", "clear", "compact")
# Gemini's PreCompress, then the request it announced compressed or not.
ACTIONS = [(START, s) for s in SOURCES] + [(PROMPT, ""), (TOOL, "")]
ACTIONS += [(PRECOMPACT, ""), (PRECOMPACT, "compress")]


class World:
    """One harness session and its model: what the history holds of the location, and
    the transcript Gemini CLI appends to (a compression appends ``REBUILT``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.history = ""  # the block the model's history holds
        self.origin = ""  # how it got there
        self.transcript: list[bytes] = []
        self.state: State | None = None
        self.location = ""
        self.etag = ""

    def read(self, etag: str) -> Reading:
        if not self.location:
            return ABSENT
        if etag and etag == self.etag:
            return UNCHANGED
        return loc(self.location, self.etag)

    def size(self) -> int:
        return sum(len(line) for line in self.transcript)

    def rebuilt_since(self, offset: int) -> bool:
        return rebuilt_in(b"".join(self.transcript)[offset:])

    def run(self, kind: str, source: str, now: int, floor: int) -> str | None:
        if kind == START and not (
            source == "resume" and self.origin in harness.REPLAYED[self.name]
        ):
            self.history = self.origin = ""  # the history this start begins holds nothing
        event = HookEvent(self.name, "e", kind, "s1", source, TRANSCRIPT, "auto")
        where = check_from(event, self.state)
        rebuilt = self.rebuilt_since(where[1]) if where is not None else False
        step = plan(event, self.state, now, floor, rebuilt)
        reading = self.read(step.etag) if step.ask else None
        out = conclude(event, step, reading, now, self.size() if step.measure else None)
        if out.text is not None:
            assert self.location and self.location != self.history, "told what it holds"
            self.history = self.location
            self.origin = ORIGIN_START if kind == START else ORIGIN_TURN
        if out.state is not None:
            self.state = out.state
        self.transcript.append(b'{"type":"user"}\n')
        return out.text


steps_strategy = st.lists(
    st.tuples(
        st.sampled_from(ACTIONS),
        st.sampled_from([UNCHANGED, ABSENT, loc(A, '"a"'), loc(B, '"b"')]),  # where it is now
        st.integers(0, 2000),
    ),
    max_size=40,
)


@settings(max_examples=400)
@given(st.sampled_from(PERSISTENT), steps_strategy, st.sampled_from([0, 0, 700]))
def test_random_schedules(
    name: str, steps: list[tuple[tuple[str, str], Reading, int]], floor: int
) -> None:
    """Whatever happens, the hook never tells what the history holds; what it believes the
    history holds is what it holds whenever an event can check; a session start or a prompt
    leaves the model knowing where it is (floor permitting); turns count prompts."""
    world = World(name)
    now = prompts = 0
    for (kind, source), where, dt in steps:
        now += dt
        if where is ABSENT:
            world.location = world.etag = ""
        elif where.status == "location":
            world.location, world.etag = where.block, where.etag
        if kind == PRECOMPACT and name != "gemini":
            continue
        before = world.state
        world.run(kind, "" if kind == PRECOMPACT else source, now, floor)
        if source == "compress":
            world.history = world.origin = ""
            world.transcript.append(REBUILT + b'"s1"}}\n')
        prompts += kind == PROMPT
        state = world.state
        assert state is None or state.turn == prompts
        if kind == PRECOMPACT or state is None:
            continue
        assert state.block == world.history, (kind, source)
        floored = before is not None and bool(before.block) and 0 <= now - before.time_ms < floor
        if kind in (START, PROMPT) and world.location and not (kind == PROMPT and floored):
            assert world.history == world.location, "left without knowing where it is"


@settings(max_examples=300)
@given(
    st.sampled_from(PERSISTENT),
    st.lists(st.sampled_from([(START, "resume"), (PROMPT, ""), (TOOL, ""), (PRECOMPACT, "")])),
)
def test_an_unchanged_location_is_told_once_a_session(
    name: str, events: list[tuple[str, str]]
) -> None:
    """A session that starts, then goes on and is resumed any number of times, and is never
    cleared or compacted, is told an unchanged location exactly once; in a harness whose
    resumed history drops a session start's text (Gemini CLI, Copilot CLI, Qwen Code,
    opencode's plugin), once more after each resume if that first telling was its session
    start's."""
    world = World(name)
    world.location, world.etag = A, '"a"'
    texts = [world.run(START, "startup", 0, 0)]
    resumes = 0
    for kind, source in events:
        texts.append(world.run(kind, source, 0, 0))
        resumes += kind == START
    expected = 1 + (resumes if harness.ORIGIN_START not in harness.REPLAYED[name] else 0)
    assert len([t for t in texts if t is not None]) == expected
    assert texts[0] == A


# ----------------------------------------------------------------------------------------------
# State files and output.


@given(
    st.integers(0, 10**9),
    st.integers(0, 2**53),
    st.text(max_size=40),
    st.sampled_from(["", A, B]),
    st.sampled_from(["", ORIGIN_START, ORIGIN_TURN]),
    st.sampled_from([(-1, ""), (0, TRANSCRIPT), (2**40, "/t x/é.jsonl")]),
)
def test_state_round_trip(
    turn: int, time_ms: int, etag: str, block: str, origin: str, mark: tuple[int, str]
) -> None:
    state = State(turn, time_ms, etag, block, origin, *mark)
    back = decode_state(encode_state(state))
    assert back is not None
    assert (back.turn, back.time_ms, back.block, back.origin) == (turn, time_ms, block, origin)
    assert (back.mark, back.mark_path) == mark
    assert "\n" not in back.etag


def test_a_mark_it_could_not_read_back_is_not_written() -> None:
    for path in ("", "relative", "/a\nb"):
        back = decode_state(encode_state(State(1, 2, "", A, ORIGIN_TURN, 5, path)))
        assert back is not None and (back.mark, back.mark_path) == (-1, "")


def test_a_state_file_of_the_first_format_is_read() -> None:
    """Written before origins and marks: a block there was told with a turn (that version
    forgot what it told at a session start)."""
    assert decode_state(f'tmuxlocd-context 1\n3\n1000\n"e"\n{A}'.encode()) == State(
        3, 1000, '"e"', A, ORIGIN_TURN
    )
    assert decode_state(b"tmuxlocd-context 1\n3\n0\n\n") == State(3)
    assert decode_state(b"tmuxlocd-context 1\n3\n0\n") is None


@pytest.mark.parametrize(
    "fields",
    [
        ["1", "2", "", "elsewhere", "", ""],  # an origin this version does not know
        ["1", "2", "", "turn", "x", TRANSCRIPT],  # a mark that is no offset
        ["1", "2", "", "turn", "5", ""],  # a mark without its transcript
        ["1", "2", "", "turn", "", TRANSCRIPT],  # a transcript without a mark
        ["1", "2", "", "turn", "5", "relative"],
        ["-1", "2", "", "", "", ""],
    ],
)
def test_a_state_file_this_version_did_not_write_is_refused(fields: list[str]) -> None:
    data = "\n".join(["tmuxlocd-context 2", *fields, A]).encode()
    assert decode_state(data) is None


@given(st.binary(max_size=200))
def test_any_state_file_decodes_or_is_refused(data: bytes) -> None:
    state = decode_state(data)
    assert state is None or state.block == "" or state.block.startswith(harness.HEAD)


def test_truncated_state_is_refused() -> None:
    data = encode_state(State(1, 2, '"e"', A, ORIGIN_TURN, 7, TRANSCRIPT))
    assert decode_state(data[:-1]) is None
    assert decode_state(data.split(b"\n", 7)[0]) is None
    assert decode_state(b"") is None


@given(st.text(min_size=1, max_size=600))
def test_state_names_are_plain_file_names(session: str) -> None:
    name = state_name("claude", session)
    assert name.startswith(("claude-", "claude="))
    assert "/" not in name and "\0" not in name
    assert len(name) < 120
    assert "." not in name  # lock and temporary files are "<name>.<suffix>"


def test_state_names_keep_plain_ids_and_digest_others() -> None:
    uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
    assert state_name("codex", uuid) == f"codex-{uuid}"
    assert state_name("codex", "../x") != state_name("codex", "..x")
    assert state_name("codex", "a.b").startswith("codex=")
    assert state_name("codex", "x.lock") != state_name("codex", "x") + ".lock"


def test_render_is_the_documented_shape() -> None:
    for name, event in (
        ("claude", "UserPromptSubmit"),
        ("codex", "PostToolUse"),
        ("gemini", "BeforeAgent"),
    ):
        out = render(name, event, "tmux location:\nsession é\n")
        assert out.endswith(b"\n") and out.count(b"\n") == 1
        assert json.loads(out) == {
            "hookSpecificOutput": {
                "hookEventName": event,
                "additionalContext": "tmux location:\nsession é\n",
            }
        }


def test_the_text_is_facts_not_instructions() -> None:
    text = labelled(A, 3)
    first_words = [line.split(" ", 1)[0] for line in text.splitlines()]
    assert first_words == ["tmux", "session", "window", "neighbors:"]


def test_expiry() -> None:
    day = 86_400.0
    now = 100 * day
    entries = [
        ("claude-old", now - 8 * day),
        ("claude-old.lock", now - 8 * day),
        ("claude-new", now - 10),
        ("claude-new.lock", now - 10),
        ("claude-new.tmp123", now - 10),
        ("codex-gone.tmp9", now - 7200),
        ("codex-gone.lock", now - 60),
    ]
    assert expired(entries, now) == ["claude-old", "claude-old.lock", "codex-gone.tmp9"]
    many = [(f"c-{i}", now - i) for i in range(harness.STATE_MAX_FILES + 5)]
    many += [(f"c-{harness.STATE_MAX_FILES + 1}.lock", now)]
    drop = expired(many, now)
    assert len([d for d in drop if "." not in d]) == 5
    assert f"c-{harness.STATE_MAX_FILES + 1}.lock" in drop
    assert "c-0" not in drop


# ----------------------------------------------------------------------------------------------
# Paths and start-up cost.


def test_clients_find_a_daemon_whose_host_cleared_xdg_runtime_dir() -> None:
    import os

    uid = os.getuid()
    run = f"/run/user/{uid}/tmuxlocd/tmuxlocd.sock"
    tmp = f"/tmp/tmuxlocd-{uid}/tmuxlocd.sock"
    assert paths.client_socket_path({}, exists=lambda p: p == run) == run
    assert paths.client_socket_path({}, exists=lambda p: True) == tmp
    assert paths.client_socket_path({}, exists=lambda p: False) == tmp
    assert paths.client_socket_path({"XDG_RUNTIME_DIR": "/r"}, exists=lambda p: p == run) == (
        "/r/tmuxlocd/tmuxlocd.sock"
    )
    assert paths.client_socket_path({"TMUXLOCD_SOCKET": "/x.sock"}) == "/x.sock"
    assert paths.context_state_dir({"TMUXLOCD_SOCKET": "/d/x.sock"}) == "/d/context"


def test_context_imports_nothing_heavy() -> None:
    code = (
        "import sys; sys.path.insert(0, '.'); from tmuxlocd.clients.cli import main; "
        "import tmuxlocd.clients.context; "
        "heavy = {'msgspec', 'aiohttp', 'asyncio', 'tmuxlocd.clients.client', "
        "'tmuxlocd.core.location', "
        "'typing', 'argparse', 'subprocess', 'socket', 'tomlkit', 'dataclasses', 'json', "
        "'re', 'collections'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    # As the installed hook starts it: without site (which itself imports some of these).
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("path", ["tmuxlocd/clients/context.py", "tmuxlocd/context.py"])
def test_the_hook_file_runs_alone_from_its_depth(path: str, tmp_path: Path) -> None:
    # As a harness starts it: ``python -S <file>`` from anywhere, with no site and no
    # PYTHONPATH: the file finds its package by its own depth (the old path is one up).
    # Nothing to tell (no daemon, no tmux): it exits 0 and prints nothing, after loading
    # the hook module and none of the heavy ones.
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    res = subprocess.run(
        [sys.executable, "-S", str(Path(REPO) / path), "nonesuch"],
        input="{}",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert (res.returncode, res.stdout, res.stderr) == (0, "", "")


# ----------------------------------------------------------------------------------------------
# The session's own pane, by the transcript's writer.


@pytest.mark.parametrize(
    ("fdinfo", "writing"),
    [
        (b"pos:\t0\nflags:\t0100000\nmnt_id:\t29\n", False),  # O_RDONLY|O_LARGEFILE
        (b"pos:\t0\nflags:\t02102001\nmnt_id:\t29\n", True),  # O_WRONLY|O_APPEND|...
        (b"pos:\t0\nflags:\t0100002\n", True),  # O_RDWR
        (b"pos:\t0\n", False),
        (b"flags:\tzz\n", False),
        (b"", False),
    ],
)
def test_opened_for_writing(fdinfo: bytes, writing: bool) -> None:
    assert harness.opened_for_writing(fdinfo) is writing


@pytest.mark.parametrize(
    ("holders", "tty"),
    [
        ([], 0),
        ([harness.Holder(10, 34817)], 34817),
        ([harness.Holder(10, 34817), harness.Holder(11, 34817)], 34817),  # one pane, two
        ([harness.Holder(10, 34817), harness.Holder(11, 34818)], 0),  # two panes: cannot tell
        ([harness.Holder(10, 0, shared=True)], 0),  # Codex's shared app-server writes it
        ([harness.Holder(10, 0)], 0),
        ([harness.Holder(10, 34817), harness.Holder(11, 0)], 0),  # a writer beside the pane
        ([harness.Holder(10, 34817, shared=True)], 0),
    ],
)
def test_writer_tty(holders: list[harness.Holder], tty: int) -> None:
    found, why = harness.writer_tty(holders)
    assert found == tty
    assert (why == "") is (tty != 0)


def test_transcript_writers_are_the_processes_writing_it(tmp_path: Path) -> None:
    from tmuxlocd.clients import context

    transcript = tmp_path / "rollout.jsonl"
    transcript.write_bytes(b"")
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    with transcript.open("rb") as r, transcript.open("ab") as w:
        reader = subprocess.Popen(sleep, stdin=r)
        writer = subprocess.Popen(sleep, stdout=w)
        server = subprocess.Popen([*sleep, "app-server", "--listen", "unix://"], stdout=w)
    try:
        found = {h.pid: h.shared for h in context.transcript_writers(str(transcript))}
        assert found == {writer.pid: False, server.pid: True}
        assert context.transcript_writers(str(tmp_path / "none.jsonl")) == []
    finally:
        for p in (reader, writer, server):
            p.kill()
            p.wait()


def test_ancestor_writers_are_only_the_ancestors_writing_it(tmp_path: Path) -> None:
    from tmuxlocd.clients import context

    transcript = tmp_path / "rollout.jsonl"
    transcript.write_bytes(b"")
    # A parent holding the transcript for writing, its child holding nothing (the hook's
    # place), and a stranger writing it too.
    code = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen(['sleep', '60'])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    with transcript.open("ab") as w:
        parent = subprocess.Popen(
            [sys.executable, "-c", code],
            stdout=subprocess.PIPE,
            pass_fds=(w.fileno(),),
        )
        stranger = subprocess.Popen(sleep, stdout=w)
    try:
        assert parent.stdout is not None
        child = int(parent.stdout.readline())
        found = context.ancestor_writers(str(transcript), child)
        assert [h.pid for h in found] == [parent.pid]
        assert {h.pid for h in context.transcript_writers(str(transcript))} == {
            parent.pid,
            stranger.pid,
        }
        assert context.ancestor_writers(str(transcript), stranger.pid) == []
    finally:
        for p in (parent, stranger):
            p.kill()
            p.wait()
        if parent.stdout is not None:
            parent.stdout.close()


def test_an_ancestor_writing_the_transcript_settles_it_without_a_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below Codex's shared app-server, which writes every rollout itself: nothing, and no
    scan of every process."""
    from tmuxlocd.clients import context
    from tmuxlocd.core import caller
    from tmuxlocd.host import identity

    log = tmp_path / "log"
    event = harness.HookEvent("codex", "UserPromptSubmit", harness.PROMPT, "s1", "", "/t.jsonl")
    scanned: list[str] = []

    def everyone(path: str) -> list[harness.Holder]:
        scanned.append(path)
        return []

    me = os.getpid()
    monkeypatch.setattr(context, "transcript_writers", everyone)
    monkeypatch.setattr(context, "ancestor_writers", lambda *a: [harness.Holder(40, 0, True)])
    monkeypatch.setattr(identity, "read_stat", lambda pid: ProcStat(pid, 1, 0))
    monkeypatch.setattr(caller, "nearest_tty_ancestor", lambda *a, **k: SHARED_ANCESTOR)
    reading = context.read_by_transcript(event, {context.DEBUG_LOG: str(log)})
    assert reading is harness.ABSENT and scanned == []
    assert "the transcript's writers have no tty: pids [40]" in log.read_text()
    assert f"pid={me}" in log.read_text()
    # No ancestor writes it: every process is asked.
    monkeypatch.setattr(context, "ancestor_writers", lambda *a: [])
    assert context.read_by_transcript(event, {}) is harness.ABSENT
    assert scanned == ["/t.jsonl"]


def test_a_harness_on_a_tty_outside_tmux_is_not_placed_by_the_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook's nearest ancestor with a tty is on no pane's tty: the harness runs outside
    tmux, so a writer of its transcript in some pane is not asked about."""
    from tmuxlocd.clients import context
    from tmuxlocd.core import caller
    from tmuxlocd.host import identity

    log = tmp_path / "log"
    event = harness.HookEvent("codex", "UserPromptSubmit", harness.PROMPT, "s1", "", "/t.jsonl")
    asked: list[str] = []

    def writers(path: str) -> list[harness.Holder]:
        asked.append(path)
        return []

    monkeypatch.setattr(context, "transcript_writers", writers)
    monkeypatch.setattr(caller, "nearest_tty_ancestor", lambda *a, **k: 34999)
    reading = context.read_by_transcript(event, {context.DEBUG_LOG: str(log)})
    assert reading is harness.ABSENT and asked == []
    assert "nearest ancestor's is no pane's" in log.read_text()
    monkeypatch.setattr(caller, "nearest_tty_ancestor", lambda *a, **k: 0)
    monkeypatch.setattr(identity, "read_stat", lambda pid: ProcStat(pid, 1, 0))
    assert context.read_by_transcript(event, {context.DEBUG_LOG: str(log)}) is harness.ABSENT
    assert asked == ["/t.jsonl"]
    assert "no process has the session's transcript open for writing" in log.read_text()
