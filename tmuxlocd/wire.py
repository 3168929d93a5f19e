"""The wire under every client: one HTTP/1.1 exchange on the Unix socket, query strings and
the spelling of ids in URLs (SPEC §4).

Standard library only, and its cheapest parts: ``tmuxlocd notify`` (one process per tmux hook
firing), ``tmuxlocd where`` and the harness hook ``tmuxlocd.context`` (started with
``python -S``) import this and nothing heavier.  The typed clients (``tmuxlocd.client``) build
their URLs with the same functions, so a fast path and a typed client cannot spell a request
differently.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a hook started with python -S pays for every import
if TYPE_CHECKING:
    from collections.abc import Mapping

# ----------------------------------------------------------------------------------------------
# Ids and queries.

_SIGILS = {"pane": "%", "window": "@", "session": "$"}


def id_number(value: str, kind: str) -> str:
    """``self``, or the bare number of a ``kind`` id written ``%3`` or ``3`` (``@``/``$`` for
    windows and sessions): what a URL carries, since a literal ``%`` there would have to be
    written ``%25``.  Raises ValueError for anything else."""
    if value == "self":
        return value
    sigil = _SIGILS[kind]
    number = value.removeprefix(sigil)
    # str.isdigit() accepts other scripts' digits; the daemon's ids are ASCII.
    if not (number.isascii() and number.isdigit()):
        raise ValueError(f"not a {kind} id: {value!r} (expected self, {sigil}N or N)")
    return number


_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_UNRESERVED_OR_COMMA = _UNRESERVED | {ord(",")}


def percent_encode(value: str, *, comma: bool = False) -> str:
    """A query value, percent-encoded byte by byte (urllib.parse costs more to import).
    ``comma`` keeps commas as they are, for lists such as ``types=a,b``."""
    keep = _UNRESERVED_OR_COMMA if comma else _UNRESERVED
    return "".join(chr(b) if b in keep else f"%{b:02X}" for b in value.encode("utf-8", "replace"))


def query_string(params: Mapping[str, str | None], *, comma: bool = False) -> str:
    pairs = [f"{k}={percent_encode(v, comma=comma)}" for k, v in params.items() if v is not None]
    return "?" + "&".join(pairs) if pairs else ""


def self_target(
    *,
    text: bool = False,
    turn: int | None = None,
    neighbors: bool = False,
    fresh: bool = False,
    accept_ancestor: bool = False,
) -> str:
    """The target of ``GET /v1/self``: the question the fast paths ask most, spelt here once
    for them and for the typed clients."""
    return "/v1/self" + query_string(
        {
            "format": "text" if text else None,
            "turn": str(turn) if turn is not None else None,
            "neighbors": "1" if neighbors else None,
            "fresh": "1" if fresh else None,
            "accept": "ancestor" if accept_ancestor else None,
        }
    )


def notify_target(hook: str | None, server: str | None, target: str | None) -> str:
    """The target of ``POST /v1/notify``, its fields in the query so that a hook job needs no
    JSON encoder.  An empty value is left out: it names nothing."""
    return "/v1/notify" + query_string({"hook": hook or None, "server": server or None,
                                        "target": target or None})


# ----------------------------------------------------------------------------------------------
# One exchange.


class RawResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body


class NoDaemon(Exception):
    """Nothing answered on the daemon's socket."""


def parse_response(data: bytes) -> RawResponse:
    """A whole HTTP/1.1 response (read until the daemon closed) -> status, headers, body."""
    head, sep, body = data.partition(b"\r\n\r\n")
    if not sep:
        raise ValueError("incomplete HTTP response")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"bad status line {lines[0]!r}")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = dechunk(body)
    elif "content-length" in headers:
        body = body[: int(headers["content-length"])]
    return RawResponse(int(parts[1]), headers, body)


def dechunk(data: bytes) -> bytes:
    out = bytearray()
    while True:
        size_line, sep, rest = data.partition(b"\r\n")
        if not sep:
            raise ValueError("truncated chunked body")
        size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
        if size == 0:
            return bytes(out)
        out += rest[:size]
        data = rest[size + 2 :]


def raw_request(
    path: str,
    method: str,
    target: str,
    timeout: float,
    *,
    read_answer: bool = True,
    headers: Mapping[str, str] | None = None,
) -> RawResponse | None:
    """One HTTP/1.1 request with ``Connection: close`` on a fresh Unix-socket connection."""
    # _socket, not socket: the wrapper module imports enum and selectors, which cost a hook
    # job more than the whole exchange with the daemon.
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(path)
        except OSError as exc:
            raise NoDaemon(exc.strerror or str(exc)) from None
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        request = (
            f"{method} {target} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n"
            f"{extra}Connection: close\r\n\r\n"
        )
        sock.sendall(request.encode("utf-8"))
        chunks: list[bytes] = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
            if not read_answer:
                return None  # the daemon has taken the request: that is all a hook needs
        return parse_response(b"".join(chunks))
    finally:
        sock.close()
