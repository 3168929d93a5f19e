"""What ``tmuxlocd context <harness>`` injects, and when: the pure part (SPEC §10).

An agent harness runs ``tmuxlocd context`` as a command hook for a few of its events and adds
what the hook prints to the model's context.  Everything decided here is a function of the
event (stdin), the session's state file (what this session was last told) and the reading of
the location; the shell around it (``tmuxlocd.context``) only does the I/O.

The design, per session of a harness:

- ``SessionStart`` (startup, resume, clear, compact): the location, since the model has none
  or lost it, and what was told is forgotten, so the next prompt injects again (the turn
  count goes on).
- a prompt (``UserPromptSubmit``, Gemini's ``BeforeAgent``): counts the turn, and injects the
  location with ``turn N`` and the neighbours only if it differs from the last injected one.
- after a tool call (``PostToolUse``, Gemini's ``AfterTool``): the location only if it changed
  since the last injection, so a ``tmux break-pane`` the agent just ran is known before its
  next tool call.  Unchanged costs one conditional request and writes nothing.
- Gemini's ``PreCompress``: forget what was told (the summary may drop it); prints nothing.
- ``min_interval_ms``: no injection sooner than this after the last one (0: no floor).

Standard library only, and only its C parts: this runs once per prompt and tool call, from a
hook started without site (``python -S``), where the ``json`` package would cost more than
the rest of the hook (it imports ``re``, and ``re`` imports ``enum``).  So JSON is read by a
small parser over ``_json.scanstring`` and written with ``_json.encode_basestring``, the C
functions ``json`` itself uses for strings.
"""

from __future__ import annotations

import zlib
from _json import encode_basestring, scanstring

HARNESSES = ("claude", "codex", "gemini")

START = "start"
PROMPT = "prompt"
TOOL = "tool"
FORGET = "forget"

# Event names as each harness spells them on stdin (``hook_event_name``) and expects them
# back (``hookSpecificOutput.hookEventName``), and what each means here.
EVENTS: dict[str, dict[str, str]] = {
    "claude": {"SessionStart": START, "UserPromptSubmit": PROMPT, "PostToolUse": TOOL},
    "codex": {"SessionStart": START, "UserPromptSubmit": PROMPT, "PostToolUse": TOOL},
    "gemini": {
        "SessionStart": START,
        "BeforeAgent": PROMPT,
        "AfterTool": TOOL,
        "PreCompress": FORGET,
    },
}

# The name of each harness's shell tool (the matcher of its after-tool hook).
SHELL_TOOL = {"claude": "Bash", "codex": "Bash", "gemini": "run_shell_command"}

HEAD = "tmux location:\n"
MAX_STDIN = 1 << 20  # a prompt is in the event: large, but not unbounded
MAX_SESSION_ID = 512
MAX_INTERVAL_MS = 86_400_000  # a day: a floor longer than that is a mistake
STATE_MAGIC = "tmuxlocd-context 1"
# Old sessions expire: files untouched this long are removed, and at most this many kept.
STATE_MAX_AGE_S = 7 * 86_400
STATE_MAX_FILES = 256


class HookEvent:
    """One hook event, as far as it matters here."""

    __slots__ = ("harness", "kind", "name", "session")

    def __init__(self, harness: str, name: str, kind: str, session: str) -> None:
        self.harness = harness
        self.name = name
        self.kind = kind
        self.session = session

    def __repr__(self) -> str:
        return f"HookEvent({self.harness!r}, {self.name!r}, {self.kind!r}, {self.session!r})"


def parse_event(harness: str, data: bytes) -> HookEvent | None:
    """The event JSON a harness writes on the hook's stdin -> a HookEvent; None for anything
    this command does not act on (bad JSON, no session, an event it does not know)."""
    events = EVENTS.get(harness)
    if events is None or not data or len(data) > MAX_STDIN:
        return None
    try:
        value = parse_json(data.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    name = value.get("hook_event_name")
    session = value.get("session_id")
    if not isinstance(name, str) or not isinstance(session, str):
        return None
    kind = events.get(name)
    if kind is None or not session or len(session) > MAX_SESSION_ID:
        return None
    return HookEvent(harness, name, kind, session)


def parse_min_interval(text: str) -> int | None:
    """``--min-interval-ms``: a non-negative integer of milliseconds, at most a day; None
    for anything else (install refuses it, the hook ignores it)."""
    if not text.isascii() or not text.isdigit() or len(text) > 12:
        return None
    value = int(text)
    return value if value <= MAX_INTERVAL_MS else None


# ----------------------------------------------------------------------------------------------
# JSON in, without the json package.

MAX_DEPTH = 64
_WS = frozenset(" \t\n\r")
_DIGITS = frozenset("0123456789")
_LITERALS = {"true": True, "false": False, "null": None}


def parse_json(text: str) -> object:
    """``json.loads`` for one JSON text (RFC 8259), without ``NaN``/``Infinity`` and nested at
    most MAX_DEPTH deep; ValueError for anything else."""
    value, end = _value(text, _skip(text, 0), 0)
    if _skip(text, end) != len(text):
        raise ValueError(f"extra data at {end}")
    return value


def _skip(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i] in _WS:
        i += 1
    return i


def _value(s: str, i: int, depth: int) -> tuple[object, int]:
    if i >= len(s):
        raise ValueError("a value was expected")
    c = s[i]
    if c == '"':
        return scanstring(s, i + 1, True)
    if c == "{" or c == "[":
        if depth >= MAX_DEPTH:
            raise ValueError("nested too deep")
        return (_object if c == "{" else _array)(s, i + 1, depth + 1)
    if c == "-" or c in _DIGITS:
        return _number(s, i)
    for word, value in _LITERALS.items():
        if s.startswith(word, i):
            return value, i + len(word)
    raise ValueError(f"unexpected {c!r} at {i}")


def _object(s: str, i: int, depth: int) -> tuple[object, int]:
    out: dict[str, object] = {}
    i = _skip(s, i)
    if i < len(s) and s[i] == "}":
        return out, i + 1
    while True:
        if i >= len(s) or s[i] != '"':
            raise ValueError(f"a key was expected at {i}")
        key, i = scanstring(s, i + 1, True)
        i = _skip(s, i)
        if i >= len(s) or s[i] != ":":
            raise ValueError(f"':' was expected at {i}")
        out[key], i = _value(s, _skip(s, i + 1), depth)
        i = _skip(s, i)
        if i < len(s) and s[i] == "}":
            return out, i + 1
        if i >= len(s) or s[i] != ",":
            raise ValueError(f"',' or '}}' was expected at {i}")
        i = _skip(s, i + 1)


def _array(s: str, i: int, depth: int) -> tuple[object, int]:
    out: list[object] = []
    i = _skip(s, i)
    if i < len(s) and s[i] == "]":
        return out, i + 1
    while True:
        item, i = _value(s, i, depth)
        out.append(item)
        i = _skip(s, i)
        if i < len(s) and s[i] == "]":
            return out, i + 1
        if i >= len(s) or s[i] != ",":
            raise ValueError(f"',' or ']' was expected at {i}")
        i = _skip(s, i + 1)


def _number(s: str, i: int) -> tuple[object, int]:
    start, n = i, len(s)
    if s[i] == "-":
        i += 1
    if i < n and s[i] == "0":
        i += 1
    elif i < n and s[i] in _DIGITS:
        while i < n and s[i] in _DIGITS:
            i += 1
    else:
        raise ValueError(f"a digit was expected at {i}")
    integral = True
    if i < n and s[i] == ".":
        integral = False
        i = _digits(s, i + 1)
    if i < n and s[i] in "eE":
        integral = False
        i += 1
        if i < n and s[i] in "+-":
            i += 1
        i = _digits(s, i)
    text = s[start:i]
    return (int(text) if integral else float(text)), i


def _digits(s: str, i: int) -> int:
    if i >= len(s) or s[i] not in _DIGITS:
        raise ValueError(f"a digit was expected at {i}")
    while i < len(s) and s[i] in _DIGITS:
        i += 1
    return i


# ----------------------------------------------------------------------------------------------
# State: what a session was last told.


class State:
    """``turn``: prompts seen since the session (re)started; ``time_ms``: when the location
    was last injected; ``etag``: the daemon's ETag of that text ("" if unknown); ``block``:
    that text without its turn label ("" once forgotten: the next prompt injects)."""

    __slots__ = ("block", "etag", "time_ms", "turn")

    def __init__(self, turn: int = 0, time_ms: int = 0, etag: str = "", block: str = "") -> None:
        self.turn = turn
        self.time_ms = time_ms
        self.etag = etag
        self.block = block

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return (self.turn, self.time_ms, self.etag, self.block) == (
            other.turn,
            other.time_ms,
            other.etag,
            other.block,
        )

    def __hash__(self) -> int:
        return hash((self.turn, self.time_ms, self.etag, self.block))

    def __repr__(self) -> str:
        return f"State({self.turn}, {self.time_ms}, {self.etag!r}, {self.block!r})"


def encode_state(state: State) -> bytes:
    etag = "".join(c for c in state.etag if c.isprintable() and c not in "\r\n")
    return f"{STATE_MAGIC}\n{state.turn}\n{state.time_ms}\n{etag}\n{state.block}".encode()


def decode_state(data: bytes) -> State | None:
    """The state file -> a State; None for a file this version did not write whole."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    parts = text.split("\n", 4)
    if len(parts) != 5 or parts[0] != STATE_MAGIC:
        return None
    turn, time_ms, etag, block = parts[1:]
    if not (turn.isascii() and turn.isdigit() and time_ms.isascii() and time_ms.isdigit()):
        return None
    if block and not (block.startswith(HEAD) and block.endswith("\n")):
        return None
    return State(int(turn), int(time_ms), etag, block)


# No "." (a session's lock and temporary files are "<name>.<suffix>"), no "=" (digests).
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")


def state_name(harness: str, session: str) -> str:
    """The file name of a session's state: its id when that is a plain name, else a digest
    (session ids are the harness's UUIDs in practice, but they come from stdin)."""
    if len(session) <= 80 and set(session) <= _SAFE:
        return f"{harness}-{session}"
    raw = session.encode("utf-8", "surrogatepass")
    return f"{harness}={zlib.crc32(raw):08x}{zlib.adler32(raw):08x}{len(raw):x}"


# ----------------------------------------------------------------------------------------------
# Decisions.


class Reading:
    """What the location query answered: ``unchanged`` (304 to the ETag sent), ``location``
    (the text form without turn label, and its ETag, "" when computed without a daemon), or
    ``absent`` (not in a pane, or no answer)."""

    __slots__ = ("block", "etag", "status")

    def __init__(self, status: str, block: str = "", etag: str = "") -> None:
        self.status = status
        self.block = block
        self.etag = etag


UNCHANGED = Reading("unchanged")
ABSENT = Reading("absent")


class Step:
    """Whether to read the location, with which ETag; the session's state before and the turn
    this event belongs to."""

    __slots__ = ("ask", "etag", "prior", "turn")

    def __init__(self, ask: bool, etag: str, prior: State | None, turn: int) -> None:
        self.ask = ask
        self.etag = etag
        self.prior = prior
        self.turn = turn


class Outcome:
    """The text to inject (None: print nothing) and the state to save (None: leave it)."""

    __slots__ = ("state", "text")

    def __init__(self, text: str | None, state: State | None) -> None:
        self.text = text
        self.state = state


def _floor_holds(prior: State, now_ms: int, min_interval_ms: int) -> bool:
    elapsed = now_ms - prior.time_ms
    return bool(prior.block) and min_interval_ms > 0 and 0 <= elapsed < min_interval_ms


def plan(kind: str, prior: State | None, now_ms: int, min_interval_ms: int) -> Step:
    """Before any I/O but the state file: whether this event needs the location."""
    if kind == START:
        return Step(True, "", prior, prior.turn if prior else 0)
    if kind == FORGET:
        return Step(False, "", prior, prior.turn if prior else 0)
    if kind == PROMPT:
        turn = (prior.turn if prior else 0) + 1
        if prior is not None and _floor_holds(prior, now_ms, min_interval_ms):
            return Step(False, "", prior, turn)
        etag = prior.etag if prior is not None and prior.block else ""
        return Step(True, etag, prior, turn)
    # TOOL: only a location the model was told can have changed.
    if prior is None or not prior.block or _floor_holds(prior, now_ms, min_interval_ms):
        return Step(False, "", prior, prior.turn if prior else 0)
    return Step(True, prior.etag, prior, prior.turn)


def labelled(block: str, turn: int | None) -> str:
    """The text form with ``(turn N)`` in its first line."""
    if turn is None or not block.startswith(HEAD):
        return block
    return f"tmux location (turn {turn}):\n" + block[len(HEAD) :]


def conclude(kind: str, step: Step, reading: Reading | None, now_ms: int) -> Outcome:
    """After the reading (None when ``step.ask`` was false): what to print and to save."""
    prior = step.prior
    if kind == START:
        # Forget what was told (the next prompt injects again, whatever this one printed);
        # the turn count goes on.
        text = reading.block if reading is not None and reading.status == "location" else None
        return Outcome(text, State(step.turn, 0, "", ""))
    if kind == FORGET:
        if prior is None:
            return Outcome(None, None)
        return Outcome(None, State(prior.turn, 0, "", ""))
    base = prior or State()
    if reading is None or reading.status != "location":
        if kind == PROMPT:  # the turn is counted all the same
            return Outcome(None, State(step.turn, base.time_ms, base.etag, base.block))
        return Outcome(None, None)
    if reading.block == base.block:
        if kind == PROMPT or reading.etag != base.etag:
            return Outcome(None, State(step.turn, base.time_ms, reading.etag, base.block))
        return Outcome(None, None)
    return Outcome(
        labelled(reading.block, step.turn), State(step.turn, now_ms, reading.etag, reading.block)
    )


# ----------------------------------------------------------------------------------------------
# Output, in each harness's format.


def render(harness: str, event_name: str, text: str) -> bytes:
    """The hook's stdout.  Claude Code, Codex and Gemini CLI all read
    ``{"hookSpecificOutput": {"hookEventName": <event>, "additionalContext": <text>}}`` for
    these events (Codex's schemas allow no other keys in that object)."""
    del harness  # one shape for all three today; kept in the signature for the next one
    out = (
        f'{{"hookSpecificOutput": {{"hookEventName": {encode_basestring(event_name)}, '
        f'"additionalContext": {encode_basestring(text)}}}}}\n'
    )
    return out.encode("utf-8", "surrogateescape")


# ----------------------------------------------------------------------------------------------
# Expiry.


def expired(entries: list[tuple[str, float]], now_s: float) -> list[str]:
    """The files of the state directory to remove, from (name, mtime) of each: sessions
    untouched for STATE_MAX_AGE_S, those beyond the newest STATE_MAX_FILES, and with them
    their lock and any temporary file; a lock or temporary file with no session, after an
    hour."""
    states = {name: mtime for name, mtime in entries if "." not in name}
    newest = sorted(states, key=lambda name: states[name], reverse=True)
    gone = set(newest[STATE_MAX_FILES:])
    gone |= {name for name, mtime in states.items() if now_s - mtime > STATE_MAX_AGE_S}
    drop = set(gone)
    for name, mtime in entries:
        stem = name.split(".", 1)[0]
        if name != stem and (stem in gone or (stem not in states and now_s - mtime > 3600)):
            drop.add(name)
    return sorted(drop)
