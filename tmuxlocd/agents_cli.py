"""``tmuxlocd agents`` and ``tmuxlocd status-line`` (SPEC §13).

``agents`` lists the agents the harnesses' hooks reported (``GET /v1/agents``), follows
their changes (``--watch``: the ``agent.state`` events of a change stream), or prints the
pane of the agent that needs you next (``--next waiting``, for a key binding).
``status-line`` is one request for a ``#()`` status segment.  Both use the standard
library's one-request path, as ``where`` does; ``--watch`` the typed client.
"""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Any

from tmuxlocd import agents
from tmuxlocd.cli import (
    EXIT_ERROR,
    EXIT_OK,
    NoDaemon,
    _err,
    _error_text,
    _no_daemon,
    _run_client,
    id_number,
    query_string,
    raw_request,
)
from tmuxlocd.paths import client_socket_path as daemon_socket

if TYPE_CHECKING:
    import argparse

    from tmuxlocd.client import Client

REQUEST_TIMEOUT = 3.0
EXIT_NONE = 1  # --next: no agent in that state


def add_parsers(sub: Any) -> None:
    """The subcommands, on ``build_parser``'s subparsers."""
    p = sub.add_parser(
        "agents",
        help="the coding agents in panes and their state",
        description=(
            "List the agents (Claude Code, Codex, Gemini CLI sessions) whose hooks reported "
            "to the daemon (`tmuxlocd install <harness>` adds them): each one's pane, state "
            "(working, waiting, idle) and, when waiting, why.  --watch follows their changes; "
            "--next STATE prints the pane of the agent that has been in STATE longest (again "
            "from that pane: the next one), for a key binding."
        ),
    )
    p.add_argument("--json", action="store_true", help="JSON (NDJSON events with --watch)")
    p.add_argument("--state", choices=agents.STATES, help="only agents in this state")
    p.add_argument("--watch", action="store_true", help="print each change as it happens")
    p.add_argument(
        "--next",
        choices=agents.STATES,
        metavar="STATE",
        help="print the pane id of the next agent in STATE (exit 1 when there is none)",
    )
    p.add_argument(
        "--from",
        dest="from_pane",
        metavar="PANE",
        help="with --next: the pane you are in (default: this process's own)",
    )
    p.add_argument("--server", metavar="SOCKET", help="only this tmux server (path or -L name)")
    p.add_argument("--session", metavar="ID", help="only this session (id or self)")
    p.add_argument("--window", metavar="ID", help="only this window (id or self)")
    p.set_defaults(run=cmd_agents)

    p = sub.add_parser(
        "status-line",
        help="a short summary of agents for a tmux #() status segment",
        description=(
            "Print how many agents wait, work and idle (e.g. '1 waiting 2 working'), nothing "
            "when there are none or no daemon: one request, for status-right's #()."
        ),
    )
    p.set_defaults(run=cmd_status_line)


def _get(target: str) -> tuple[int, Any]:
    resp = raw_request(daemon_socket(), "GET", target, REQUEST_TIMEOUT)
    if resp is None:
        raise NoDaemon("no answer")
    if resp.status != 200:
        return resp.status, _error_text(resp)
    return 200, json.loads(resp.body)


def agents_target(ns: argparse.Namespace, state: str | None) -> str:
    return "/v1/agents" + query_string(
        {
            "state": state,
            "server": ns.server,
            "session": id_number(ns.session, "session") if ns.session else None,
            "window": id_number(ns.window, "window") if ns.window else None,
        }
    )


def cmd_agents(ns: argparse.Namespace) -> int:
    if ns.watch:
        return _watch(ns)
    try:
        state = ns.next or ns.state
        status, body = _get(agents_target(ns, state))
        if status != 200:
            _err(str(body))
            return EXIT_ERROR
        found: list[dict[str, Any]] = body["agents"]
        if ns.next:
            return _next(found, ns.next, ns.from_pane)
    except NoDaemon:
        return _no_daemon(daemon_socket())
    except ValueError as exc:
        _err(str(exc))
        return EXIT_ERROR
    if ns.json:
        sys.stdout.write(json.dumps(body) + "\n")
        return EXIT_OK
    now = time.time()
    for agent in found:
        print(line(agent, now))
    return EXIT_OK


def line(agent: dict[str, Any], now: float) -> str:
    """``%4 claude waiting 12s permission: Bash  (main:1.0)``."""
    ago = max(0, int(now - agent["since"]))
    text = f"{agent['pane']} {agent['harness']} {agent['state']} {_ago(ago)}"
    if agent.get("reason"):
        text += f" {agent['reason']}"
    where = agent.get("location")
    if where:
        text += (
            f"  ({where['session']['name']}:{where['window']['index']}.{where['pane']['index']})"
        )
    return text


def _ago(seconds: int) -> str:
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h"


def _next(found: list[dict[str, Any]], state: str, current: str | None) -> int:
    if current is None:
        current = _own_pane()
    records = [
        agents.Agent(
            a["harness"],
            a["session_id"],
            a["server"],
            a["pane"],
            agents.Proc(a["pid"], 0),
            a["state"],
            a.get("reason") or "",
            a["since"],
        )
        for a in found
    ]
    chosen = agents.next_agent(records, state, current)
    if chosen is None:
        return EXIT_NONE
    print(chosen.pane)
    return EXIT_OK


def _own_pane() -> str | None:
    """This process's pane by the daemon's rule (none outside tmux: a ``run-shell`` job)."""
    from tmuxlocd.cli import self_target

    try:
        status, body = _get(self_target(accept_ancestor=True))
    except (NoDaemon, OSError, ValueError):
        return None
    if status != 200 or not body.get("location"):
        return None
    pane: str = body["location"]["pane"]["id"]
    return pane


def _watch(ns: argparse.Namespace) -> int:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as `tmuxlocd watch`: Ctrl-C at once

    def run(client: Client) -> int:
        import msgspec

        from tmuxlocd.events import AgentStateChanged

        encode = msgspec.json.Encoder().encode
        out = sys.stdout
        for event in client.events(
            types=["agent.state"],
            server=ns.server,
            session=ns.session,
            window=ns.window,
        ):
            if not isinstance(event, AgentStateChanged):
                continue
            if ns.state is not None and event.agent.state != ns.state:
                continue
            if ns.json:
                out.buffer.write(encode(event) + b"\n")
            else:
                stamp = time.strftime("%H:%M:%S", time.localtime(event.time))
                agent = msgspec.to_builtins(event.agent)
                out.write(f"{stamp} {line(agent, event.time)}\n")
            out.flush()
        return EXIT_OK

    return _run_client(run)


def cmd_status_line(ns: argparse.Namespace) -> int:
    try:
        status, body = _get("/v1/agents")
    except (NoDaemon, OSError, ValueError):
        return EXIT_OK  # a status line shows nothing rather than an error
    if status != 200:
        return EXIT_OK
    text = agents.status_line(agent["state"] for agent in body["agents"])
    if text:
        print(text)
    return EXIT_OK
