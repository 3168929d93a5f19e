"""One HTTP/1.1 exchange on the daemon's Unix socket, by hand: the fast paths' wire.

``tmuxlocd notify`` (from tmux hooks), ``where`` and the harness hook
(``tmuxlocd.clients.context``) talk to the daemon with this, needing neither msgspec nor
http.client; standard library only, and its cheapest parts.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a hook started with python -S pays for every import
if TYPE_CHECKING:
    from collections.abc import Mapping


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
