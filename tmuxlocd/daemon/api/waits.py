"""``GET /v1/panes/{pane}/wait`` (spec "Pane activity"): a long-poll over the activity
watcher, and the activity filled into the answers that ask for it.

A wait holds no more than its request: a client that hangs up cancels the handler (the
daemon runs aiohttp with handler cancellation), which frees the watch.  Stopping answers
every pending wait 503 ``daemon_stopping`` before the listeners close.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import cast

import msgspec
from aiohttp import web

from tmuxlocd.core import activity
from tmuxlocd.core.activity import pane_with, with_activity
from tmuxlocd.core.agent_view import AGENT_UNTILS
from tmuxlocd.core.answers import Tree, WaitAnswer
from tmuxlocd.core.events import ACTIVITY_TYPES
from tmuxlocd.core.location import Location
from tmuxlocd.core.queries import Selection
from tmuxlocd.daemon.activity_watch import (
    ActivityWatcher,
    Stopping,
    WaitLimit,
)
from tmuxlocd.daemon.api.agents import wait_agent
from tmuxlocd.daemon.api.context import Context
from tmuxlocd.daemon.api.errors import ApiError
from tmuxlocd.daemon.api.lookup import Lookup
from tmuxlocd.daemon.api.params import WaitQuery
from tmuxlocd.daemon.api.replies import json_answer


def _watcher(ctx: Context) -> ActivityWatcher:
    watcher = ctx.activity
    if watcher is None:
        raise ApiError(503, "no_activity", "this daemon does not watch pane activity")
    return watcher


async def get_wait(ctx: Context, request: web.Request, q: WaitQuery) -> web.StreamResponse:
    look = Lookup(ctx, request, accept=q.accept, server=q.server)
    await look.settle(q.pane)
    loc = look.pane(q.pane)
    if q.until in AGENT_UNTILS:
        return await wait_agent(ctx, request, q, loc)
    until = cast(activity.Until, q.until)
    watcher = _watcher(ctx)
    try:
        result = await watcher.wait(loc, until, q.timeout_s)
    except WaitLimit:
        raise ApiError(
            503,
            "too_many_waits",
            f"at most {watcher.max_waits} waits at once",
            {"Retry-After": "1"},
        ) from None
    except Stopping:
        raise ApiError(
            503, "daemon_stopping", "the daemon is stopping; the wait ended unanswered"
        ) from None
    answer = WaitAnswer(
        outcome=result.outcome,
        until=q.until,
        met=activity.met(until, result.outcome),
        location=result.location,
        activity=result.activity,
        before=result.before,
        waited_ms=result.waited_ms,
        reason=result.reason,
    )
    return json_answer(request, answer)


@contextlib.contextmanager
def activity_interest(ctx: Context, selection: Selection, types: Iterable[str]) -> Iterator[None]:
    """A stream that named pane.activity watches its selection's panes while it lives."""
    watcher = ctx.activity
    if watcher is None or not ACTIVITY_TYPES & set(types):
        yield
        return
    with watcher.interest(selection):
        yield


def filled(ctx: Context, locations: Iterable[Location]) -> list[Location]:
    """Locations with their panes' activity read now (``?activity=1``)."""
    watcher = ctx.activity
    if watcher is None:
        return list(locations)
    return [
        with_activity(loc, watcher.current(loc.server.socket_path, loc.pane)) for loc in locations
    ]


def filled_tree(ctx: Context, tree: Tree) -> Tree:
    """The tree with each pane's activity read now (``?activity=1``)."""
    watcher = ctx.activity
    if watcher is None:
        return tree
    replace = msgspec.structs.replace
    return Tree(
        servers=tuple(
            replace(
                server,
                sessions=tuple(
                    replace(
                        session,
                        windows=tuple(
                            replace(
                                window,
                                panes=tuple(
                                    pane_with(p, watcher.current(server.socket_path, p))
                                    for p in window.panes
                                ),
                            )
                            for window in session.windows
                        ),
                    )
                    for session in server.sessions
                ),
            )
            for server in tree.servers
        )
    )


def end_waits(ctx: Context) -> None:
    if ctx.activity is not None:
        ctx.activity.end_waits()
