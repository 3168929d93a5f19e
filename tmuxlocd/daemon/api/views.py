"""Snapshot endpoints (SPEC §4): each reads the hub through tmuxlocd.core.queries, or asks a
re-sync.

A handler gets the application's Context, the request and its decoded query Struct.
"""

from __future__ import annotations

import asyncio
import logging
import time

from aiohttp import web

from tmuxlocd import __version__
from tmuxlocd.core import queries
from tmuxlocd.core.answers import (
    Accepted,
    AlertTestAnswer,
    Health,
    PaneList,
    PaneSummaryList,
    ServerHealth,
    SyncAnswer,
    summary_of,
)
from tmuxlocd.core.errors import SyncFailed
from tmuxlocd.core.events import encoder
from tmuxlocd.daemon.api import waits
from tmuxlocd.daemon.api.agents import neighbour_agents
from tmuxlocd.daemon.api.context import Context
from tmuxlocd.daemon.api.errors import ApiError, sync_failed
from tmuxlocd.daemon.api.lookup import Lookup
from tmuxlocd.daemon.api.params import (
    HealthQuery,
    NeighborsQuery,
    NoQuery,
    NotifyQuery,
    PaneQuery,
    PanesQuery,
    SelfQuery,
    SyncQuery,
    TreeQuery,
)
from tmuxlocd.daemon.api.replies import (
    answer,
    json_answer,
    prepare_json,
    prepare_text,
    respond,
    text_answer,
    wants_text,
)
from tmuxlocd.host.sockets import resolve_server

log = logging.getLogger(__name__)

_ACCEPTED = encoder.encode(Accepted())


def repeat_self(ctx: Context, request: web.Request) -> web.StreamResponse | None:
    """The answer this connection's caller got last time, when it asks the same again about
    an unchanged model (``memo.Kept``); None otherwise.  The kernel's facts are read anew,
    as for every question (its stat: a ``setsid`` or a new parent is seen at once), and the
    question is compared before the query is even decoded: the same query string and
    ``Accept`` header are the same question."""
    peer = ctx.guard.peer(request)
    kept, facts = peer.kept, peer.facts
    if kept is None or facts is None:
        return None
    question = (facts.read(), request.query_string, request.headers.get("Accept"))
    ready = kept.get(ctx.hub.version, question)
    return None if ready is None else respond(request, ready)


async def get_self(ctx: Context, request: web.Request, q: SelfQuery) -> web.StreamResponse:
    look = Lookup(ctx, request, accept=q.accept, session=q.session, bind=q.bind)
    if q.fresh:
        await look.fresh(True)
    else:
        await look.confirm_self()
    text = wants_text(request, q.format)
    version = ctx.hub.version
    who = look.who()
    if not text:
        ready = prepare_json(who)
    elif who.location is None:
        return web.Response(status=204)
    else:
        where = who.location
        ready = prepare_text(where, q.turn, q.neighbors, neighbour_agents(ctx, where, q.neighbors))
    if who.verified_by == "tty" and not q.fresh:
        # Only a caller proven by its tty: its answer depends on the model and its own
        # facts, nothing else (an ancestor's answer depends on its ancestors' too).
        look.keep(version, ready)
    return respond(request, ready)


async def get_pane(ctx: Context, request: web.Request, q: PaneQuery) -> web.StreamResponse:
    look = Lookup(ctx, request, accept=q.accept, server=q.server)
    await look.fresh(q.fresh)
    await look.settle(q.pane)
    loc = look.pane(q.pane)
    if not wants_text(request, q.format):
        return json_answer(request, loc)
    return text_answer(request, loc, q.turn, q.neighbors, neighbour_agents(ctx, loc, q.neighbors))


async def get_panes(ctx: Context, request: web.Request, q: PanesQuery) -> web.StreamResponse:
    look = Lookup(ctx, request, accept=q.accept, server=q.server)
    await look.fresh(q.fresh)
    await look.settle(q.window, q.session)
    matched = queries.select(ctx.hub, look.selection(window=q.window, session=q.session))
    page = matched[q.offset : q.offset + q.limit]
    if q.activity:
        page = waits.filled(ctx, page)
    truncated = q.offset + len(page) < len(matched)
    if q.detail == "summary":
        summaries = tuple(summary_of(loc, with_activity=q.activity) for loc in page)
        return json_answer(
            request, PaneSummaryList(panes=summaries, total=len(matched), truncated=truncated)
        )
    return json_answer(
        request, PaneList(panes=tuple(page), total=len(matched), truncated=truncated)
    )


async def get_neighbors(
    ctx: Context, request: web.Request, q: NeighborsQuery
) -> web.StreamResponse:
    look = Lookup(ctx, request, accept=q.accept, server=q.server)
    await look.fresh(q.fresh)
    await look.settle(q.pane)
    loc = look.pane(q.pane)
    return json_answer(request, queries.neighbors(ctx.hub, loc, q.direction))


async def get_tree(ctx: Context, request: web.Request, q: TreeQuery) -> web.StreamResponse:
    look = Lookup(ctx, request, accept=q.accept, server=q.server)
    await look.fresh(q.fresh)
    await look.settle()
    tree = queries.tree(ctx.hub, look.server())
    return json_answer(request, waits.filled_tree(ctx, tree) if q.activity else tree)


async def get_health(ctx: Context, request: web.Request, q: HealthQuery) -> web.StreamResponse:
    hub = ctx.hub
    now = time.monotonic()
    servers = tuple(
        ServerHealth(
            socket_path=path,
            running=entry.state.running,
            sessions=len(entry.state.sessions),
            windows=len(entry.state.windows),
            panes=len(entry.state.panes),
            observer=entry.observer,
            last_sync_age_s=None if entry.last_sync is None else round(now - entry.last_sync, 3),
            last_error=entry.last_error,
            safety_net_catches=entry.safety_net_catches,
        )
        for path, entry in sorted(hub.servers.items())
    )
    return json_answer(
        request,
        Health(
            # "degraded": some server cannot be read, and what the daemon answers for it may
            # be stale; each such server's last_error says why.
            status="degraded" if hub.degraded() else "ok",
            version=__version__,
            uptime_s=round(now - hub.started, 3),
            servers=servers,
            subscribers=len(hub.subscribers),
            waits=ctx.activity.waits if ctx.activity is not None else 0,
            watched_panes=ctx.activity.watched if ctx.activity is not None else 0,
            alerts=ctx.alerts.health() if ctx.alerts is not None else None,
        ),
    )


async def post_sync(ctx: Context, request: web.Request, q: SyncQuery) -> web.StreamResponse:
    server = Lookup(ctx, request, accept=q.accept, server=q.server).server()
    try:
        seq = await asyncio.shield(ctx.hub.sync(server))
    except SyncFailed as exc:
        raise sync_failed(exc) from None
    return web.Response(body=encoder.encode(SyncAnswer(seq)), content_type="application/json")


async def post_notify(ctx: Context, request: web.Request, q: NotifyQuery) -> web.StreamResponse:
    path = resolve_server(q.server) if q.server else None
    extra = {"tmux_hook": (q.hook or "")[:64], "tmux_server": path or "", "tmux_target": q.target}
    log.debug("notified", extra=extra)
    ctx.hub.notify(path)
    return web.Response(status=202, body=_ACCEPTED, content_type="application/json")


async def post_alerts_test(ctx: Context, request: web.Request, q: NoQuery) -> web.StreamResponse:
    if ctx.alerts is None:
        raise ApiError(
            409, "alerts_off", "alerts are off (alerts = true in the config, or serve --alerts)"
        )
    results = await ctx.alerts.test()
    return json_answer(request, AlertTestAnswer(channels=tuple(results)))


async def get_openapi(ctx: Context, request: web.Request, q: NoQuery) -> web.StreamResponse:
    if ctx.openapi is None:  # made once, from the routes the app was built with
        ctx.openapi = ctx.describe()
    return answer(request, ctx.openapi)
