"""The ``tmuxlocd`` command (SPEC §7).

Start-up time matters here more than anywhere: ``notify`` runs from tmux hooks (one process
per hook firing) and ``where`` runs once per turn of an agent.  So this module imports only
the standard library's cheapest parts at load time, ``notify`` is handled before argparse is
even imported, and ``where`` talks to the daemon over a hand-written HTTP/1.1 exchange that
needs neither msgspec nor http.client (``tmuxlocd.clients.rawhttp``).  Everything heavier
(the typed client, the daemon) is imported by the command that needs it.
"""

from __future__ import annotations

import os
import sys

from tmuxlocd.clients.rawhttp import NoDaemon, RawResponse, raw_request
from tmuxlocd.core.urls import notify_target, query_string, self_target, url_id
from tmuxlocd.host.paths import client_socket_path as daemon_socket

# Not `from typing import TYPE_CHECKING`: importing typing costs `notify` several ms, and
# mypy treats any constant of this name the same way.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from tmuxlocd.clients.client import Client, Tree
    from tmuxlocd.core.answers import AlertsHealth
    from tmuxlocd.core.events import Event

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_IN_PANE = 3

NOTIFY_TIMEOUT = 0.5  # a hook job must never linger: the daemon answers 202 at once
WHERE_TIMEOUT = 3.0
SYNC_WAIT = 15.0  # longer than the daemon's barrier deadline (10 s): its 503 is heard

# ----------------------------------------------------------------------------------------------
# notify: the fast path.


def parse_notify_args(args: Sequence[str]) -> dict[str, str] | None:
    """``--hook/--server/--target`` (also ``--x=value``) -> values; None asks for help.

    Anything else is ignored: notify runs from hooks, where an error message would land in
    the user's pane and an exit status would help nobody.
    """
    out: dict[str, str] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-h", "--help"):
            return None
        name, eq, value = arg.partition("=")
        if name in ("--hook", "--server", "--target"):
            if not eq:
                if i + 1 >= len(args):
                    break
                i += 1
                value = args[i]
            out[name[2:]] = value
        i += 1
    return out


def notify(
    *,
    hook: str | None = None,
    server: str | None = None,
    target: str | None = None,
    path: str | None = None,
    timeout: float = NOTIFY_TIMEOUT,
) -> int:
    """Tell the daemon that tmux changed.  Silent, and 0 whatever happens (SPEC §7)."""
    try:
        request_target = notify_target(hook, server, target)
        raw_request(path or daemon_socket(), "POST", request_target, timeout, read_answer=False)
    except (NoDaemon, OSError, ValueError):
        pass  # no daemon, a slow one, or a garbled answer: nothing a hook could do about it
    return EXIT_OK


# ----------------------------------------------------------------------------------------------
# Entry point.


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "notify":
        fast = parse_notify_args(args[1:])
        if fast is not None:
            return notify(
                hook=fast.get("hook"), server=fast.get("server"), target=fast.get("target")
            )
    if args and args[0] == "context" and not {"-h", "--help"} & set(args[1:]):
        # A harness hook, once per prompt and tool call: never argparse, never an error.
        from tmuxlocd.clients.context import main as context

        return context(args[1:])
    if args and args[0] == "where":
        # An agent may ask once per turn: the common spellings skip argparse's import.
        opts = parse_where_args(args[1:])
        if opts is not None:
            return where(*opts)
    parser = build_parser()
    ns = parser.parse_args(args)
    command: Callable[[argparse.Namespace], int] | None = getattr(ns, "run", None)
    if command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return command(ns)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # A reader that went away (`tmuxlocd watch | head`): not an error of ours.  Point
        # stdout at /dev/null so the interpreter's final flush does not complain.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    import argparse

    from tmuxlocd import __version__
    from tmuxlocd.core.harness import HARNESSES  # not at the top: notify never needs it

    parser = argparse.ArgumentParser(
        prog="tmuxlocd",
        description=(
            "Tells a process inside tmux where it is (session, window, pane, layout, "
            "neighbours) and streams changes.  Clients find the daemon at $TMUXLOCD_SOCKET, "
            "else $XDG_RUNTIME_DIR/tmuxlocd/tmuxlocd.sock, else "
            "/tmp/tmuxlocd-<uid>/tmuxlocd.sock."
        ),
    )
    parser.add_argument("--version", action="version", version=f"tmuxlocd {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    p = sub.add_parser(
        "serve",
        help="run the daemon",
        description=(
            "Run the daemon: watch tmux servers through control mode and answer on the "
            "listeners.  Flags override the config file "
            "($XDG_CONFIG_HOME/tmuxlocd/config.toml, keys: listen, socket-name, socket-path, "
            "hooks, log-level, stream-write-timeout, pane-options, alerts, alert-delay, "
            "alert-turn-end, alert-channels, alert-command, alert-timeout, alert-terminal).  "
            "An invalid config exits with status 2."
        ),
    )
    p.add_argument(
        "--listen",
        action="append",
        metavar="unix:PATH|tcp:HOST:PORT",
        help="listen here instead of the default Unix socket (repeatable; TCP on loopback only)",
    )
    p.add_argument(
        "-L",
        dest="socket_name",
        action="append",
        metavar="NAME",
        help="watch only the tmux server of this socket name (repeatable)",
    )
    p.add_argument(
        "-S",
        dest="socket_path",
        action="append",
        metavar="PATH",
        help="watch only the tmux server at this socket path (repeatable)",
    )
    p.add_argument(
        "--no-hooks",
        action="store_true",
        help="do not install tmux hooks (use hooks/tmux.conf.snippet instead, or rely on "
        "control mode and the 2 s safety net)",
    )
    p.add_argument("--config", metavar="FILE", help="read this TOML file instead of the default")
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        help="log verbosity on stderr (default: info)",
    )
    p.add_argument(
        "--stream-write-timeout",
        type=float,
        metavar="S",
        help="end a stream whose reader takes no bytes for S seconds (default 30)",
    )
    p.add_argument(
        "--pane-options",
        action="store_true",
        default=None,
        help="keep the pane user option @tmuxlocd_agent (e.g. 'claude waiting') on each "
        "agent's pane, for pane-border-format or status-format",
    )
    p.add_argument(
        "--alerts",
        action="store_true",
        default=None,
        help="alert when an agent has been waiting for --alert-delay seconds (off by default)",
    )
    p.add_argument(
        "--alert-delay",
        type=float,
        metavar="S",
        help="a wait this long gets its alert (default 2; shorter ones, such as permissions "
        "a harness approves on its own, none)",
    )
    p.add_argument(
        "--alert-turn-end",
        type=float,
        metavar="S",
        help="also alert when a turn that lasted at least S seconds ends (default 0: never)",
    )
    p.add_argument(
        "--alert-channel",
        dest="alert_channels",
        action="append",
        choices=("desktop", "terminal", "tmux", "command"),
        help="where alerts go (repeatable; default desktop and tmux)",
    )
    p.add_argument(
        "--alert-command",
        metavar="CMD",
        help="run this command for each alert and each clear (split like a shell's words, "
        "never run by one), the agent's fields in its environment",
    )
    p.add_argument(
        "--alert-timeout",
        type=float,
        metavar="S",
        help="each alert delivery's deadline (default 5)",
    )
    p.add_argument(
        "--alert-terminal",
        choices=("osc9", "osc777"),
        help="the terminal channel's escape sequence (default osc9)",
    )
    p.set_defaults(run=cmd_serve)

    p = sub.add_parser(
        "where",
        help="where this process is (exit 0 in a pane, 3 not)",
        description=(
            "Print where this process is: its pane, window, session and layout, by the rule "
            "that its controlling tty is the pane's tty.  Exit 0 in a pane, 3 not.  When no "
            "daemon answers, the answer is computed directly from tmux (a note on stderr says "
            "so, or that no tmux server answered or was asked)."
        ),
    )
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument(
        "--json",
        dest="format",
        action="store_const",
        const="json",
        help="the JSON answer of GET /v1/self",
    )
    fmt.add_argument(
        "--text",
        dest="format",
        action="store_const",
        const="text",
        help="the three-line text form (the default)",
    )
    p.add_argument(
        "--turn", type=int, metavar="N", help="text form: head the answer 'tmux location (turn N):'"
    )
    p.add_argument(
        "--neighbors",
        action="store_true",
        help="text form: add a line naming the neighbouring panes",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="re-read tmux first (for a caller that just changed it); exit 1 if "
        "tmux could not be re-read",
    )
    p.set_defaults(run=cmd_where, format="text")

    p = sub.add_parser(
        "neighbors",
        help="the panes next to a pane",
        description="List the panes that share an edge with a pane (this one by default), "
        "largest shared length first.",
    )
    p.add_argument(
        "direction", nargs="?", choices=("above", "below", "left", "right"), help="only this side"
    )
    p.add_argument("--pane", default="self", metavar="ID", help="self (default), %%N or N")
    p.set_defaults(run=cmd_neighbors)

    p = sub.add_parser(
        "watch",
        help="stream location changes",
        description="Print location changes as they happen, resuming by itself if the "
        "connection drops.  Without a filter, every pane of every watched server.",
    )
    p.add_argument("--pane", metavar="self|ID", help="follow one pane (self follows this one)")
    p.add_argument("--window", metavar="ID", help="only this window (self, @N or N)")
    p.add_argument("--session", metavar="ID", help="only this session (self, $N or N)")
    p.add_argument(
        "--format",
        choices=("ndjson", "text"),
        default="text",
        help="text: one line per event (default); ndjson: one JSON event per line",
    )
    p.set_defaults(run=cmd_watch)

    p = sub.add_parser(
        "tree",
        help="every server, session, window and pane",
        description="Print every watched server, session, window and pane as an indented "
        "tree; this process's pane is marked with '*'.",
    )
    p.add_argument("--json", action="store_true", help="the JSON answer of GET /v1/tree")
    p.set_defaults(run=cmd_tree)

    p = sub.add_parser(
        "wait",
        help="wait until a pane's command finishes (or starts, exits, changes)",
        description="Block until PANE is idle (its shell has the terminal back), busy, "
        "exited, or its activity changed; at once if it already is.  Exit status: 0 met, "
        "1 a daemon error, 2 usage, 3 the pane is gone (killed, its window or server gone), "
        "4 the pane exited while waiting for busy, 124 timeout.  --json prints the answer.",
    )
    p.add_argument("pane", help="self, %%N or N")
    p.add_argument(
        "--until",
        choices=("idle", "busy", "exit", "change", "agent-idle", "agent-waiting"),
        default="idle",
    )
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="seconds (default 300)")
    p.add_argument("--server", metavar="PATH", help="the server, if the id is on several")
    p.add_argument("--json", action="store_true", help="print the JSON answer")
    p.set_defaults(run=cmd_wait)

    p = sub.add_parser(
        "notify",
        help="tell the daemon tmux changed (for hooks; silent, always exits 0)",
        description="Tell the daemon that something changed in tmux, so that it re-syncs.  "
        "Meant for tmux hooks (hooks/tmux.conf.snippet): prints nothing and exits 0 "
        "whatever happens, including when no daemon runs.",
    )
    p.add_argument("--hook", metavar="NAME", help="the hook that fired")
    p.add_argument("--server", metavar="PATH", help="the tmux server's socket path")
    p.add_argument("--target", metavar="ID", help="the pane, window or session concerned")
    p.set_defaults(run=cmd_notify)

    p = sub.add_parser(
        "sync",
        help="wait until the daemon has re-read tmux (a barrier)",
        description="Ask the daemon to re-read every tmux server (or one) and wait until "
        "what it read is published; print the last event id.  Exit 1, naming the servers "
        "and why, when a server could not be re-read.",
    )
    p.add_argument("--server", metavar="PATH|NAME", help="only this tmux server")
    p.set_defaults(run=cmd_sync)

    p = sub.add_parser(
        "context",
        help="a harness hook: the location when it changed (Claude Code, Codex, Gemini CLI, "
        "Copilot CLI, Qwen Code, opencode, Antigravity CLI)",
        description="Run by an agent harness as its command hook: reads the hook event JSON "
        "on stdin and prints, in that harness's format, this pane's location (the text form "
        "with turn and neighbours) when the session has not been told it yet.  Prints nothing "
        "otherwise and always exits 0.  Installed by `tmuxlocd install`.",
    )
    p.add_argument("harness", choices=HARNESSES)
    p.add_argument(
        "--min-interval-ms",
        metavar="N",
        help="no injection sooner than N ms after the last one (default 0)",
    )
    p.add_argument(
        "--event",
        metavar="NAME",
        help="the event this hook runs for, for a harness that writes none on stdin "
        "(Copilot CLI, Antigravity CLI)",
    )
    p.set_defaults(run=cmd_context)

    p = sub.add_parser(
        "install",
        help="add the context hooks and the MCP server to a harness's configuration",
        description="Add `tmuxlocd context` hooks (session start, each prompt, after each "
        "shell command) and the MCP server to the user's (or with --project, this "
        "directory's) configuration of Claude Code, Codex, Gemini CLI, Copilot CLI, Qwen "
        "Code, opencode (a plugin file) or Antigravity CLI.  Idempotent; other "
        "entries are kept; a file that does not parse is left untouched.  Ends with the "
        "verdict of `tmuxlocd doctor` on that harness (the exit status is install's).",
    )
    p.add_argument(
        "harness",
        nargs="?",
        choices=(*HARNESSES, "systemd", "launchd"),
        help="none: every harness found on this machine (its configuration directory or its "
        "command), saying which were skipped and why",
    )
    p.add_argument(
        "--project",
        action="store_true",
        help="this directory's configuration instead of the user's",
    )
    p.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    p.add_argument("--remove", action="store_true", help="take out exactly what install adds")
    p.add_argument(
        "--allow-sandbox",
        action="store_true",
        help="also allow the daemon's socket, and only it, in the harness's sandbox "
        "(Claude Code: sandbox.network.allowUnixSockets); for a harness without a "
        "per-socket allow, say why nothing is written",
    )
    p.add_argument(
        "--min-interval-ms",
        metavar="N",
        default="0",
        help="the hooks inject at most once per N ms (default 0: every change)",
    )
    p.add_argument(
        "--own-app-server",
        action="store_true",
        help="Codex: [features] daemon_auto_start = false, so that each TUI runs its own "
        "app-server and every TUI is told its pane (the trade-off is printed; --remove puts "
        "back what was there)",
    )
    p.set_defaults(run=cmd_install)

    p = sub.add_parser(
        "doctor",
        help="check what install wrote: hooks, their commands, trust, the MCP entry, the "
        "daemon (exit 1 on a problem)",
        description="Check a harness's installation (every harness whose configuration "
        "exists when none is named): the hooks are there, their commands exist, the harness "
        "runs them (Claude Code: disableAllHooks; Codex: trusted in /hooks, [features]; "
        "Gemini CLI: hooksConfig), the MCP entry is there and its command exists, the daemon "
        "answers and this process is in a pane.  Each finding says what to do.  Reads only; "
        "never trusts or enables anything.  Exit status: 0 when no problem was found "
        "(warnings allowed), 1 otherwise.",
    )
    p.add_argument("harness", nargs="?", choices=HARNESSES)
    p.add_argument(
        "--project",
        action="store_true",
        help="this directory's configuration instead of the user's",
    )
    p.add_argument("--json", action="store_true", help="the findings as JSON")
    p.add_argument(
        "--host",
        action="store_true",
        help="instead: each fact the host reads of this process and of a child (record, "
        "tty, peer over a socket, exit watch) beside what POSIX says (docs/macos.md)",
    )
    p.set_defaults(run=cmd_doctor)

    p = sub.add_parser(
        "status",
        help="the daemon's health",
        description="Show the daemon's health: the servers it watches, "
        "their observers and sizes, and its subscribers.  Exit 1 if no "
        "daemon answers.",
    )
    p.set_defaults(run=cmd_status)

    p = sub.add_parser(
        "alert",
        help="the daemon's alerts on agents (--test: one through each channel)",
        description="With --test, the daemon sends one test alert through each configured "
        "alert channel and says how each went.  Exit 1 if one failed or alerts are off.",
    )
    p.add_argument("--test", action="store_true", help="send one test alert through each channel")
    p.set_defaults(run=cmd_alert)

    p = sub.add_parser(
        "token",
        help="the bearer token of the TCP listeners (--rotate: a new one)",
        description="Print the bearer token TCP requests need (Authorization: Bearer ...), "
        "from the file 'token' beside the daemon's socket ($TMUXLOCD_SOCKET or the "
        "default), making it if there is none.  It stays the same across restarts of the "
        "daemon; --rotate replaces it, and a running daemon accepts only the new one from "
        "its next request on.",
    )
    p.add_argument(
        "--rotate",
        action="store_true",
        help="replace the token with a new one (clients holding the old get 401)",
    )
    p.add_argument(
        "--path", action="store_true", help="print the token file's path instead of the token"
    )
    p.set_defaults(run=cmd_token)

    p = sub.add_parser(
        "mcp",
        help="MCP server on stdio (needs tmuxlocd[mcp])",
        description="Run a Model Context Protocol server on stdin/stdout, "
        "backed by the daemon.  Needs the extra: pip install 'tmuxlocd[mcp]'.",
    )
    p.set_defaults(run=cmd_mcp)
    add_agents_parsers(sub)  # agents, status-line
    return parser


def _err(message: str) -> None:
    print(f"tmuxlocd: {message}", file=sys.stderr)


def _no_daemon(path: str) -> int:
    _err(f"no daemon answered on {path}; start one with `tmuxlocd serve`")
    return EXIT_ERROR


# ----------------------------------------------------------------------------------------------
# serve


def cmd_serve(ns: argparse.Namespace) -> int:
    import asyncio
    import shlex
    from pathlib import Path

    from tmuxlocd.core.errors import ConfigError
    from tmuxlocd.daemon.config import default_config_path, load_config, merge

    try:
        path = Path(ns.config) if ns.config else default_config_path()
        config = load_config(path, explicit=ns.config is not None)
        config = merge(
            config,
            listen=tuple(ns.listen or ()),
            socket_name=tuple(ns.socket_name or ()),
            socket_path=tuple(ns.socket_path or ()),
            hooks=False if ns.no_hooks else None,
            log_level=ns.log_level,
            stream_write_timeout=ns.stream_write_timeout,
            pane_options=ns.pane_options,
            alerts=ns.alerts,
            alert_delay=ns.alert_delay,
            alert_turn_end=ns.alert_turn_end,
            alert_channels=tuple(ns.alert_channels or ()),
            alert_command=tuple(shlex.split(ns.alert_command)) if ns.alert_command else None,
            alert_timeout=ns.alert_timeout,
            alert_terminal=ns.alert_terminal,
        )
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_USAGE
    setup_logging(config.log_level)
    from tmuxlocd.daemon.serve import serve

    try:
        return asyncio.run(serve(config))
    except ConfigError as exc:
        _err(str(exc))
        return EXIT_USAGE


def setup_logging(level: str, env: Mapping[str, str] | None = None) -> None:
    import logging

    env = os.environ if env is None else env
    # Under systemd, journald stamps each line itself.
    stamp = "" if env.get("JOURNAL_STREAM") else "%(asctime)s "
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format=stamp + "%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


# ----------------------------------------------------------------------------------------------
# where


def parse_where_args(args: Sequence[str]) -> tuple[str, int | None, bool] | None:
    """(format, turn, neighbors) for the plain spellings of ``where``'s flags; None for
    anything else (help, abbreviations, mistakes), which argparse then handles."""
    fmt: str | None = None
    turn: int | None = None
    neighbors = False
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("--json", "--text") and fmt in (None, arg[2:]):
            fmt = arg[2:]
        elif arg == "--neighbors":
            neighbors = True
        elif arg == "--turn" and i + 1 < len(args) and _is_int(args[i + 1]):
            i += 1
            turn = int(args[i])
        elif arg.startswith("--turn=") and _is_int(arg[7:]):
            turn = int(arg[7:])
        else:
            return None
        i += 1
    return fmt or "text", turn, neighbors


def _is_int(text: str) -> bool:
    return text.removeprefix("-").isdigit()


def cmd_where(ns: argparse.Namespace) -> int:
    return where(ns.format, ns.turn, ns.neighbors, ns.fresh)


def where(fmt: str, turn: int | None, neighbors: bool, fresh: bool = False) -> int:
    path = daemon_socket()
    target = self_target(
        text=fmt == "text",
        turn=turn if fmt == "text" else None,
        neighbors=neighbors and fmt == "text",
        fresh=fresh,
    )
    try:
        # A barrier may wait for tmux up to its own deadline (then 503, never stale data).
        resp = raw_request(path, "GET", target, SYNC_WAIT if fresh else WHERE_TIMEOUT)
    except (NoDaemon, OSError, ValueError):
        return where_direct(fmt, turn, neighbors)
    assert resp is not None
    if resp.status == 204:
        return EXIT_NOT_IN_PANE
    if resp.status != 200:
        _err(_error_text(resp))
        return EXIT_ERROR
    if fmt == "text":
        sys.stdout.buffer.write(resp.body)
        sys.stdout.flush()
        return EXIT_OK
    inside = _inside_tmux(resp.body)
    if inside is None:
        _err("the daemon's answer is not a JSON object")
        return EXIT_ERROR
    sys.stdout.buffer.write(resp.body + b"\n")
    sys.stdout.flush()
    return EXIT_OK if inside else EXIT_NOT_IN_PANE


def _inside_tmux(body: bytes) -> bool | None:
    # The daemon writes inside_tmux first, compactly; the json module (and the re it
    # imports) is only needed for an answer written some other way.
    if body.startswith(b'{"inside_tmux":true,'):
        return True
    if body.startswith(b'{"inside_tmux":false,'):
        return False
    import json

    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value.get("inside_tmux") is True if isinstance(value, dict) else None


def _error_text(resp: RawResponse) -> str:
    import json

    try:
        err = json.loads(resp.body)["error"]
        return f"{err['code']}: {err['message']}"
    except (ValueError, KeyError, TypeError):
        return f"the daemon answered {resp.status}"


def where_direct(fmt: str, turn: int | None, neighbors: bool) -> int:
    import msgspec

    from tmuxlocd.clients import direct
    from tmuxlocd.core.location import text_form

    info, note = direct.where_and_note()
    _err(note.removeprefix("tmuxlocd: "))
    if fmt == "json":
        sys.stdout.buffer.write(msgspec.json.encode(info) + b"\n")
    elif info.location is not None:
        text = text_form(info.location, turn=turn, with_neighbors=neighbors)
        sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.flush()
    return EXIT_OK if info.inside_tmux else EXIT_NOT_IN_PANE


# ----------------------------------------------------------------------------------------------
# Commands on the typed client.


def _client() -> Client:
    from tmuxlocd.clients.client import Client

    return Client(daemon_socket())


def _run_client(action: Callable[[Client], int]) -> int:
    from tmuxlocd.clients.client import ClientError, DaemonUnavailable

    client = _client()
    try:
        return action(client)
    except DaemonUnavailable:
        return _no_daemon(client.path)
    except ClientError as exc:
        _err(f"{exc.code}: {exc.message}" if exc.message else exc.code)
        return EXIT_NOT_IN_PANE if exc.code == "not_in_a_pane" else EXIT_ERROR
    except ValueError as exc:
        _err(str(exc))
        return EXIT_USAGE
    finally:
        client.close()


def cmd_neighbors(ns: argparse.Namespace) -> int:
    def run(client: Client) -> int:
        if ns.direction is None:
            answer = client.neighbors(None, ns.pane)
            for d in ("above", "below", "left", "right"):
                entries = getattr(answer, d)
                text = ", ".join(f"{e.id} (pane {e.index}, {e.shared} cells)" for e in entries)
                print(f"{d}: {text or 'none'}")
        else:
            one = client.neighbors(ns.direction, ns.pane)
            for e in one.panes:
                print(f"{e.id} index={e.index} shared={e.shared}")
        return EXIT_OK

    return _run_client(run)


def cmd_watch(ns: argparse.Namespace) -> int:
    import signal

    # Ctrl-C ends the watch at once, by the kernel.  Python's own handler acts only between
    # bytecodes: a SIGINT that came after its last check and before the process blocked
    # reading the stream again was acted on only when the next event or heartbeat came (up to
    # 15 s later).  Every line is flushed as it is written, so nothing printed is lost.
    signal.signal(signal.SIGINT, signal.SIG_DFL)

    def run(client: Client) -> int:
        import msgspec

        encode = msgspec.json.Encoder().encode
        out = sys.stdout
        for event in client.events(pane=ns.pane, window=ns.window, session=ns.session):
            if ns.format == "ndjson":
                out.buffer.write(encode(event) + b"\n")
            else:
                out.write(event_line(event) + "\n")
            out.flush()
        return EXIT_OK

    return _run_client(run)


def event_line(event: Event) -> str:
    """One line for one event (watch --format text)."""
    import time

    from tmuxlocd.core.events import (
        Lagged,
        PaneAdded,
        PaneChanged,
        PaneRemoved,
        Reset,
        ServerDown,
        ServerUp,
        SnapshotEvent,
    )
    from tmuxlocd.core.location import Location

    def where(loc: Location) -> str:
        w, p = loc.window, loc.pane
        return (
            f"{p.id} session {loc.session.name} window {w.index} {_quote(w.name)} "
            f"pane {p.index} {p.width}x{p.height}+{p.left}+{p.top}"
        )

    stamp = time.strftime("%H:%M:%S", time.localtime(event.time)) if event.time else "--:--:--"
    match event:
        case SnapshotEvent(panes=panes):
            text = f"snapshot {len(panes)} pane{'s' if len(panes) != 1 else ''}"
        case PaneAdded(location=loc):
            text = f"added {where(loc)}"
        case PaneChanged(location=loc, changed=changed):
            text = f"changed {where(loc)} [{','.join(changed)}]"
        case PaneRemoved(pane=pane, last=last):
            text = f"removed {pane} (was session {last.session.name} window {last.window.index})"
        case ServerUp(server=srv):
            text = f"server up {srv.socket_path} pid {srv.pid}"
        case ServerDown(server=srv):
            text = f"server down {srv.socket_path}"
        case Reset():
            text = "reset (history unavailable; a snapshot follows)"
        case Lagged():
            text = "lagged (events dropped; a snapshot follows)"
    return f"{stamp} {text}"


def _quote(name: str) -> str:
    import msgspec

    return msgspec.json.encode(name).decode("utf-8")


def cmd_sync(ns: argparse.Namespace) -> int:
    def run(client: Client) -> int:
        print(client.sync(ns.server))
        return EXIT_OK

    return _run_client(run)


# 124 as timeout(1) has it: a script tells "still running" from a daemon error (1).
EXIT_TIMEOUT = 124
EXIT_GONE = 3
EXIT_NOT_MET = 4


def cmd_wait(ns: argparse.Namespace) -> int:
    def run(client: Client) -> int:
        answer = client.wait(ns.pane, ns.until, timeout_s=ns.timeout, server=ns.server)
        if ns.json:
            import msgspec

            sys.stdout.buffer.write(msgspec.json.encode(answer) + b"\n")
        else:
            act = answer.activity
            status = "" if act.exit_status is None else f" status {act.exit_status}"
            why = f" ({answer.reason})" if answer.reason else ""
            print(f"{answer.outcome}{status} after {answer.waited_ms / 1000:.3f} s{why}")
        if answer.met:
            return EXIT_OK
        if answer.outcome == "timeout":
            return EXIT_TIMEOUT
        if answer.outcome == "gone":
            return EXIT_GONE
        return EXIT_NOT_MET

    from tmuxlocd.core.activity import WAIT_MAX_S

    if ns.timeout is not None and not 0 <= ns.timeout <= WAIT_MAX_S:
        _err(f"--timeout must be from 0 to {WAIT_MAX_S:g} seconds")
        return EXIT_USAGE
    return _run_client(run)


def cmd_tree(ns: argparse.Namespace) -> int:
    def run(client: Client) -> int:
        tree = client.tree(activity=True)
        if ns.json:
            import msgspec

            sys.stdout.buffer.write(msgspec.json.encode(tree) + b"\n")
            return EXIT_OK
        here = client.where_am_i()
        mark = None
        if here.location is not None:
            mark = (here.location.server.socket_path, here.location.pane.id)
        for line in tree_lines(tree, mark):
            print(line)
        return EXIT_OK

    return _run_client(run)


def tree_lines(tree: Tree, mark: tuple[str, str] | None) -> list[str]:
    """The indented tree; the pane ``mark`` (socket path, pane id) gets a ``*``."""
    lines: list[str] = []
    for srv in tree.servers:
        state = f"pid {srv.pid}" if srv.running else "not running"
        lines.append(f"server {srv.socket_path} ({state})")
        for sess in srv.sessions:
            lines.append(f"  session {sess.id} {sess.name}")
            for win in sess.windows:
                flags = [f for f, on in (("active", win.active), ("zoomed", win.zoomed)) if on]
                extra = f" ({', '.join(flags)})" if flags else ""
                lines.append(f"    window {win.id} {win.index} {_quote(win.name)}{extra}")
                for pane in win.panes:
                    star = "*" if mark == (srv.socket_path, pane.id) else " "
                    active = " (active)" if pane.active else ""
                    lines.append(
                        f"     {star}pane {pane.id} {pane.index} "
                        f"{pane.width}x{pane.height}+{pane.left}+{pane.top} {pane.tty}{active}"
                        f"{_activity_words(pane.command, pane.busy, pane.dead, pane.exit_status)}"
                    )
    return lines


def _activity_words(command: str, busy: bool | None, dead: bool, status: int | None) -> str:
    """`` sleep busy`` / `` sh idle`` / `` dead (exit 3)``; nothing when nothing is known."""
    if dead:
        return " dead" + (f" (exit {status})" if status is not None else "")
    if not command and busy is None:
        return ""
    state = {True: "busy", False: "idle", None: "?"}[busy]
    return f" {_quote(command)} {state}" if command else f" {state}"


def cmd_notify(ns: argparse.Namespace) -> int:
    return notify(hook=ns.hook, server=ns.server, target=ns.target)


def cmd_context(ns: argparse.Namespace) -> int:
    from tmuxlocd.clients.context import main as context

    extra = ["--min-interval-ms", ns.min_interval_ms] if ns.min_interval_ms else []
    if ns.event:
        extra += ["--event", ns.event]
    return context([ns.harness, *extra])


def cmd_install(ns: argparse.Namespace) -> int:
    from tmuxlocd.clients.install import run
    from tmuxlocd.core.harness import MAX_INTERVAL_MS, parse_min_interval

    floor = parse_min_interval(ns.min_interval_ms)
    if floor is None:
        _err(
            f"--min-interval-ms: {ns.min_interval_ms!r} is not a whole number of "
            f"milliseconds from 0 to {MAX_INTERVAL_MS}"
        )
        return EXIT_USAGE
    options = {
        "project": ns.project,
        "dry_run": ns.dry_run,
        "remove": ns.remove,
        "min_interval_ms": floor,
        "allow_sandbox": ns.allow_sandbox,
    }
    if ns.harness is None:
        from tmuxlocd.clients.install import run_all

        status, done = run_all(own_app_server=False, **options)
        if status == EXIT_OK and not (ns.dry_run or ns.remove):
            from tmuxlocd.clients.doctor_probe import after_install

            for name in done:
                after_install(name, project=ns.project)
        return status
    status = run(ns.harness, own_app_server=ns.own_app_server, **options)
    services = ("systemd", "launchd")
    if status == EXIT_OK and not (ns.dry_run or ns.remove) and ns.harness not in services:
        from tmuxlocd.clients.doctor_probe import after_install

        after_install(ns.harness, project=ns.project)  # informs; the status stays install's
    return status


def cmd_doctor(ns: argparse.Namespace) -> int:
    if ns.host:
        from tmuxlocd.clients import doctor_host

        return doctor_host.run(as_json=ns.json)
    from tmuxlocd.clients.doctor_probe import run

    return run(ns.harness, project=ns.project, as_json=ns.json)


def cmd_status(ns: argparse.Namespace) -> int:
    def run(client: Client) -> int:
        health = client.health()
        subs = health.subscribers
        print(
            f"tmuxlocd {health.version}: {health.status}, up {_duration(health.uptime_s)}, "
            f"{subs} subscriber{'s' if subs != 1 else ''}, socket {client.path}"
        )
        if not health.servers:
            print("  no tmux server found")
        for srv in health.servers:
            if not srv.running:
                print(f"  {srv.socket_path}: not running (observer {srv.observer})")
                continue
            age = (
                f", synced {srv.last_sync_age_s:.1f} s ago"
                if srv.last_sync_age_s is not None
                else ""
            )
            print(
                f"  {srv.socket_path}: observer {srv.observer}, {srv.sessions} sessions, "
                f"{srv.windows} windows, {srv.panes} panes{age}"
            )
            if srv.last_error:
                # What the daemon shows of this server may be stale until this clears.
                print(f"    error: {srv.last_error}")
        if health.alerts is not None:
            for text in alert_lines(health.alerts):
                print(text)
        return EXIT_OK if health.status == "ok" else EXIT_ERROR

    return _run_client(run)


def alert_lines(alerts: AlertsHealth) -> list[str]:
    turn = f", turn end after {alerts.turn_end_s:g} s" if alerts.turn_end_s else ""
    head = f"  alerts: after {alerts.delay_s:g} s waiting{turn}; "
    out = [head + f"{alerts.pending} pending, {alerts.standing} standing"]
    for channel in alerts.channels:
        failed = f", {channel.failed} failed" if channel.failed else ""
        out.append(f"    {channel.name}: {channel.sent} sent{failed}")
        if channel.last_error:
            when = "error" if channel.failing else "last error"
            out.append(f"      {when}: {channel.last_error}")
    return out


def cmd_alert(ns: argparse.Namespace) -> int:
    import json

    if not ns.test:
        _err("nothing to do: --test sends one test alert through each channel")
        return EXIT_USAGE
    path = daemon_socket()
    try:
        # Each channel has its own deadline (alert-timeout); this one only bounds a daemon
        # that does not answer at all.
        resp = raw_request(path, "POST", "/v1/alerts/test", 120.0)
    except (NoDaemon, OSError):
        return _no_daemon(path)
    if resp is None:
        return _no_daemon(path)
    if resp.status != 200:
        _err(_error_text(resp))
        return EXIT_ERROR
    channels = json.loads(resp.body)["channels"]
    for channel in channels:
        if channel["ok"]:
            print(f"{channel['name']}: sent")
        else:
            print(f"{channel['name']}: failed: {channel['error']}")
    if not channels:
        print("no alert channel configured")
    return EXIT_OK if channels and all(c["ok"] for c in channels) else EXIT_ERROR


def _duration(seconds: float) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def cmd_token(ns: argparse.Namespace) -> int:
    from tmuxlocd.daemon.rundir import Refused, check_directory
    from tmuxlocd.daemon.token import load_or_make, token_path, write_new_token

    directory = os.path.dirname(os.path.abspath(daemon_socket()))
    try:
        check_directory(directory)
        token = write_new_token(directory) if ns.rotate else load_or_make(directory)[0]
    except (Refused, OSError) as exc:
        _err(f"cannot use the token in {directory}: {exc}")
        return EXIT_ERROR
    print(token_path(directory) if ns.path else token)
    return EXIT_OK


def cmd_mcp(ns: argparse.Namespace) -> int:
    import importlib

    try:
        server = importlib.import_module("tmuxlocd.clients.mcp")
    except ImportError as exc:
        missing = exc.name or ""
        if missing in ("mcp", "tmuxlocd.clients.mcp") or missing.startswith("mcp."):
            _err(
                "the MCP server needs the extra: install tmuxlocd[mcp] "
                "(pip install 'tmuxlocd[mcp]')"
            )
            return EXIT_ERROR
        raise
    entry = getattr(server, "main", None)
    if not callable(entry):
        _err("tmuxlocd.clients.mcp has no main(); install tmuxlocd[mcp] from a complete release")
        return EXIT_ERROR
    result = entry()
    return result if isinstance(result, int) else EXIT_OK


# ----------------------------------------------------------------------------------------------
# `tmuxlocd agents` and `tmuxlocd status-line` (SPEC §13): the agents the harnesses' hooks
# reported (GET /v1/agents), their changes (--watch: agent.state events), the pane of the agent
# that needs you next (--next), and one request for a #() status segment.

AGENTS_TIMEOUT = 3.0
EXIT_NONE = 1  # --next: no agent in that state


def add_agents_parsers(sub: Any) -> None:
    """The subcommands, on ``build_parser``'s subparsers."""
    from tmuxlocd.core import agents

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
    p.add_argument(
        "--pick",
        action="store_true",
        help="a picker for display-popup -E: the agents, waiting first; Enter goes to the pane",
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
    import json

    resp = raw_request(daemon_socket(), "GET", target, AGENTS_TIMEOUT)
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
            "session": url_id(ns.session, "session") if ns.session else None,
            "window": url_id(ns.window, "window") if ns.window else None,
        }
    )


def cmd_agents(ns: argparse.Namespace) -> int:
    import json
    import time

    if ns.watch:
        return _watch(ns)
    if ns.pick:
        return _pick(ns)
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


def _pick(ns: argparse.Namespace) -> int:
    from tmuxlocd.clients import picker

    def fetch() -> list[dict[str, Any]]:
        status, body = _get(agents_target(ns, None))
        if status != 200:
            raise ValueError(str(body))
        found: list[dict[str, Any]] = body["agents"]
        return found

    try:
        return picker.run(fetch)
    except NoDaemon:
        return _no_daemon(daemon_socket())
    except ValueError as exc:
        _err(str(exc))
        return EXIT_ERROR


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
    from tmuxlocd.core import agents

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
    from tmuxlocd.core.urls import self_target

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
    import time

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as `tmuxlocd watch`: Ctrl-C at once

    def run(client: Client) -> int:
        import msgspec

        from tmuxlocd.core.events import AgentStateChanged

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
    from tmuxlocd.core import agents

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
