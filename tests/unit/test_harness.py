"""The decisions of ``tmuxlocd context`` (``tmuxlocd.harness``), without any I/O."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tmuxlocd import harness, paths
from tmuxlocd.harness import (
    ABSENT,
    FORGET,
    PROMPT,
    START,
    TOOL,
    UNCHANGED,
    Reading,
    State,
    conclude,
    decode_state,
    encode_state,
    expired,
    labelled,
    parse_event,
    parse_min_interval,
    plan,
    render,
    state_name,
)

REPO = str(Path(__file__).resolve().parents[2])

A = (
    'tmux location:\nsession s, window 0 "w", pane 0 %1\nwindow active=1, pane active=1, '
    "layout x\nneighbors: above none; below none; left none; right none\n"
)
B = A.replace("below none", "below %2")


def loc(block: str, etag: str = '"e1"') -> Reading:
    return Reading("location", block, etag)


def step_and_conclude(
    kind: str, prior: State | None, reading: Reading | None, now: int = 1000, floor: int = 0
) -> tuple[bool, harness.Outcome]:
    step = plan(kind, prior, now, floor)
    return step.ask, conclude(kind, step, reading if step.ask else None, now)


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
        ("gemini", "PreCompress", FORGET),
    ],
)
def test_events_of_each_harness(name: str, event: str, kind: str) -> None:
    data = json.dumps({"hook_event_name": event, "session_id": "abc", "prompt": "x"}).encode()
    parsed = parse_event(name, data)
    assert parsed is not None
    assert (parsed.kind, parsed.name, parsed.session) == (kind, event, "abc")


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
        assert event is None or event.kind in (START, PROMPT, TOOL, FORGET)


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


def test_first_prompt_injects_with_turn_one() -> None:
    ask, out = step_and_conclude(PROMPT, None, loc(A))
    assert ask
    assert out.text == labelled(A, 1) and out.text.startswith("tmux location (turn 1):\n")
    assert out.state == State(1, 1000, '"e1"', A)


def test_unchanged_prompt_counts_the_turn_only() -> None:
    prior = State(1, 1000, '"e1"', A)
    step = plan(PROMPT, prior, 2000, 0)
    assert step.ask and step.etag == '"e1"'  # the conditional request
    out = conclude(PROMPT, step, UNCHANGED, 2000)
    assert out.text is None and out.state == State(2, 1000, '"e1"', A)
    # A 200 with the same text (a new ETag, e.g. a daemon restart) is unchanged too.
    out = conclude(PROMPT, step, loc(A, '"e2"'), 2000)
    assert out.text is None and out.state == State(2, 1000, '"e2"', A)


def test_changed_prompt_injects() -> None:
    ask, out = step_and_conclude(PROMPT, State(4, 1000, '"e1"', A), loc(B, '"e2"'), now=5000)
    assert ask and out.text == labelled(B, 5)
    assert out.state == State(5, 5000, '"e2"', B)


def test_tool_call_injects_only_a_change_and_writes_nothing_otherwise() -> None:
    prior = State(3, 1000, '"e1"', A)
    step = plan(TOOL, prior, 2000, 0)
    assert step.ask and step.etag == '"e1"'
    assert conclude(TOOL, step, UNCHANGED, 2000).state is None
    assert conclude(TOOL, step, ABSENT, 2000).state is None
    out = conclude(TOOL, step, loc(B, '"e2"'), 2000)
    assert out.text == labelled(B, 3)  # the turn it happened in
    assert out.state == State(3, 2000, '"e2"', B)


def test_tool_call_before_anything_was_told_asks_nothing() -> None:
    assert not plan(TOOL, None, 0, 0).ask
    assert not plan(TOOL, State(2, 0, "", ""), 0, 0).ask


def test_session_start_tells_and_forgets() -> None:
    ask, out = step_and_conclude(START, State(7, 1000, '"e1"', A), loc(A))
    assert ask and out.text == A  # no turn label: no turn has started
    assert out.state == State(7, 0, "", "")
    ask, out = step_and_conclude(PROMPT, out.state, loc(A))
    assert ask and out.text == labelled(A, 8)


def test_session_start_outside_a_pane() -> None:
    ask, out = step_and_conclude(START, None, ABSENT)
    assert ask and out.text is None and out.state == State(0, 0, "", "")


def test_forget() -> None:
    ask, out = step_and_conclude(FORGET, State(7, 1000, '"e1"', A), None)
    assert not ask and out.text is None and out.state == State(7, 0, "", "")
    assert step_and_conclude(FORGET, None, None)[1].state is None


def test_the_floor() -> None:
    prior = State(1, 1000, '"e1"', A)
    for kind in (PROMPT, TOOL):
        assert not plan(kind, prior, 1000 + 499, 500).ask
        assert plan(kind, prior, 1000 + 500, 500).ask
    out = conclude(PROMPT, plan(PROMPT, prior, 1200, 500), None, 1200)
    assert out.text is None and out.state == State(2, 1000, '"e1"', A)
    # A clock that went backwards does not hold the floor forever.
    assert plan(PROMPT, prior, 10, 500).ask
    # Nothing told yet: the floor does not apply.
    assert plan(PROMPT, State(1, 1000, "", ""), 1001, 500).ask


def test_absent_location() -> None:
    _, out = step_and_conclude(PROMPT, State(1, 1000, '"e1"', A), ABSENT)
    assert out.text is None and out.state == State(2, 1000, '"e1"', A)


events = st.sampled_from([START, PROMPT, TOOL, FORGET])
readings = st.sampled_from([UNCHANGED, ABSENT, loc(A, '"a"'), loc(B, '"b"')])


@settings(max_examples=300)
@given(
    st.lists(st.tuples(events, readings, st.integers(0, 2000)), max_size=30), st.integers(0, 1000)
)
def test_random_schedules(steps: list[tuple[str, Reading, int]], floor: int) -> None:
    """Against a model: what the model was told last is always the state's block; a prompt
    injects iff the location differs from it (floor permitting); nothing is ever told twice
    in a row; turns count prompts."""
    state: State | None = None
    told: str = ""
    turns = 0
    now = 0
    location = ""  # what the daemon would answer
    etag = ""
    for kind, reading, dt in steps:
        now += dt
        if reading.status == "location":
            location, etag = reading.block, reading.etag
        elif reading is ABSENT:
            location, etag = "", ""
        step = plan(kind, state, now, floor)
        real: Reading | None = None
        if step.ask:
            if not location:
                real = ABSENT
            elif step.etag and step.etag == etag:
                real = UNCHANGED
            else:
                real = loc(location, etag)
        out = conclude(kind, step, real, now)
        if kind == PROMPT:
            turns += 1
        if out.text is not None:
            block = out.text if kind == START else location
            assert out.text.endswith(block.split("\n", 1)[1])
            if kind != START:
                assert location != told
                assert out.text.startswith(f"tmux location (turn {turns}):\n")
                told = location
        if kind in (START, FORGET) and (state is not None or kind == START):
            told = ""
        if out.state is not None:
            state = out.state
        if state is not None:
            assert state.block == told
            assert state.turn == turns
        if kind == PROMPT and step.ask and location and location != told:
            raise AssertionError("a changed location was not told")


# ----------------------------------------------------------------------------------------------
# State files and output.


@given(
    st.integers(0, 10**9), st.integers(0, 2**53), st.text(max_size=40), st.sampled_from(["", A, B])
)
def test_state_round_trip(turn: int, time_ms: int, etag: str, block: str) -> None:
    state = State(turn, time_ms, etag, block)
    back = decode_state(encode_state(state))
    assert back is not None
    assert (back.turn, back.time_ms, back.block) == (turn, time_ms, block)
    assert "\n" not in back.etag


@given(st.binary(max_size=200))
def test_any_state_file_decodes_or_is_refused(data: bytes) -> None:
    state = decode_state(data)
    assert state is None or state.block == "" or state.block.startswith(harness.HEAD)


def test_truncated_state_is_refused() -> None:
    data = encode_state(State(1, 2, '"e"', A))
    assert decode_state(data[:-1]) is None
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
        "import sys; sys.path.insert(0, '.'); from tmuxlocd.cli import main; "
        "import tmuxlocd.context; "
        "heavy = {'msgspec', 'aiohttp', 'asyncio', 'tmuxlocd.client', 'tmuxlocd.location', "
        "'typing', 'argparse', 'subprocess', 'socket', 'tomlkit', 'dataclasses', 'json', "
        "'re', 'collections'}; "
        "print(sorted(heavy & set(sys.modules)))"
    )
    # As the installed hook starts it: without site (which itself imports some of these).
    out = subprocess.run(
        [sys.executable, "-S", "-c", code], capture_output=True, text=True, cwd=REPO, check=True
    ).stdout
    assert out.strip() == "[]"
