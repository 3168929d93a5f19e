"""What ``tmuxlocd context <harness>`` injects, and when: the pure part (SPEC §10).

An agent harness runs ``tmuxlocd context`` as a command hook for a few of its events and adds
what the hook prints to the model's context.  Everything decided here is a function of the
event (stdin), the session's state file (what this session was last told) and the reading of
the location; the shell around it (``tmuxlocd.clients.context``) only does the I/O.

The design, per session of a harness: the location is told once, and again only when it
changed or the model's history lost it.  The state file keeps what this session was last
told and how (at a session start, or with a prompt or a tool call), which is what the
model's history holds of the location as far as the hook can know.

- ``SessionStart``: the location, unless the history the session starts with already holds
  it: a ``resume`` replays what was told before (Claude Code and Codex replay every
  injection; Gemini CLI drops those of a session start, see ``REPLAYED``), so an unchanged
  location is not told again.  ``startup``, ``clear`` and ``compact`` start from a history
  without it.  What is told here counts as told, and the turn count goes on.
- a prompt (``UserPromptSubmit``, Gemini's ``BeforeAgent``): counts the turn, and injects the
  location with ``turn N`` and the neighbours only if it differs from what the history holds.
- after a tool call (``PostToolUse``, Gemini's ``AfterTool``): the location only if it changed
  since it was told, so a ``tmux break-pane`` the agent just ran is known before its next
  tool call.  Unchanged costs one conditional request and writes nothing.
- Gemini's ``PreCompress``: fires before every model request (Gemini CLI 0.61 runs it before
  its threshold check), so it is not a sign of compression.  It marks where the session's
  transcript stood; the next event reads what was appended since, and only a history
  rebuilt since then (Gemini CLI records one as ``{"$set":{"sessionId":...}}``: see
  ``REBUILT``) counts as lost.  Prints nothing.
- ``min_interval_ms``: no injection sooner than this after the last one (0: no floor).

Standard library only, and only its C parts: this runs once per prompt and tool call, from a
hook started without site (``python -S``), where the ``json`` package would cost more than
the rest of the hook (it imports ``re``, and ``re`` imports ``enum``).  So JSON is read by a
small parser over ``_json.scanstring`` and written with ``_json.encode_basestring``, the C
functions ``json`` itself uses for strings.
"""

from __future__ import annotations

import zlib
from _json import scanstring

from tmuxlocd.core import harnesses
from tmuxlocd.core.harnesses.base import (
    ORIGIN_START,
    ORIGIN_TURN,
    PRECOMPACT,
    PROMPT,
    START,
    TOOL,
    HookEvent,
)

TYPE_CHECKING = False  # not typing's: the hook pays for every import
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

__all__ = ["ORIGIN_START", "ORIGIN_TURN", "PRECOMPACT", "PROMPT", "START", "TOOL", "HookEvent"]

# Every harness's description is its module in ``core/harnesses``; this module reads the
# one its hook runs for (``harnesses.get``), and names none.
HARNESSES = harnesses.NAMES


def __getattr__(name: str) -> Any:
    """The tables earlier versions kept here, from the descriptions (loaded when asked for:
    the hook needs one harness's only)."""
    if name not in (
        "EVENTS",
        "EVENT_IN_ARGV",
        "SHELL_TOOL",
        "REPLAYED",
        "EPHEMERAL",
    ):  # (``hasattr`` asks for others: load nothing)
        raise AttributeError(name)
    every = harnesses.every()
    if name == "EVENTS":
        return {h.name: dict(h.events) for h in every}
    if name == "EVENT_IN_ARGV":
        return frozenset(h.name for h in every if h.event_in_argv)
    if name == "SHELL_TOOL":
        return {h.name: h.shell_tool for h in every}
    if name == "REPLAYED":
        return {h.name: h.replayed for h in every}
    if name == "EPHEMERAL":
        return frozenset(h.name for h in every if h.ephemeral)
    raise AttributeError(name)


# What Gemini CLI appends to a session's transcript when it rebuilds the chat's history, on
# compression and on resume (``ChatRecordingService.initialize`` with resumed data): the
# line ``{"$set":{"sessionId":"<id>"}}``.  Found after a mark, the history was rebuilt.
REBUILT = b'{"$set":{"sessionId":'
MAX_SCAN = 8 << 20  # more appended than this since the mark: taken as rebuilt

HEAD = "tmux location:\n"
MAX_STDIN = 1 << 20  # a prompt is in the event: large, but not unbounded
MAX_SESSION_ID = 512
MAX_PATH = 4096
MAX_INTERVAL_MS = 86_400_000  # a day: a floor longer than that is a mistake
STATE_MAGIC = "tmuxlocd-context 2"
STATE_MAGIC_1 = "tmuxlocd-context 1"  # before origins and marks; still read
# Old sessions expire: files untouched this long are removed, and at most this many kept.
STATE_MAX_AGE_S = 7 * 86_400
STATE_MAX_FILES = 256


def parse_event(harness: str, data: bytes, event_name: str = "") -> HookEvent | None:
    """The event JSON a harness writes on the hook's stdin -> a HookEvent; None for anything
    this command does not act on (bad JSON, no session, an event it does not know).
    ``event_name``: the event, for the harnesses that do not write it on stdin
    (``Harness.event_in_argv``)."""
    value = payload(data)
    return None if value is None else event_of(harness, value, event_name)


def payload(data: bytes) -> dict[str, object] | None:
    """A hook's stdin as its JSON object; None for nothing, too much, bad JSON or another
    value (parsed once per hook: the event and the agent's state both read it)."""
    if not data or len(data) > MAX_STDIN:
        return None
    try:
        value = parse_json(data.decode("utf-8"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def event_of(harness: str, value: dict[str, object], event_name: str = "") -> HookEvent | None:
    """``parse_event`` on an already decoded payload, as the harness's description says:
    where its event name (the payload's ``hook_event_name``, or the command line's), its
    session and its tool are; a tool event of another tool than the shell tells nothing (the
    location is told after shell commands only, whatever the matchers run; a harness whose
    hooks have no matcher must name the tool); a session start's source in Claude Code's
    words; for a harness that calls its prompt hook before every model call, only a turn's
    first call (``first_call_field`` 0) is a prompt."""
    spec = harnesses.find(harness)
    if spec is None:
        return None
    name = event_name if spec.event_in_argv else value.get(spec.event_field)
    session = session_of(spec.session_field, spec.session_from_cwd, value)
    if not isinstance(name, str) or not isinstance(session, str):
        return None
    kind = spec.events.get(name)
    if kind is None or not session or len(session) > MAX_SESSION_ID:
        return None
    if spec.first_call_field:
        number = value.get(spec.first_call_field)
        if type(number) is not int or number != 0:
            return None
    if kind == TOOL:
        tool = value.get(spec.tool_field)
        if (isinstance(tool, str) or spec.layout == "flat") and tool != spec.shell_tool:
            return None
    source = _word(value.get("source"))
    return HookEvent(
        harness,
        name,
        kind,
        session,
        spec.sources.get(source, source),
        _path(value.get("transcript_path")),
        _word(value.get("trigger")),
    )


def session_of(field: str, from_cwd: bool, value: Mapping[str, object]) -> object:
    """The payload's session id (its harness's field, or the first of ``a|b`` it has); for a
    harness whose payload names none (Kiro CLI's), its
    working directory's: two sessions in one directory then share what they were told, and
    each is told again when its location differs from the other's (never a wrong one)."""
    session = None
    for name in field.split("|"):  # "a|b": the first of them the payload has
        session = value.get(name)
        if session is not None:
            break
    if session is None and from_cwd:
        cwd = value.get("cwd")
        session = f"cwd:{cwd}" if isinstance(cwd, str) and cwd else None
    return session


def _word(value: object) -> str:
    return value if isinstance(value, str) and len(value) <= 64 else ""


def _path(value: object) -> str:
    """A transcript path this hook may read later: absolute, one line, not too long."""
    if not isinstance(value, str) or not value.startswith("/") or len(value) > MAX_PATH:
        return ""
    return "" if "\n" in value or "\r" in value or "\0" in value else value


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
    """``turn``: prompts seen since the session started; ``time_ms``: when the location was
    last injected; ``etag``: the daemon's ETag of that text ("" if unknown); ``block``: that
    text without its turn label, what the model's history holds ("" when it holds none);
    ``origin``: how ``block`` was told (``ORIGIN_START``, ``ORIGIN_TURN``, "" when none);
    ``mark`` and ``mark_path``: the offset in the session's transcript where a compaction
    check starts (-1: none pending)."""

    __slots__ = ("block", "etag", "mark", "mark_path", "origin", "time_ms", "turn")

    def __init__(
        self,
        turn: int = 0,
        time_ms: int = 0,
        etag: str = "",
        block: str = "",
        origin: str = "",
        mark: int = -1,
        mark_path: str = "",
    ) -> None:
        self.turn = turn
        self.time_ms = time_ms
        self.etag = etag
        self.block = block
        self.origin = origin
        self.mark = mark
        self.mark_path = mark_path

    def _key(self) -> tuple[int, int, str, str, str, int, str]:
        return (
            self.turn,
            self.time_ms,
            self.etag,
            self.block,
            self.origin,
            self.mark,
            self.mark_path,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return "State(" + ", ".join(repr(v) for v in self._key()) + ")"


_ORIGINS = ("", ORIGIN_START, ORIGIN_TURN)


def encode_state(state: State) -> bytes:
    etag = "".join(c for c in state.etag if c.isprintable() and c not in "\r\n")
    marked = state.mark >= 0 and _path(state.mark_path) == state.mark_path != ""
    mark, path = (str(state.mark), state.mark_path) if marked else ("", "")
    origin = state.origin if state.origin in _ORIGINS else ""
    return (
        f"{STATE_MAGIC}\n{state.turn}\n{state.time_ms}\n{etag}\n{origin}\n{mark}\n{path}\n"
        f"{state.block}"
    ).encode()


def _numeral(text: str) -> bool:
    return text.isascii() and text.isdigit()


def decode_state(data: bytes) -> State | None:
    """The state file -> a State; None for a file this version did not write whole.  A file
    of the first format (no origin, no mark) reads as told with a turn: that version forgot
    what it told at a session start."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    head, _, _ = text.partition("\n")
    if head == STATE_MAGIC_1:
        parts = text.split("\n", 4)
        if len(parts) != 5:
            return None
        turn, time_ms, etag, block = parts[1:]
        origin, mark, path = (ORIGIN_TURN if block else ""), "", ""
    elif head == STATE_MAGIC:
        parts = text.split("\n", 7)
        if len(parts) != 8:
            return None
        turn, time_ms, etag, origin, mark, path, block = parts[1:]
    else:
        return None
    if not (_numeral(turn) and _numeral(time_ms)) or origin not in _ORIGINS:
        return None
    if block and not (block.startswith(HEAD) and block.endswith("\n")):
        return None
    if (mark and not (_numeral(mark) and path and _path(path) == path)) or (path and not mark):
        return None
    return State(int(turn), int(time_ms), etag, block, origin, int(mark) if mark else -1, path)


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
    """Whether to read the location, with which ETag; the session's state before, the turn
    this event belongs to, what the model's history holds of the location (``held``) and, for
    a ``PreCompress``, the transcript whose size marks where a compaction check starts
    (``measure``, "" for none)."""

    __slots__ = ("ask", "etag", "held", "measure", "prior", "turn")

    def __init__(
        self,
        ask: bool,
        etag: str,
        prior: State | None,
        turn: int,
        held: str = "",
        measure: str = "",
    ) -> None:
        self.ask = ask
        self.etag = etag
        self.prior = prior
        self.turn = turn
        self.held = held
        self.measure = measure


class Outcome:
    """The text to inject (None: print nothing) and the state to save (None: leave it)."""

    __slots__ = ("state", "text")

    def __init__(self, text: str | None, state: State | None) -> None:
        self.text = text
        self.state = state


def check_from(event: HookEvent, prior: State | None) -> tuple[str, int] | None:
    """Before ``plan``: the transcript and offset to read for a rebuilt history (see
    ``REBUILT``), when a ``PreCompress`` left a mark; None when nothing is to be read."""
    if event.kind == PRECOMPACT or prior is None or prior.mark < 0 or not prior.mark_path:
        return None
    return prior.mark_path, prior.mark


def rebuilt_in(appended: bytes) -> bool:
    """Whether what a transcript gained since the mark shows its history rebuilt."""
    return REBUILT in appended


def holds(event: HookEvent, prior: State | None, rebuilt: bool) -> str:
    """What the model's history holds of the location when this event runs, as far as the
    session's state knows: what it was last told, unless the history was rebuilt since, or
    this session start begins a history without it."""
    spec = harnesses.find(event.harness)
    if prior is None or rebuilt or (spec is not None and spec.ephemeral):
        return ""
    if event.kind != START:
        return prior.block
    if event.source == "resume" and spec is not None and prior.origin in spec.replayed:
        return prior.block
    return ""


def _floor_holds(prior: State, now_ms: int, min_interval_ms: int) -> bool:
    elapsed = now_ms - prior.time_ms
    return bool(prior.block) and min_interval_ms > 0 and 0 <= elapsed < min_interval_ms


def plan(
    event: HookEvent,
    prior: State | None,
    now_ms: int,
    min_interval_ms: int,
    rebuilt: bool = False,
) -> Step:
    """Before any I/O but the state file (and the transcript ``check_from`` names, whose
    verdict is ``rebuilt``): whether this event needs the location."""
    kind = event.kind
    turn = prior.turn if prior else 0
    held = holds(event, prior, rebuilt)
    etag = prior.etag if prior is not None and held else ""
    if kind == START:
        return Step(True, etag, prior, turn, held)
    if kind == PRECOMPACT:
        # Only a session that was told something, with no mark pending, needs one.
        pending = prior is not None and prior.mark >= 0
        measure = event.transcript if held and not pending else ""
        return Step(False, "", prior, turn, held, measure)
    if kind == PROMPT:
        turn += 1
        if prior is not None and _floor_holds(prior, now_ms, min_interval_ms):
            return Step(False, "", prior, turn, held)
        return Step(True, etag, prior, turn, held)
    # TOOL: only a location the model was told can have changed, or have been lost.
    if prior is None or not prior.block or _floor_holds(prior, now_ms, min_interval_ms):
        return Step(False, "", prior, turn, held)
    return Step(True, etag, prior, turn, held)


def labelled(block: str, turn: int | None) -> str:
    """The text form with ``(turn N)`` in its first line."""
    if turn is None or not block.startswith(HEAD):
        return block
    return f"tmux location (turn {turn}):\n" + block[len(HEAD) :]


def conclude(
    event: HookEvent,
    step: Step,
    reading: Reading | None,
    now_ms: int,
    size: int | None = None,
) -> Outcome:
    """After the reading (None when ``step.ask`` was false) and, for a ``PreCompress``, the
    size of ``step.measure`` (None when unknown): what to print and to save."""
    prior = step.prior
    if event.kind == PRECOMPACT:
        if prior is None or not step.held or prior.mark >= 0:
            return Outcome(None, None)  # nothing told, or a mark already pending
        if not step.measure or size is None:
            # No transcript to check later: a manual /compress compresses, so forget.
            if event.trigger != "manual":
                return Outcome(None, None)
            return Outcome(None, State(prior.turn, 0, "", "", "", -1, ""))
        mark = State(prior.turn, prior.time_ms, prior.etag, prior.block, prior.origin)
        mark.mark, mark.mark_path = size, step.measure
        return Outcome(None, mark)
    if reading is not None and reading.status == "location" and reading.block != step.held:
        origin = ORIGIN_START if event.kind == START else ORIGIN_TURN
        text = reading.block if event.kind == START else labelled(reading.block, step.turn)
        return Outcome(text, State(step.turn, now_ms, reading.etag, reading.block, origin))
    # Nothing to tell: the history keeps what it holds (and a mark is spent).
    base = prior or State()
    if step.held:
        etag = reading.etag if reading is not None and reading.status == "location" else base.etag
        state = State(step.turn, base.time_ms, etag, step.held, base.origin)
    else:
        state = State(step.turn)
    if prior is None:
        return Outcome(None, None if event.kind == TOOL else state)
    return Outcome(None, None if state == prior else state)


# ----------------------------------------------------------------------------------------------
# The session's own pane, when the hook's tty and ancestors do not lead to it.
#
# A harness may run its hooks under a process that serves several sessions (Codex's shared
# app-server, started by the first TUI and kept by it with that TUI's TMUX_PANE): the daemon's
# walk then stops there (``shared_ancestor``) and the hook is told nothing.  The session may
# still be placed by the kernel: the one process that has the session's transcript open for
# writing.  When Codex runs its TUI with its own app-server, that is the TUI; when the shared
# app-server writes it, that process has no tty and nothing is found.  A process that only
# reads the transcript (``tail -f`` in another pane) is no witness.

VERIFIED_TRANSCRIPT = "verified_by transcript\n"

O_ACCMODE = 0o3  # O_RDONLY 0, O_WRONLY 1, O_RDWR 2 (the same on every Linux architecture)


def opened_for_writing(fdinfo: bytes) -> bool:
    """Whether ``/proc/<pid>/fdinfo/<fd>`` shows a descriptor open for writing (its
    ``flags:`` line, in octal)."""
    for line in fdinfo.split(b"\n"):
        name, _, value = line.partition(b":")
        if name == b"flags":
            try:
                return int(value.strip(), 8) & O_ACCMODE != 0
            except ValueError:
                return False
    return False


class Holder:
    """A process with the transcript open for writing: its controlling tty (0: none), whether
    it serves several sessions (it places nobody), and its session id (what proves the
    tty's pane its own: ``queries.owners``)."""

    __slots__ = ("pid", "session", "shared", "tty_nr")

    def __init__(self, pid: int, tty_nr: int, shared: bool = False, session: int = 0) -> None:
        self.pid = pid
        self.tty_nr = tty_nr
        self.shared = shared
        self.session = session


def writer_tty(holders: list[Holder]) -> tuple[int, str]:
    """The tty of the session's writer, or 0 and why none can be told: no writer, writers on
    several ttys, or a writer with no tty (the shared server itself) beside one with a tty."""
    if not holders:
        return 0, "no process has the session's transcript open for writing"
    ttys = {h.tty_nr for h in holders if h.tty_nr and not h.shared}
    others = [h.pid for h in holders if not h.tty_nr or h.shared]
    if len(ttys) > 1:
        return 0, f"processes on {len(ttys)} ttys have the transcript open for writing"
    if not ttys:
        return 0, f"the transcript's writers have no tty: pids {sorted(others)}"
    if others:
        return 0, f"the transcript's writers include pids {sorted(others)}, with no tty"
    return ttys.pop(), ""


# ----------------------------------------------------------------------------------------------
# Output, in each harness's format.


def render(harness: str, event_name: str, text: str) -> bytes:
    """The hook's stdout, in the harness's format (its description's ``render``)."""
    out = harnesses.get(harness).render(event_name, text)
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
