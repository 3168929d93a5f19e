"""One request's view of the hub: who the caller is, which server, pane or scope it names."""

from __future__ import annotations

import asyncio
from typing import Literal

from aiohttp import web

from tmuxlocd.core import queries
from tmuxlocd.core.answers import SelfAnswer
from tmuxlocd.core.caller import nearest_tty_ancestor
from tmuxlocd.core.errors import SyncFailed
from tmuxlocd.core.location import Location
from tmuxlocd.core.memo import Kept
from tmuxlocd.core.queries import Selection
from tmuxlocd.daemon.api.context import Context
from tmuxlocd.daemon.api.errors import ApiError, ambiguous, sync_failed
from tmuxlocd.daemon.api.replies import Prepared
from tmuxlocd.host.identity import Own, identify, read_stat
from tmuxlocd.host.sockets import resolve_server


class Lookup:
    """Resolves the (already decoded) ids of a query against the hub, lazily."""

    def __init__(
        self,
        ctx: Context,
        request: web.Request,
        *,
        accept: str | None = None,
        server: str | None = None,
        session: str | None = None,
        bind: bool = False,
    ) -> None:
        self.ctx = ctx
        self.hub = ctx.hub
        self.request = request
        self.accept_ancestor = accept is not None
        self.server_name = server
        self.session = session
        self.bind = bind
        self._self: SelfAnswer | None = None
        self._own: tuple[int, Own] | None = None

    def caller(self) -> tuple[int, Own]:
        """The caller's pid and what its own /proc entries say (read once per request)."""
        if self._own is None:
            kind, pid = self.ctx.guard.listener(self.request)
            if kind != "unix" or pid is None:
                raise ApiError(
                    403,  # who is asking cannot be known here: not a malformed request
                    "no_peer_credentials",
                    "'self' needs the Unix socket: TCP carries no peer credentials",
                )
            self._own = pid, self.ctx.guard.peer_facts(self.request, pid).read()
        return self._own

    def who(self) -> SelfAnswer:
        if self._self is None:
            pid, own = self.caller()
            choose = None
            if self.session is not None:
                choose = self.ctx.bindings.chooser(self.session, rebind=self.bind)
            self._self = identify(
                self.hub, pid, accept_ancestor=self.accept_ancestor, known=own, choose=choose
            )
        return self._self

    def keep(self, version: int, ready: Prepared) -> None:
        """Keeps ``ready`` as this connection's answer to this request's question, for
        ``version`` of the model (``views.repeat_self`` serves it again)."""
        _, own = self.caller()
        peer = self.ctx.guard.peer(self.request)
        if peer.kept is None:
            peer.kept = Kept()
        question = (own, self.request.query_string, self.request.headers.get("Accept"))
        peer.kept.put(version, question, ready)

    async def confirm_self(self) -> None:
        """Make ``who()`` answer from a fresh read of tmux when the model may be stale for this
        caller (``queries.may_be_stale``: a respawned pane's new tty, say).  Bounded: one
        re-read per caller's tty and model version (a process really outside tmux asks again
        and again), and concurrent ones share the observers' barrier."""
        answer = self.who()
        pid, own = self.caller()
        tty_nr = own.stat.tty_nr if own.stat is not None else 0
        if not queries.may_be_stale(self.hub, answer):
            # A caller without a tty (a hook its harness started with setsid) that takes its
            # ancestor's pane: that ancestor's tty, when no pane has it, may be a respawned
            # pane's too.  (Asked only for such a caller: one walk up its ancestors.)
            if not (self.accept_ancestor and answer.location is None and tty_nr == 0):
                return
            tty_nr = nearest_tty_ancestor(pid, read_stat)
            if tty_nr == 0 or not self.hub.any_running():
                return
        if not self.ctx.rereads.claim(tty_nr, self.hub.version):
            return
        await self.fresh(True)
        self._self = None

    async def settle(self, *named: str | None) -> None:
        """``confirm_self`` when the query names ``self`` (a pane, window, session or server)."""
        if "self" in named or self.server_name == "self":
            await self.confirm_self()

    def self_location(self) -> Location:
        answer = self.who()
        if answer.location is None:
            raise ApiError(
                404,
                "not_in_a_pane",
                f"the caller (pid {answer.caller.pid}) is not in a tmux pane: {answer.reason}",
            )
        return answer.location

    def server(self) -> str | None:
        """The socket path ``?server=`` names (None: every server)."""
        value = self.server_name
        if value is None:
            return None
        if value == "self":
            return self.self_location().server.socket_path
        path = resolve_server(value)
        if path not in self.hub.servers:
            raise ApiError(404, "not_found", f"no watched tmux server at {path}")
        return path

    def pane(self, pane_id: str) -> Location:
        if pane_id == "self":
            return self.self_location()
        try:
            return queries.find_pane(self.hub, pane_id, self.server())
        except queries.QueryError as exc:
            if exc.code == "ambiguous":
                raise ambiguous("pane", pane_id, exc.servers) from None
            raise ApiError(404, exc.code, exc.message) from None

    def scope(self, kind: Literal["window", "session"], ident: str) -> tuple[str, str]:
        """A window or session id -> (socket path, id), on the one server that has it."""
        if ident == "self":
            loc = self.self_location()
            return loc.server.socket_path, loc.window.id if kind == "window" else loc.session.id
        server = self.server()
        paths = [
            path
            for path, entry in self.hub.servers.items()
            if (server is None or path == server)
            and ident in (entry.state.windows if kind == "window" else entry.state.sessions)
        ]
        if not paths:
            raise ApiError(404, "not_found", f"no {kind} {ident}")
        if len(paths) > 1:
            raise ambiguous(kind, ident, paths)
        return paths[0], ident

    def selection(
        self, *, pane: str | None = None, window: str | None = None, session: str | None = None
    ) -> Selection:
        """The filters ``server``, ``window``, ``session`` (and ``pane`` for streams)."""
        server = self.server()
        pane_id: str | None = None
        if pane is not None:
            loc = self.pane(pane)
            server, pane_id = loc.server.socket_path, loc.pane.id
        window_id = session_id = None
        if window is not None:
            path, window_id = self.scope("window", window)
            server = _same_server(server, path)
        if session is not None:
            path, session_id = self.scope("session", session)
            server = _same_server(server, path)
        return Selection(server=server, pane=pane_id, window=window_id, session=session_id)

    async def fresh(self, wanted: bool) -> None:
        if wanted:
            # Shielded: a client hanging up must not cancel a re-sync others may share.
            try:
                await asyncio.shield(self.hub.sync())
            except SyncFailed as exc:
                raise sync_failed(exc) from None


def _same_server(current: str | None, path: str) -> str:
    if current is not None and current != path:
        raise ApiError(404, "not_found", "the filters name different servers: nothing matches")
    return path
