"""Who may ask (SPEC §6): the same uid on Unix sockets; a bearer token and a loopback Host on TCP.

Identity comes from the kernel (``SO_PEERCRED``), never from anything the client says.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import socket
import weakref
from collections.abc import Callable
from typing import Literal

from aiohttp import web

from tmuxlocd.core.memo import Kept
from tmuxlocd.daemon.api.errors import MAX_BODY, ApiError
from tmuxlocd.daemon.api.replies import Prepared
from tmuxlocd.host.identity import PeerFacts, peer_credentials

Listener = Literal["unix", "tcp"]


class Peer:
    """What is known of one connection: the kind of socket it came on and (Unix) the peer's
    pid, both fixed when it was made (``SO_PEERCRED``); the reader of the peer's /proc
    entries, once a question needs them; and its last ``/v1/self`` answer (``memo.Kept``)."""

    __slots__ = ("facts", "kept", "listener")

    def __init__(self, listener: tuple[Listener, int | None]) -> None:
        self.listener = listener
        self.facts: PeerFacts | None = None
        self.kept: Kept[Prepared] | None = None


class Guard:
    """The admission check of one application, and what it learnt of each connection."""

    def __init__(self, tcp_token: str | Callable[[], str] | None, uid: int | None = None) -> None:
        self.tcp_token = tcp_token
        self.uid = os.getuid() if uid is None else uid
        # SO_PEERCRED is fixed when a connection is made, so it is read once per connection,
        # not once per request (a keep-alive client asks many times).
        self._peers: weakref.WeakKeyDictionary[object, Peer] = weakref.WeakKeyDictionary()

    def peer(self, request: web.Request) -> Peer:
        """The record of the connection the request came on (made on its first request)."""
        transport = request.transport
        known = self._peers.get(transport) if transport is not None else None
        if known is None:
            known = Peer(self._read_listener(request))
            if transport is not None:
                self._peers[transport] = known
        return known

    def listener(self, request: web.Request) -> tuple[Listener, int | None]:
        """The kind of socket the request came on, and (Unix) the peer's pid."""
        return self.peer(request).listener

    def peer_facts(self, request: web.Request, pid: int) -> PeerFacts:
        """The reader of the peer's /proc entries kept for this connection (``PeerFacts``)."""
        peer = self.peer(request)
        facts = peer.facts
        if facts is None:
            facts = peer.facts = PeerFacts(pid)
            if request.transport is not None:
                # aiohttp serves a connection's requests in one task, which ends with the
                # connection: its kept file is closed then (a transport may outlive it in a
                # cycle).
                request.task.add_done_callback(lambda _task: facts.close())
        return facts

    def _read_listener(self, request: web.Request) -> tuple[Listener, int | None]:
        transport = request.transport
        sock = transport.get_extra_info("socket") if transport is not None else None
        if sock is None:
            raise ApiError(403, "forbidden", "the connection is gone")
        if sock.family == socket.AF_UNIX:
            peer = peer_credentials(sock)
            if peer is None:
                raise ApiError(403, "forbidden", "no peer credentials on this socket")
            if peer.uid != self.uid:
                raise ApiError(
                    403, "forbidden", f"uid {peer.uid} may not use the daemon of uid {self.uid}"
                )
            return "unix", peer.pid
        return "tcp", None

    def check(self, request: web.Request) -> None:
        """Raises the 401/403/413 a request gets before any handler sees it."""
        kind, _ = self.listener(request)
        if kind == "tcp":
            token = self.tcp_token
            if callable(token):  # a rotated token takes effect at once
                token = token()
            given = request.headers.get("Authorization", "")
            if token is None or not hmac.compare_digest(
                given.encode("utf-8", "replace"), f"Bearer {token}".encode()
            ):
                raise ApiError(
                    401,
                    "unauthorized",
                    "TCP requests need 'Authorization: Bearer <token>'",
                    {"WWW-Authenticate": "Bearer"},
                )
            if not loopback_host(request.headers.get("Host", "")):
                raise ApiError(403, "forbidden", "the Host header must name a loopback host")
        length = request.content_length
        if length is not None and length > MAX_BODY:
            raise ApiError(413, "payload_too_large", f"request body larger than {MAX_BODY} bytes")


def loopback_host(host: str) -> bool:
    """A Host header naming this machine only: the defence against DNS rebinding."""
    if host.startswith("["):
        name = host[1 : host.find("]")] if "]" in host else ""
    else:
        name = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
    if name.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
