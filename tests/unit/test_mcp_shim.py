"""The MCP shim without tmux: its answers as text, and how daemon events become notifications."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from typing import Any

import msgspec
import pytest

pytest.importorskip("mcp")

from tests.tmuxtest import wait_until
from tmuxlocd.clients import mcp as shim
from tmuxlocd.clients.client import Caller, SelfInfo
from tmuxlocd.core.activity import Activity
from tmuxlocd.core.answers import PaneSummaryList
from tmuxlocd.core.events import Event, PaneActivity, PaneChanged, SnapshotEvent
from tmuxlocd.core.location import (
    Location,
    Neighbors,
    PaneRef,
    ServerRef,
    SessionRef,
    WindowRef,
)

SOCKET = "/tmp/tmux-1000/default"


def loc(
    pane: str = "%3",
    *,
    window: str = "@2",
    name: str = "editor",
    active: bool = True,
    pid: int = 100,
    layout: str = "b25d,158x40,0,0{79x40,0,0,3,78x40,80,0,4}",
) -> Location:
    return Location(
        server=ServerRef(socket_path=SOCKET, pid=42),
        session=SessionRef(id="$1", name="work"),
        window=WindowRef(id=window, index=1, name=name, active=True, zoomed=False, layout=layout),
        pane=PaneRef(
            id=pane,
            index=0,
            active=active,
            tty="/dev/pts/5",
            pid=pid,
            left=0,
            top=0,
            width=79,
            height=40,
        ),
        neighbors=Neighbors(right=("%4",)),
    )


def test_where_text_in_a_pane() -> None:
    info = SelfInfo(inside_tmux=True, verified_by="tty", caller=Caller(pid=1), location=loc())
    assert shim.where_text(info, live=True) == (
        "tmux location:\n"
        'session work, window 1 "editor", pane 0 %3\n'
        "window active=1, pane active=1, layout b25d,158x40,0,0{79x40,0,0,3,78x40,80,0,4}\n"
        "neighbors: above none; below none; left none; right %4\n"
        f"verified_by tty; server {SOCKET}; live updates on\n"
    )
    text = shim.where_text(info, live=False)
    assert text.endswith(f"verified_by tty; server {SOCKET}\n{shim.LIVE_OFF}\n")


def test_where_text_outside_tmux_says_to_ask() -> None:
    info = SelfInfo(
        inside_tmux=False,
        reason="no_controlling_tty",
        caller=Caller(pid=1, env_pane="%7", ancestor_pane=None),
    )
    text = shim.where_text(info, live=True)
    assert text.startswith("not in a tmux pane (reason: no_controlling_tty)\n")
    assert "TMUX_PANE=%7 (inherited, unverified)" in text
    assert "Ask the user" in text


def test_where_text_below_a_shared_server_cannot_tell_and_names_no_pane() -> None:
    # Codex's shared app-server: the first TUI's TMUX_PANE, even if a client passed it on.
    info = SelfInfo(
        inside_tmux=False,
        reason="shared_ancestor",
        caller=Caller(pid=1, env_pane="%1", ancestor_pane="%1"),
    )
    text = shim.where_text(info, live=True)
    assert text.startswith("cannot tell which tmux pane this is (reason: shared_ancestor)")
    assert "%1" not in text
    assert "daemon_auto_start = false" in text and "Ask the user" in text


def test_window_summary_has_the_daemons_shape() -> None:
    body = json.loads(shim.window_summary([loc("%4"), loc("%3")]))
    assert body["total"] == 2 and body["truncated"] is False
    assert set(body["panes"][0]) == {
        "id",
        "index",
        "active",
        "left",
        "top",
        "width",
        "height",
        "window_id",
        "session_id",
        "neighbors",
    }


def test_daemon_socket_with_a_cut_down_environment(tmp_path: Any) -> None:
    assert shim.daemon_socket({"TMUXLOCD_SOCKET": "/x/s.sock"}) == "/x/s.sock"
    assert shim.daemon_socket({"XDG_RUNTIME_DIR": "/r"}) == "/r/tmuxlocd/tmuxlocd.sock"


# ----------------------------------------------------------------------------------------------
# Live: a fake daemon client whose streams the test feeds.


class FakeClient:
    def __init__(self) -> None:
        self.streams: dict[tuple[str | None, str | None], asyncio.Queue[Event]] = {}
        self.opened: list[tuple[str | None, str | None]] = []
        self.window_types: tuple[str, ...] = ()

    def queue(self, pane: str | None, window: str | None) -> asyncio.Queue[Event]:
        return self.streams.setdefault((pane, window), asyncio.Queue())

    async def events(
        self,
        *,
        pane: str | None = None,
        window: str | None = None,
        server: str | None = None,
        types: Iterable[str] | None = None,
    ) -> AsyncIterator[Event]:
        self.opened.append((pane, window))
        if window is not None:
            self.window_types = tuple(types or ())
        q = self.queue(pane, window)
        while True:
            yield await q.get()

    def drained(self) -> bool:
        return all(q.empty() for q in self.streams.values())


async def settled(live: shim.Live, client: FakeClient) -> None:
    """Until every queued event was consumed and no notification is pending."""
    await wait_until(lambda: client.drained() and not live._pending, 5.0, "quiet", interval=0.005)


def snapshot(*locations: Location) -> SnapshotEvent:
    return SnapshotEvent(panes=locations)


def changed(location: Location, *fields: str) -> PaneChanged:
    return PaneChanged(location=location, changed=fields)


@pytest.fixture
async def rig() -> AsyncIterator[tuple[shim.Live, FakeClient, list[str]]]:
    client = FakeClient()
    told: list[str] = []

    async def notify(uri: str) -> None:
        told.append(uri)

    live = shim.Live(client, notify)  # type: ignore[arg-type]
    client.queue("self", None).put_nowait(snapshot(loc()))
    client.queue(None, "@2").put_nowait(snapshot(loc(), loc("%4")))
    live.start()
    await live.ready()
    yield live, client, told
    await live.stop()


async def test_a_burst_is_told_once(rig: tuple[shim.Live, FakeClient, list[str]]) -> None:
    live, client, told = rig
    for layout in ("aaaa,1x1,0,0,3", "bbbb,1x1,0,0,3", "cccc,1x1,0,0,3"):
        client.queue("self", None).put_nowait(changed(loc(layout=layout), "window.layout"))
    await settled(live, client)
    assert told == [shim.SELF_URI]
    assert "cccc" in str(live.told[shim.SELF_URI])


async def test_what_a_resource_does_not_show_is_silent(
    rig: tuple[shim.Live, FakeClient, list[str]],
) -> None:
    live, client, told = rig
    client.queue("self", None).put_nowait(changed(loc(pid=101), "pane.pid"))
    client.queue(None, "@2").put_nowait(changed(loc(name="other"), "window.name"))
    await settled(live, client)
    assert told == []
    # A change and its undoing inside one settling interval: nothing to tell either.
    client.queue("self", None).put_nowait(changed(loc(name="tmp"), "window.name"))
    client.queue("self", None).put_nowait(changed(loc(), "window.name"))
    await settled(live, client)
    assert told == []


async def test_self_moving_to_another_window_follows_it(
    rig: tuple[shim.Live, FakeClient, list[str]],
) -> None:
    live, client, told = rig
    moved = loc(window="@9", name="moved")
    client.queue(None, "@9").put_nowait(snapshot(moved))
    client.queue("self", None).put_nowait(changed(moved, "window.id", "window.name"))
    await settled(live, client)
    assert (None, "@9") in client.opened
    assert sorted(told) == [shim.SELF_URI, shim.WINDOW_URI]
    window = msgspec.json.decode(live.told[shim.WINDOW_URI])
    assert [p["window_id"] for p in window["panes"]] == ["@9"]


def test_instructions_say_what_the_server_is_not_for() -> None:
    text = shim.INSTRUCTIONS
    assert "Not for:" in text
    assert "editor" in text and "whoami" in text


class _FailingSync:
    """A daemon client whose fresh reads fail as a daemon's 503 sync_failed would."""

    accept_ancestor = False

    def __init__(self) -> None:
        self.fresh: list[bool] = []

    async def where_am_i(self, *, fresh: bool = False) -> SelfInfo:
        from tmuxlocd.clients.client import SyncFailedError

        self.fresh.append(fresh)
        if fresh:
            raise SyncFailedError(
                503,
                "sync_failed",
                "tmux could not be re-read",
                {SOCKET: "list-panes: no answer within 5 s"},
            )
        return SelfInfo(inside_tmux=True, verified_by="tty", caller=Caller(pid=1), location=loc())


async def test_where_am_i_fresh_surfaces_a_failed_reread_as_an_error() -> None:
    from mcp import types as mt

    client = _FailingSync()
    s = shim.Shim(client, accept_ancestor=False)  # type: ignore[arg-type]

    async def call(arguments: dict[str, Any]) -> mt.CallToolResult:
        params = mt.CallToolRequestParams(name="where_am_i", arguments=arguments)
        return await s.on_call_tool(None, params)  # type: ignore[arg-type]

    ok = await call({})
    assert not ok.is_error and client.fresh == [False]
    failed = await call({"fresh": True})
    assert failed.is_error
    (content,) = failed.content
    assert isinstance(content, mt.TextContent) and "sync_failed" in content.text
    assert client.fresh == [False, True]
    assert (await call({"fresh": "yes"})).is_error
    schema = next(t for t in shim.TOOLS if t.name == "where_am_i").input_schema
    assert schema["properties"]["fresh"]["type"] == "boolean"


class _Agents:
    """A daemon client that answers ``agents`` with one agent and records the scopes."""

    accept_ancestor = False

    def __init__(self) -> None:
        self.scopes: list[str] = []

    async def agents(self, scope: str = "window", state: str | None = None) -> Any:
        from tmuxlocd.core.agent_view import AgentInfo, AgentList

        self.scopes.append(scope)
        one = AgentInfo(
            pane="%4",
            server="/s",
            harness="codex",
            session_id="x",
            state="waiting",
            reason="permission: Bash",
            since=1.0,
            pid=9,
        )
        return AgentList(agents=(one,))


async def test_list_agents_tool() -> None:
    from mcp import types as mt

    client = _Agents()
    s = shim.Shim(client, accept_ancestor=False)  # type: ignore[arg-type]

    async def call(arguments: dict[str, Any]) -> mt.CallToolResult:
        params = mt.CallToolRequestParams(name="list_agents", arguments=arguments)
        return await s.on_call_tool(None, params)  # type: ignore[arg-type]

    ok = await call({"scope": "session"})
    assert not ok.is_error
    (content,) = ok.content
    assert isinstance(content, mt.TextContent)
    [agent] = json.loads(content.text)["agents"]
    assert (agent["pane"], agent["state"], agent["reason"]) == ("%4", "waiting", "permission: Bash")
    assert (await call({})).is_error is False
    assert client.scopes == ["session", "window"]
    assert (await call({"scope": "galaxy"})).is_error
    wait = next(t for t in shim.TOOLS if t.name == "wait_for_pane").input_schema
    assert {"agent-idle", "agent-waiting"} <= set(wait["properties"]["until"]["enum"])


async def test_a_change_of_what_a_pane_runs_is_told_for_the_window(
    rig: tuple[shim.Live, FakeClient, list[str]],
) -> None:
    """tmux://self/window shows each pane's activity: its stream asks for pane.activity, and
    a pane that turns busy is a change of the resource."""
    live, client, told = rig
    assert "pane.activity" in client.window_types
    busy = Activity(command="make", busy=True)
    client.queue(None, "@2").put_nowait(
        PaneActivity(
            location=loc("%4"), before=Activity(command="sh", busy=False), after=busy, changed=()
        )
    )
    await settled(live, client)
    assert told == [shim.WINDOW_URI]
    window = msgspec.json.decode(live.told[shim.WINDOW_URI])
    four = next(p for p in window["panes"] if p["id"] == "%4")
    assert four["activity"] == {"command": "make", "busy": True}


class _Panes:
    """A daemon client that answers list_panes, for the tool call checks."""

    accept_ancestor = False

    async def panes(self, scope: str, detail: str, *, activity: bool = False) -> Any:
        return PaneSummaryList(panes=(), total=0)


async def _call(name: str, arguments: dict[str, Any]) -> Any:
    from mcp import types as mt

    s = shim.Shim(_Panes(), accept_ancestor=False)  # type: ignore[arg-type]
    params = mt.CallToolRequestParams(name=name, arguments=arguments)
    return await s.on_call_tool(None, params)  # type: ignore[arg-type]


async def test_unknown_arguments_are_errors_that_name_them() -> None:
    result = await _call("list_panes", {"scope": "window", "Detail": "full"})
    assert result.is_error
    assert "'Detail'" in result.content[0].text and "unknown argument" in result.content[0].text


async def test_an_unknown_tool_is_invalid_params() -> None:
    from mcp import types as mt
    from mcp.shared.exceptions import MCPError

    with pytest.raises(MCPError) as caught:
        await _call("no_such_tool" + "x" * 5000, {})
    assert caught.value.error.code == mt.INVALID_PARAMS
    assert len(caught.value.error.message) < 400


async def test_answers_are_structured_and_match_their_output_schema() -> None:
    import jsonschema

    result = await _call("list_panes", {})
    assert not result.is_error
    assert result.structured_content == {
        "detail": "summary",
        "panes": [],
        "total": 0,
        "truncated": False,
    }
    (tool,) = [t for t in shim.TOOLS if t.name == "list_panes"]
    assert tool.output_schema is not None
    jsonschema.validate(result.structured_content, tool.output_schema)
    for tool in shim.TOOLS:
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"


async def test_bad_input_is_not_echoed_whole() -> None:
    for arguments in ({"pane": "9" * 9000}, {"pane": "x" * 1_000_000}):
        result = await _call("wait_for_pane", arguments)
        assert result.is_error and len(result.content[0].text) < 1000, arguments
