"""Sans-I/O parser for tmux control mode, and the quoting of the commands we send.

Theory of operation.  A control client's stdout is a stream of ``\\n``-terminated lines.  The
reply to every *command* (not every input line: ``a ; b`` is two commands) is framed by a
guard pair::

    %begin <time> <number> <flags>
    ...content lines, written raw...
    %end <time> <number> <flags>          (or %error ... when the command failed)

``number`` comes from one server-global counter, so numbers are neither per client nor
contiguous.  ``flags`` is 1 for a command read from this client's stdin and 0 for anything else
that runs on the client's queue (the ``attach-session`` from argv, ``after-*`` hooks): a reply
with flags 1 belongs to the oldest command still waiting, one with flags 0 to nobody.

Inside a block every line is content until the first ``%end``/``%error`` line whose number and
flags match the ``%begin``.  Content is never escaped, so it may itself start with ``%`` (a
``list-panes -F '#{pane_id}'`` row is ``%0``) or even look like a guard with another number;
tmux writes each block whole, so no notification can appear inside one.  Outside blocks, lines
starting with ``%`` are notifications; bare lines (the output of commands run by notification
hooks, which tmux sends to some "best" client) and unknown ``%`` lines become ``Unknown`` so that
a newer tmux or a user's hook can never break the connection.

The parser only raises ``ProtocolError`` for what makes the stream untrustworthy: a malformed
``%begin``, a guard outside any block, a line longer than ``max_line``, or EOF inside a block.
After that it stays failed (every later call raises the same error), as h11 does: the owner must
reconnect and resync rather than guess where the framing is.

Nothing here does I/O: ``receive_data`` buffers bytes (``b""`` means EOF) and ``next_event``
returns one event or ``NEED_DATA``.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from typing import Final, TypeAlias

import msgspec

from tmuxlocd.core.errors import ProtocolError

__all__ = [
    "DEFAULT_MAX_LINE",
    "NEED_DATA",
    "ClientDetached",
    "ClientSessionChanged",
    "ConfigError",
    "Continue",
    "ControlParser",
    "Event",
    "Exit",
    "ExtendedOutput",
    "LayoutChange",
    "Message",
    "NeedData",
    "Output",
    "PaneModeChanged",
    "PasteBufferChanged",
    "PasteBufferDeleted",
    "Pause",
    "Reply",
    "SessionChanged",
    "SessionRenamed",
    "SessionWindowChanged",
    "SessionsChanged",
    "SubscriptionChanged",
    "Unknown",
    "WindowAdd",
    "WindowClose",
    "WindowPaneChanged",
    "WindowRenamed",
    "command",
    "unescape_output",
]

# A `list-panes -a` row at 1,000 panes is a few hundred bytes and a %output line is at most a
# few KiB, but a subscription value or a layout of a huge window can be long.  8 MiB leaves room
# for all of that while still stopping a runaway line from eating memory.
DEFAULT_MAX_LINE: Final = 8 * 1024 * 1024

# Guard fields are decimal; 20 digits hold any 64-bit value and keep int() far from Python's
# limit on digit strings (a longer field raises ValueError there, and is malformed here).
_MAX_DIGITS: Final = 20


class NeedData(enum.Enum):
    """Type of the ``NEED_DATA`` sentinel (an enum so that ``is NEED_DATA`` narrows)."""

    NEED_DATA = "NEED_DATA"


NEED_DATA: Final = NeedData.NEED_DATA


# --- events -------------------------------------------------------------------------------
#
# gc=False: events hold only str/bytes/int/bool and tuples of str, so they can never be part of
# a reference cycle, and the collector has no reason to track the thousands of them a busy
# connection produces.


class Reply(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One ``%begin`` .. ``%end``/``%error`` block.

    ``flags == 1``: the reply to the oldest of our commands still waiting.  ``flags == 0``: a
    block that belongs to nobody (the initial attach, ``after-*`` hooks).  ``lines`` are decoded
    as UTF-8 with errors replaced: the rows we ask for carry only ids, numbers and vis-encoded
    names, which are always valid.
    """

    number: int
    time: int
    flags: int
    ok: bool
    lines: tuple[str, ...]


class Output(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%output``: bytes a pane wrote, already unescaped."""

    pane_id: str
    data: bytes


class ExtendedOutput(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%extended-output`` (clients with ``pause-after``): like ``Output`` plus its age."""

    pane_id: str
    age_ms: int
    data: bytes


class LayoutChange(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%layout-change``; sent only for windows of the client's attached session."""

    window_id: str
    layout: str
    visible_layout: str
    flags: str


class WindowAdd(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%window-add`` (``unlinked``: ``%unlinked-window-add``, not in our session)."""

    window_id: str
    unlinked: bool


class WindowClose(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%window-close`` / ``%unlinked-window-close``."""

    window_id: str
    unlinked: bool


class WindowRenamed(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%window-renamed`` / ``%unlinked-window-renamed``.

    ``name`` is as tmux sends it, still vis-encoded (decode with ``names.unvis``).
    """

    window_id: str
    name: str
    unlinked: bool


class WindowPaneChanged(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%window-pane-changed``: the window's active pane changed."""

    window_id: str
    pane_id: str


class SessionChanged(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%session-changed``: *this* client is now attached to that session (raw name)."""

    session_id: str
    name: str


class ClientSessionChanged(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%client-session-changed``: another client moved to that session (raw name)."""

    client: str
    session_id: str
    name: str


class SessionRenamed(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%session-renamed`` (any session, despite what the man page says; raw name)."""

    session_id: str
    name: str


class SessionsChanged(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%sessions-changed``: a session was created or destroyed."""


class SessionWindowChanged(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%session-window-changed``: a session's current window changed."""

    session_id: str
    window_id: str


class ClientDetached(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%client-detached``."""

    client: str


class PaneModeChanged(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%pane-mode-changed``."""

    pane_id: str


class Pause(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%pause``: tmux stopped sending this pane's output to us."""

    pane_id: str


class Continue(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%continue``: output of a paused pane resumes."""

    pane_id: str


class SubscriptionChanged(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%subscription-changed name $S @W idx %P ... : value``.

    ``window_id``, ``window_index`` and ``pane_id`` are ``"-"`` when the subscription is not
    about a window or pane; any fields tmux adds between the pane id and ``" : "`` are ignored.
    ``value`` is the format output, written raw by tmux.
    """

    name: str
    session_id: str
    window_id: str
    window_index: str
    pane_id: str
    value: str


class Exit(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%exit [reason]``: the client is about to end; nothing follows."""

    reason: str | None


class Message(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%message`` (tmux 3.4+): ``display-message -c <this client>`` without ``-p``."""

    text: str


class ConfigError(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%config-error`` (tmux 3.4+): an error in the configuration file.

    Not to be confused with ``tmuxlocd.core.errors.ConfigError``, which is about our own config.
    """

    text: str


class PasteBufferChanged(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%paste-buffer-changed`` (tmux 3.4+)."""

    name: str


class PasteBufferDeleted(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """``%paste-buffer-deleted`` (tmux 3.4+)."""

    name: str


class Unknown(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """Any other line outside a block: a notification we do not know (or whose fields do not
    parse), or a bare line such as the output of a command run by a notification hook."""

    line: bytes


Event: TypeAlias = (
    Reply
    | Output
    | ExtendedOutput
    | LayoutChange
    | WindowAdd
    | WindowClose
    | WindowRenamed
    | WindowPaneChanged
    | SessionChanged
    | ClientSessionChanged
    | SessionRenamed
    | SessionsChanged
    | SessionWindowChanged
    | ClientDetached
    | PaneModeChanged
    | Pause
    | Continue
    | SubscriptionChanged
    | Exit
    | Message
    | ConfigError
    | PasteBufferChanged
    | PasteBufferDeleted
    | Unknown
)


# --- field helpers --------------------------------------------------------------------------


def _int(field: bytes) -> int | None:
    # bytes.isdigit() is ASCII-only, so int() below cannot see signs, spaces or underscores.
    if not field.isdigit() or len(field) > _MAX_DIGITS:
        return None
    return int(field)


def _id(field: bytes, sigil: bytes) -> str | None:
    """``$3`` / ``@7`` / ``%12``, or None: consumers may then rely on the shape of every id."""
    if field[:1] != sigil or _int(field[1:]) is None:
        return None
    return field.decode("ascii")


def _text(field: bytes) -> str:
    return field.decode("utf-8", "replace")


_OCTAL_ESCAPE: Final = re.compile(rb"\\([0-3][0-7][0-7])")
_OCTAL_BYTES: Final = {b"%03o" % i: bytes((i,)) for i in range(256)}


def _octal_byte(match: re.Match[bytes]) -> bytes:
    return _OCTAL_BYTES[match[1]]


def unescape_output(data: bytes) -> bytes:
    """Undo ``%output`` escaping: tmux writes bytes below 0x20 and ``\\`` as ``\\ooo``.

    Every other byte, invalid UTF-8 included, is passed through raw, so this works on bytes.
    A backslash not followed by three octal digits cannot come from tmux and is kept.
    """
    if b"\\" not in data:
        return data
    return _OCTAL_ESCAPE.sub(_octal_byte, data)


# --- notifications --------------------------------------------------------------------------
#
# Each parser gets the bytes after "<name> " (b"" if the line is the bare name) and returns an
# event, or None when the fields do not have the expected shape; the caller then emits Unknown.
# Trailing fields a newer tmux may add are ignored where the last field is not free text.


def _pane_event(
    cls: type[PaneModeChanged | Pause | Continue],
) -> Callable[[bytes], Event | None]:
    def parse(rest: bytes) -> Event | None:
        pane_id = _id(rest.split(b" ", 1)[0], b"%")
        return None if pane_id is None else cls(pane_id=pane_id)

    return parse


def _window_event(
    cls: type[WindowAdd | WindowClose], unlinked: bool
) -> Callable[[bytes], Event | None]:
    def parse(rest: bytes) -> Event | None:
        window_id = _id(rest.split(b" ", 1)[0], b"@")
        return None if window_id is None else cls(window_id=window_id, unlinked=unlinked)

    return parse


def _window_renamed(unlinked: bool) -> Callable[[bytes], Event | None]:
    def parse(rest: bytes) -> Event | None:
        window, _, name = rest.partition(b" ")
        window_id = _id(window, b"@")
        if window_id is None:
            return None
        return WindowRenamed(window_id=window_id, name=_text(name), unlinked=unlinked)

    return parse


def _session_named(
    cls: type[SessionChanged | SessionRenamed],
) -> Callable[[bytes], Event | None]:
    def parse(rest: bytes) -> Event | None:
        session, _, name = rest.partition(b" ")
        session_id = _id(session, b"$")
        return None if session_id is None else cls(session_id=session_id, name=_text(name))

    return parse


def _text_event(
    cls: type[Message | ConfigError],
) -> Callable[[bytes], Event | None]:
    def parse(rest: bytes) -> Event | None:
        return cls(text=_text(rest))

    return parse


def _buffer_event(
    cls: type[PasteBufferChanged | PasteBufferDeleted],
) -> Callable[[bytes], Event | None]:
    def parse(rest: bytes) -> Event | None:
        return cls(name=_text(rest))

    return parse


def _output(rest: bytes) -> Event | None:
    pane, _, data = rest.partition(b" ")
    pane_id = _id(pane, b"%")
    return None if pane_id is None else Output(pane_id=pane_id, data=unescape_output(data))


def _extended_output(rest: bytes) -> Event | None:
    # %extended-output %P <age> [reserved fields...] : <data>; the data starts after the first
    # lone ":" field, so data containing " : " is not split.
    pane, _, rest = rest.partition(b" ")
    age, _, rest = rest.partition(b" ")
    pane_id = _id(pane, b"%")
    age_ms = _int(age)
    if pane_id is None or age_ms is None:
        return None
    while rest:
        field, _, rest = rest.partition(b" ")
        if field == b":":
            return ExtendedOutput(pane_id=pane_id, age_ms=age_ms, data=unescape_output(rest))
    return None


def _layout_change(rest: bytes) -> Event | None:
    # The flags are #{window_raw_flags}, which may be empty: the line then ends in a space.
    fields = rest.split(b" ", 3)
    if len(fields) < 3:
        return None
    window_id = _id(fields[0], b"@")
    if window_id is None:
        return None
    return LayoutChange(
        window_id=window_id,
        layout=_text(fields[1]),
        visible_layout=_text(fields[2]),
        flags=_text(fields[3]) if len(fields) > 3 else "",
    )


def _window_pane_changed(rest: bytes) -> Event | None:
    fields = rest.split(b" ", 2)
    if len(fields) < 2:
        return None
    window_id, pane_id = _id(fields[0], b"@"), _id(fields[1], b"%")
    if window_id is None or pane_id is None:
        return None
    return WindowPaneChanged(window_id=window_id, pane_id=pane_id)


def _client_session_changed(rest: bytes) -> Event | None:
    client, _, rest = rest.partition(b" ")
    session, _, name = rest.partition(b" ")
    session_id = _id(session, b"$")
    if not client or session_id is None:
        return None
    return ClientSessionChanged(client=_text(client), session_id=session_id, name=_text(name))


def _session_window_changed(rest: bytes) -> Event | None:
    fields = rest.split(b" ", 2)
    if len(fields) < 2:
        return None
    session_id, window_id = _id(fields[0], b"$"), _id(fields[1], b"@")
    if session_id is None or window_id is None:
        return None
    return SessionWindowChanged(session_id=session_id, window_id=window_id)


def _client_detached(rest: bytes) -> Event | None:
    return ClientDetached(client=_text(rest)) if rest else None


def _sessions_changed(rest: bytes) -> Event | None:
    return SessionsChanged()


def _subscription_changed(rest: bytes) -> Event | None:
    # Subscription names cannot contain ':' (refresh-client -B splits name:what:format on it),
    # and ids cannot either, so the first " : " ends the header; the value may contain more.
    head, sep, value = rest.partition(b" : ")
    fields = head.split(b" ")
    if not sep or len(fields) < 5:
        return None
    session_id = _id(fields[1], b"$")
    if session_id is None:
        return None
    return SubscriptionChanged(
        name=_text(fields[0]),
        session_id=session_id,
        window_id=_text(fields[2]),
        window_index=_text(fields[3]),
        pane_id=_text(fields[4]),
        value=_text(value),
    )


def _exit(rest: bytes) -> Event | None:
    return Exit(reason=_text(rest) if rest else None)


_NOTIFICATIONS: Final[dict[bytes, Callable[[bytes], Event | None]]] = {
    b"%output": _output,
    b"%extended-output": _extended_output,
    b"%layout-change": _layout_change,
    b"%window-add": _window_event(WindowAdd, unlinked=False),
    b"%unlinked-window-add": _window_event(WindowAdd, unlinked=True),
    b"%window-close": _window_event(WindowClose, unlinked=False),
    b"%unlinked-window-close": _window_event(WindowClose, unlinked=True),
    b"%window-renamed": _window_renamed(unlinked=False),
    b"%unlinked-window-renamed": _window_renamed(unlinked=True),
    b"%window-pane-changed": _window_pane_changed,
    b"%session-changed": _session_named(SessionChanged),
    b"%client-session-changed": _client_session_changed,
    b"%session-renamed": _session_named(SessionRenamed),
    b"%sessions-changed": _sessions_changed,
    b"%session-window-changed": _session_window_changed,
    b"%client-detached": _client_detached,
    b"%pane-mode-changed": _pane_event(PaneModeChanged),
    b"%pause": _pane_event(Pause),
    b"%continue": _pane_event(Continue),
    b"%subscription-changed": _subscription_changed,
    b"%exit": _exit,
    b"%message": _text_event(Message),
    b"%config-error": _text_event(ConfigError),
    b"%paste-buffer-changed": _buffer_event(PasteBufferChanged),
    b"%paste-buffer-deleted": _buffer_event(PasteBufferDeleted),
}

_BEGIN: Final = b"%begin"
_END: Final = b"%end"
_ERROR: Final = b"%error"


def _guard(fields: list[bytes]) -> tuple[int, int, int] | None:
    """(time, number, flags) of a split guard line, or None if it is not exactly that."""
    if len(fields) != 4:
        return None
    time, number, flags = _int(fields[1]), _int(fields[2]), _int(fields[3])
    if time is None or number is None or flags is None:
        return None
    return time, number, flags


class _Block:
    __slots__ = ("flags", "lines", "number", "time")

    def __init__(self, time: int, number: int, flags: int) -> None:
        self.time = time
        self.number = number
        self.flags = flags
        self.lines: list[bytes] = []


class ControlParser:
    """Turns the bytes of a control client's stdout into events.

    Args:
        max_line: the longest line accepted, in bytes without the newline.  A longer line
            (complete or still arriving) raises ``ProtocolError``.
    """

    def __init__(self, *, max_line: int = DEFAULT_MAX_LINE) -> None:
        self._max_line = max_line
        self._buf = bytearray()
        # Bytes at the front of _buf already known to hold no newline, so that data arriving in
        # small pieces is scanned once, not once per piece.
        self._scanned = 0
        self._eof = False
        self._block: _Block | None = None
        self._error: ProtocolError | None = None

    def receive_data(self, data: bytes) -> None:
        """Buffer bytes read from tmux; ``b""`` signals EOF.

        Raises:
            RuntimeError: data after EOF (a bug in the caller, not in tmux).
        """
        if self._eof:
            if data:
                raise RuntimeError("receive_data() called after EOF")
            return
        if data:
            self._buf += data
        else:
            self._eof = True

    def next_event(self) -> Event | NeedData:
        """The next complete event, or ``NEED_DATA`` (also after EOF once everything is out).

        Raises:
            ProtocolError: the stream cannot be framed any more; every later call raises it too.
        """
        if self._error is not None:
            raise self._error
        try:
            while True:
                line = self._next_line()
                if line is None:
                    return NEED_DATA
                event = self._handle_line(line)
                if event is not None:
                    return event
        except ProtocolError as exc:
            self._error = exc
            raise

    def events(self) -> list[Event]:
        """Every event available now (possibly none).

        Raises:
            ProtocolError: as ``next_event``; events before the error are lost with it.
        """
        out: list[Event] = []
        while (event := self.next_event()) is not NEED_DATA:
            out.append(event)
        return out

    def _next_line(self) -> bytes | None:
        buf = self._buf
        end = buf.find(b"\n", self._scanned)
        if end < 0:
            if len(buf) > self._max_line:
                raise ProtocolError(f"line longer than {self._max_line} bytes")
            if not self._eof:
                self._scanned = len(buf)
                return None
            if self._block is not None:
                raise ProtocolError(f"EOF inside the reply block number {self._block.number}")
            if not buf:
                return None
            # tmux ends every line with \n; a tail without one at EOF is still delivered.
            end = len(buf)
        if end > self._max_line:
            raise ProtocolError(f"line longer than {self._max_line} bytes")
        line = bytes(buf[:end])
        del buf[: end + 1]
        self._scanned = 0
        return line

    def _handle_line(self, line: bytes) -> Event | None:
        block = self._block
        if block is not None:
            # Only an exact guard with this block's number and flags ends it; anything else,
            # including a %begin or a guard of another number, is content.
            if line.startswith((_END, _ERROR)):
                fields = line.split(b" ")
                guard = _guard(fields)
                if (
                    guard is not None
                    and fields[0] in (_END, _ERROR)
                    and guard[1] == block.number
                    and guard[2] == block.flags
                ):
                    self._block = None
                    return Reply(
                        number=block.number,
                        time=block.time,
                        flags=block.flags,
                        ok=fields[0] == _END,
                        lines=tuple(_text(content) for content in block.lines),
                    )
            block.lines.append(line)
            return None

        if not line.startswith(b"%"):
            return Unknown(line=line)
        name, _, rest = line.partition(b" ")
        if name == _BEGIN:
            guard = _guard(line.split(b" "))
            if guard is None:
                raise ProtocolError(f"malformed %begin line: {line[:200]!r}")
            self._block = _Block(*guard)
            return None
        if name in (_END, _ERROR):
            raise ProtocolError(f"{name.decode()} outside a block: {line[:200]!r}")
        parse = _NOTIFICATIONS.get(name)
        event = parse(rest) if parse is not None else None
        return Unknown(line=line) if event is None else event


# --- commands -------------------------------------------------------------------------------


def _quote(arg: str) -> str:
    # Inside single quotes tmux's parser (cmd-parse.y, yylex_token) takes every byte literally:
    # no \ escapes, no $ or ~ expansion, and ' ', TAB, ';', '{', '}' and '#' do not end or
    # start anything.  A ' itself closes the quote, so it is written as '\'' : close, an
    # escaped quote outside quotes (yylex_token_escape passes any unknown escape through),
    # reopen.  Every argument starting with a quote also keeps it away from the rules that only
    # apply to a token's first character ('%' conditions, '#' comments, '{' blocks).
    return "'" + arg.replace("'", "'\\''") + "'"


def command(*args: str) -> bytes:
    """One control-mode input line that tmux's parser turns into exactly ``args``.

    ``args[0]`` is the command name.  Arguments may hold any text, TAB included (real TAB
    characters in a ``-F`` format reach tmux as TABs), except LF, CR and NUL.  What a command
    then does with its arguments (format expansion, strftime in ``display-message``, values
    that start with ``-``) is the caller's business; so is a ``command-alias`` that a user
    named after a real command.

    Raises:
        ValueError: no arguments; an argument containing LF (it would end the command, and an
            empty line detaches the client), NUL (tmux reads C strings) or CR (tmux 3.3a would
            pass it through, but no argument should depend on how a line reader treats CRLF);
            a command name containing ``=`` (tmux takes such a first word as an environment
            assignment even when quoted); text not encodable as UTF-8 (lone surrogates).
    """
    if not args:
        raise ValueError("command() needs at least a command name")
    if "=" in args[0]:
        raise ValueError(f"not a command name: {args[0]!r}")
    for arg in args:
        if "\n" in arg or "\r" in arg or "\0" in arg:
            raise ValueError(f"argument cannot contain newline, CR or NUL: {arg[:80]!r}")
    return (" ".join(map(_quote, args)) + "\n").encode("utf-8")
