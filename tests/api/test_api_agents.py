"""``/v1/agents`` and ``POST /v1/agents/self`` over a real Unix socket, without tmux: what is
refused before any placing, and answers from a hub whose registry is filled by hand."""

from __future__ import annotations

import pytest

from tests.api.apitest import A, Api, spec_state
from tmuxlocd.core.agents import Agent, Proc
from tmuxlocd.core.events import AgentStateChanged
from tmuxlocd.daemon.agent_registry import AgentRegistry
from tmuxlocd.daemon.api import context_of
from tmuxlocd.daemon.hub import Hub


def registry_of(api: Api, hub: Hub) -> AgentRegistry:
    """A registry, on the served app's context as the daemon puts it there."""
    assert api.app is not None
    registry = context_of(api.app).agents = AgentRegistry(hub)
    return registry


async def test_no_registry_is_503(api: Api, hub: Hub) -> None:
    status, body, _ = await api.get("/v1/agents")
    assert status == 503 and body["error"]["code"] == "no_agents"


@pytest.mark.parametrize(
    ("query", "code"),
    [
        ("session_id=s&state=idle", "bad_harness"),
        ("harness=vim&session_id=s&state=idle", "bad_harness"),
        ("harness=claude&state=idle", "bad_session_id"),
        ("harness=claude&session_id=&state=idle", "bad_session_id"),
        ("harness=claude&session_id=s", "bad_state"),
        ("harness=claude&session_id=s&state=sleeping", "bad_state"),
        ("harness=claude&session_id=a%0Ab&state=idle", "bad_session_id"),
    ],
)
async def test_bad_reports_are_400(api: Api, hub: Hub, query: str, code: str) -> None:
    registry_of(api, hub)
    status, body, _ = await api.post(f"/v1/agents/self?{query}")
    assert status == 400 and body["error"]["code"] == code, body


async def test_a_report_from_outside_tmux_is_404(api: Api, hub: Hub) -> None:
    """The test process is in no pane: it can report for none, whatever it says."""
    registry_of(api, hub)
    hub.update(spec_state(A))
    status, body, _ = await api.post("/v1/agents/self?harness=claude&session_id=s&state=idle")
    assert status == 404 and body["error"]["code"] == "not_in_a_pane"
    # The report is in the query: a JSON body is not read for it.
    status, body, _ = await api.post(
        "/v1/agents/self", json={"harness": "claude", "session_id": "s", "state": "idle"}
    )
    assert (status, body["error"]["code"]) == (400, "bad_harness")


async def test_listing_and_filters(api: Api, hub: Hub) -> None:
    registry = registry_of(api, hub)
    hub.update(spec_state(A))
    registry.agents.load(
        [
            Agent("claude", "one", A, "%3", Proc(1, 1), "waiting", "permission: Bash", 5.0),
            Agent("codex", "two", A, "%4", Proc(2, 2), "working", "", 6.0),
        ]
    )
    status, body, _ = await api.get("/v1/agents")
    assert status == 200
    assert [(a["pane"], a["state"], a["reason"]) for a in body["agents"]] == [
        ("%3", "waiting", "permission: Bash"),
        ("%4", "working", None),
    ]
    assert body["agents"][0]["location"]["pane"]["id"] == "%3"
    status, body, _ = await api.get("/v1/agents?state=waiting")
    assert [a["session_id"] for a in body["agents"]] == ["one"]
    status, body, _ = await api.get("/v1/agents?pane=4")
    assert [a["session_id"] for a in body["agents"]] == ["two"]
    status, body, _ = await api.get("/v1/agents?state=asleep")
    assert status == 400 and body["error"]["code"] == "bad_state"


async def test_the_text_form_names_a_neighbours_agent(api: Api, hub: Hub) -> None:
    registry = registry_of(api, hub)
    hub.update(spec_state(A))
    status, _, resp = await api.get("/v1/panes/3?format=text&neighbors=1")
    before = await resp.text() if status == 200 else ""
    registry.agents.load([Agent("codex", "two", A, "%4", Proc(2, 2), "working", "", 6.0)])
    status, _, resp = await api.get("/v1/panes/3?format=text&neighbors=1")
    text = await resp.text()
    assert "right %4 (codex)" in text and "right %4;" not in text
    assert "right %4 " not in before


async def test_a_pane_or_server_gone_ends_its_agents_without_a_stream(api: Api, hub: Hub) -> None:
    """The registry is no subscriber of the hub (``/v1/health`` counts streams)."""
    registry = registry_of(api, hub)
    registry.start()
    hub.update(spec_state(A))
    registry.agents.load([Agent("codex", "two", A, "%4", Proc(2, 2), "working", "", 6.0)])
    status, health, _ = await api.get("/v1/health")
    assert status == 200 and health["subscribers"] == 0
    with hub.subscribe(lambda e: True) as sub:
        hub.server_down(A)
        told = [item.event for item in sub.drain()]
    gone = [e for e in told if isinstance(e, AgentStateChanged)]
    assert [(e.agent.state, e.before) for e in gone] == [("gone", "working")]
    assert len(registry.agents) == 0
    await registry.close()
