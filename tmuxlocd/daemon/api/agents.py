"""``GET /v1/agents`` and ``POST /v1/agents/self`` (SPEC §13), and the waits on an
agent's state.

A report is placed by the kernel, as ``/v1/self`` is with ``accept=ancestor``: the caller's
pane, never one it names.  So a process can only report for its own pane.
"""

from __future__ import annotations

from aiohttp import web

from tmuxlocd.core import agents
from tmuxlocd.core.agent_view import AgentList, info
from tmuxlocd.core.answers import WaitAnswer
from tmuxlocd.core.location import Location
from tmuxlocd.core.urls import session_key
from tmuxlocd.daemon.agent_registry import AgentRegistry, NoHarness
from tmuxlocd.daemon.api.context import Context
from tmuxlocd.daemon.api.errors import ApiError
from tmuxlocd.daemon.api.lookup import Lookup
from tmuxlocd.daemon.api.params import AgentReportQuery, AgentsQuery, WaitQuery
from tmuxlocd.daemon.api.replies import json_answer


def neighbour_agents(ctx: Context, loc: Location, wanted: bool) -> dict[str, str] | None:
    """The harness of each neighbour of ``loc`` that holds an agent (for the text form)."""
    reg = ctx.agents
    if not wanted or reg is None or not len(reg.agents):
        return None
    return reg.harnesses(loc.server.socket_path) or None


def registry(ctx: Context) -> AgentRegistry:
    found = ctx.agents
    if found is None:
        raise ApiError(503, "no_agents", "this daemon does not keep agents")
    return found


async def get_agents(ctx: Context, request: web.Request, q: AgentsQuery) -> web.StreamResponse:
    reg = registry(ctx)
    look = Lookup(ctx, request, accept=q.accept, server=q.server)
    await look.settle(q.pane, q.window, q.session)
    selection = look.selection(pane=q.pane, window=q.window, session=q.session)
    found = reg.listed(selection, q.state)
    return json_answer(request, AgentList(agents=tuple(info(a, where) for a, where in found)))


async def post_agent_self(
    ctx: Context, request: web.Request, q: AgentReportQuery
) -> web.StreamResponse:
    reg = registry(ctx)
    reason = agents.short(q.reason or "") if q.state == agents.WAITING else ""
    report = agents.Report(q.harness, q.session_id, q.event or "", q.state, reason)
    # Below a shared server the session is placed by the client it is bound to (spec §2),
    # bound anew at its start.
    look = Lookup(
        ctx,
        request,
        accept="ancestor",
        session=session_key(q.harness, q.session_id) or None,
        bind=(q.event or "").lower() == "sessionstart",
    )
    await look.confirm_self()
    where = look.self_location()
    pid, _ = look.caller()
    try:
        answer = reg.report(pid, where, report, client=look.who().caller.client)
    except NoHarness as exc:
        raise ApiError(409, "no_harness_process", str(exc)) from None
    return json_answer(request, answer)


async def wait_agent(
    ctx: Context, request: web.Request, q: WaitQuery, where: Location
) -> web.StreamResponse:
    """``/v1/panes/{pane}/wait?until=agent-idle|agent-waiting``."""
    reg = registry(ctx)
    state = q.until.removeprefix("agent-")
    outcome, agent, waited = await reg.wait(where, state, q.timeout_s)
    now = reg.location(where.server.socket_path, where.pane.id)
    answer = WaitAnswer(
        outcome=outcome,  # type: ignore[arg-type]
        until=q.until,
        met=outcome == q.until,
        location=now,
        waited_ms=round(waited, 3),
        agent=info(agent, now) if agent is not None else None,
    )
    return json_answer(request, answer)
