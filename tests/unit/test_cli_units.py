"""The pure parts of the command line, the client and the no-daemon ``where``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgspec
import pytest

from tmuxlocd.clients import cli, client, direct, rawhttp
from tmuxlocd.clients.client import (
    DaemonUnavailable,
    Tree,
)
from tmuxlocd.core import client_core as core
from tmuxlocd.core import oneshot, urls
from tmuxlocd.core.client_core import (
    LineBuffer,
    SSEDecoder,
    decode_event_line,
    pane_ref,
    session_ref,
    window_ref,
)
from tmuxlocd.core.errors import RowError
from tmuxlocd.core.events import (
    Lagged,
    PaneAdded,
    PaneChanged,
    PaneRemoved,
    Reset,
    ServerDown,
    ServerUp,
    SnapshotEvent,
    encoder,
)
from tmuxlocd.core.location import (
    Location,
    Neighbors,
    PaneRef,
    ServerRef,
    SessionRef,
    WindowRef,
)
from tmuxlocd.core.model import PANE_FORMAT, SESSION_FORMAT, WINDOW_FORMAT
from tmuxlocd.daemon.config import load_config, merge
from tmuxlocd.daemon.serve import default_socket_path
from tmuxlocd.host import sockets

REPO = str(Path(__file__).resolve().parents[2])

LOC = Location(
    server=ServerRef(socket_path="/tmp/tmux-1000/default", pid=4242),
    session=SessionRef(id="$1", name="work"),
    window=WindowRef(
        id="@2",
        index=1,
        name="editor",
        active=True,
        zoomed=False,
        layout="4c30,158x40,0,0{79x40,0,0,3,78x40,80,0,4}",
    ),
    pane=PaneRef(
        id="%3",
        index=0,
        active=True,
        tty="/dev/pts/5",
        pid=1234,
        left=0,
        top=0,
        width=79,
        height=40,
    ),
    neighbors=Neighbors(right=("%4",)),
)

# ----------------------------------------------------------------------------------------------
# Where the daemon is: three copies of one rule (client, cli's stdlib-only one, the daemon's).

ENVS = [
    {},
    {"XDG_RUNTIME_DIR": "/run/user/1000"},
    {"XDG_RUNTIME_DIR": "/run/user/1000", "TMUXLOCD_SOCKET": "/x/y.sock"},
    {"TMUXLOCD_SOCKET": "/x/y.sock"},
    {"TMUXLOCD_SOCKET": "", "XDG_RUNTIME_DIR": ""},
]


@pytest.mark.parametrize("env", ENVS)
def test_socket_path_rules_agree(env: dict[str, str]) -> None:
    # cli imports the rule under this name (not re-exported: mypy is told it is meant).
    by_cli = cli.daemon_socket(env)  # type: ignore[attr-defined]
    assert client.socket_path(env) == by_cli == default_socket_path(env)


def test_socket_path_values() -> None:
    assert client.socket_path({}) == f"/tmp/tmuxlocd-{os.getuid()}/tmuxlocd.sock"
    assert client.socket_path({"XDG_RUNTIME_DIR": "/r"}) == "/r/tmuxlocd/tmuxlocd.sock"
    assert client.socket_path({"TMUXLOCD_SOCKET": "/s", "XDG_RUNTIME_DIR": "/r"}) == "/s"


# ----------------------------------------------------------------------------------------------
# The hand-written HTTP of notify and where.


def test_percent_encode() -> None:
    assert urls.percent_encode("a-b_c.d~e") == "a-b_c.d~e"
    assert urls.percent_encode("/tmp/tmux 1/x&y=%") == "%2Ftmp%2Ftmux%201%2Fx%26y%3D%25"
    assert urls.percent_encode("é") == "%C3%A9"
    assert urls.query_string({"a": "1", "b": None}) == "?a=1"
    assert urls.query_string({"a": None}) == ""


def test_parse_response_content_length() -> None:
    raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhelloextra"
    resp = rawhttp.parse_response(raw)
    assert (resp.status, resp.headers["content-type"], resp.body) == (200, "text/plain", b"hello")


def test_parse_response_chunked_and_empty() -> None:
    raw = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n"
    )
    assert rawhttp.parse_response(raw).body == b"hello, world"
    assert rawhttp.parse_response(b"HTTP/1.1 204 No Content\r\n\r\n").status == 204


@pytest.mark.parametrize("raw", [b"", b"HTTP/1.1 200 OK\r\n", b"garbage\r\n\r\n"])
def test_parse_response_rejects(raw: bytes) -> None:
    with pytest.raises(ValueError):
        rawhttp.parse_response(raw)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {}),
        (
            ["--hook", "h", "--server", "/s", "--target", "%1"],
            {"hook": "h", "server": "/s", "target": "%1"},
        ),
        (["--hook=h", "--server=/a=b"], {"hook": "h", "server": "/a=b"}),
        (["--bogus", "--hook", "h", "extra"], {"hook": "h"}),
        (["--hook"], {}),
        (["--hook", "h", "--help"], None),
        (["-h"], None),
    ],
)
def test_parse_notify_args(args: list[str], expected: dict[str, str] | None) -> None:
    assert cli.parse_notify_args(args) == expected


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], ("text", None, False)),
        (["--json"], ("json", None, False)),
        (["--text", "--turn", "3", "--neighbors"], ("text", 3, True)),
        (["--turn=12"], ("text", 12, False)),
        (["--json", "--json"], ("json", None, False)),
        (["--json", "--text"], None),  # argparse reports the conflict
        (["--js"], None),  # an abbreviation: argparse knows
        (["--turn"], None),
        (["--turn", "x"], None),
        (["-h"], None),
        (["extra"], None),
    ],
)
def test_parse_where_args(args: list[str], expected: tuple[str, int | None, bool] | None) -> None:
    assert cli.parse_where_args(args) == expected


def test_inside_tmux_of_an_answer() -> None:
    assert cli._inside_tmux(b'{"inside_tmux":true,"x":1}') is True
    assert cli._inside_tmux(b'{"inside_tmux":false,"x":1}') is False
    assert cli._inside_tmux(b'{ "x": 1, "inside_tmux": true }') is True
    assert cli._inside_tmux(b"[1]") is None
    assert cli._inside_tmux(b"nope") is None


def test_notify_without_daemon_is_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.notify(hook="x", path=str(tmp_path / "none.sock")) == 0
    monkeypatch.setenv("TMUXLOCD_SOCKET", str(tmp_path / "none.sock"))
    assert cli.main(["notify", "--hook", "x", "--server", "/s"]) == 0
    assert cli.main(["notify", "--bogus"]) == 0
    assert capsys.readouterr() == ("", "")


def _one_shot_server(path: str, answer: bytes | None) -> threading.Thread:
    """Accept one connection, read the request, send ``answer`` (None: say nothing)."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve() -> None:
        with srv:
            conn, _ = srv.accept()
            with conn:
                conn.recv(65536)
                if answer is not None:
                    conn.sendall(answer)
                else:
                    conn.recv(1)  # until the client gives up and closes

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_notify_survives_a_garbled_answer(tmp_path: Path) -> None:
    path = str(tmp_path / "junk.sock")
    thread = _one_shot_server(path, b"\x00garbage")
    assert cli.notify(path=path, timeout=2.0) == 0
    thread.join(5)


def test_notify_gives_up_on_a_mute_daemon(tmp_path: Path) -> None:
    path = str(tmp_path / "mute.sock")
    thread = _one_shot_server(path, None)
    started = time.monotonic()
    assert cli.notify(path=path, timeout=0.2) == 0
    print(f"\nnotify gave up after {time.monotonic() - started:.3f} s")
    # The server reads until the client hangs up: it ends because notify gave up and
    # closed its connection (it never answers, so nothing else ends it).
    thread.join(30)
    assert not thread.is_alive(), "notify left its connection open"


def test_notify_sends_its_arguments(tmp_path: Path) -> None:
    path = str(tmp_path / "d.sock")
    seen: list[bytes] = []
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def serve() -> None:
        with srv:
            conn, _ = srv.accept()
            with conn:
                seen.append(conn.recv(65536))
                conn.sendall(
                    b'HTTP/1.1 202 Accepted\r\nContent-Length: 17\r\n\r\n{"accepted":true}'
                )

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert cli.notify(hook="after-split-window", server="/tmp/a b", target="%3", path=path) == 0
    thread.join(5)
    assert seen[0].startswith(
        b"POST /v1/notify?hook=after-split-window&server=%2Ftmp%2Fa%20b&target=%253 HTTP/1.1\r\n"
    )
    assert b"\r\nConnection: close\r\n" in seen[0]


def test_raw_request_no_daemon(tmp_path: Path) -> None:
    with pytest.raises(rawhttp.NoDaemon):
        rawhttp.raw_request(str(tmp_path / "none.sock"), "GET", "/v1/health", 1.0)


def test_cli_module_imports_nothing_heavy() -> None:
    """notify's start-up: importing the CLI must not pull in msgspec, aiohttp or libtmux."""
    code = (
        "import sys, tmuxlocd.clients.cli; "
        "print(sorted(m for m in ('msgspec', 'aiohttp', 'libtmux', 'asyncio', 'typing', "
        "'argparse', 'http.client') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": REPO},
    ).stdout
    assert out.strip() == "[]"


# ----------------------------------------------------------------------------------------------
# Client: ids, URLs and stream decoding.


def test_refs() -> None:
    assert pane_ref("%3") == pane_ref("3") == "3"
    assert pane_ref("self") == "self"
    assert window_ref("@2") == window_ref("2") == "2"
    assert session_ref("$1") == session_ref("1") == "1"
    for bad in ("", "%", "x", "%3a", "@3"):
        with pytest.raises(ValueError):
            pane_ref(bad)
    with pytest.raises(ValueError):
        window_ref("%2")


def test_request_urls() -> None:
    assert core._self_request(False, False).url == "/v1/self"
    assert core._self_request(True, True).url == "/v1/self?fresh=1&accept=ancestor"
    assert core._location_request("%3", None, False, True).url == "/v1/panes/3"
    assert (
        core._location_request("self", "/tmp/a b", False, True).url
        == "/v1/panes/self?server=%2Ftmp%2Fa%20b&accept=ancestor"
    )
    assert core._neighbors_request("left", "%3", None, False).url == "/v1/panes/3/neighbors/left"
    with pytest.raises(ValueError):
        core._neighbors_request("up", "%3", None, False)  # type: ignore[arg-type]
    assert (
        core._panes_request("window", "summary", 10, None, None, True).url
        == "/v1/panes?window=self&detail=summary&limit=10&accept=ancestor"
    )
    assert core._panes_request("all", "full", None, None, None, True).url == "/v1/panes"
    assert core._text_request("self", 3, True, False).url == (
        "/v1/self?format=text&turn=3&neighbors=1"
    )
    assert core._text_request("%4", None, False, False).url == "/v1/panes/4?format=text"


def test_events_url() -> None:
    url = core._events_url(
        pane="self",
        window=None,
        session=None,
        server=None,
        types=["pane.added", "pane.removed"],
        fmt="ndjson",
        min_interval_ms=50,
        accept_ancestor=True,
    )
    assert url == (
        "/v1/events?pane=self&types=pane.added,pane.removed&format=ndjson"
        "&min_interval_ms=50&accept=ancestor"
    )
    url = core._events_url(
        pane=None,
        window="@2",
        session="$1",
        server=None,
        types="pane.changed",
        fmt="sse",
        min_interval_ms=None,
        accept_ancestor=True,
    )
    assert url == "/v1/events?window=2&session=1&types=pane.changed"


def test_decode_event_lines() -> None:
    added = encoder.encode(PaneAdded(id="a:1", time=1.0, location=LOC))
    assert decode_event_line(added + b"\n") == PaneAdded(id="a:1", time=1.0, location=LOC)
    assert decode_event_line(b'{"type":"heartbeat"}\n') is None
    assert decode_event_line(b'{"type":"pane.teleported","id":"a:2"}') is None
    assert decode_event_line(b"\n") is None
    assert decode_event_line(b'{"type":"reset","id":"b:0","time":2}') == Reset(id="b:0", time=2)
    with pytest.raises(msgspec.DecodeError):
        decode_event_line(b'{"type":"pane.added","id":"a:1"}')  # a known type, malformed
    # Every type the daemon sends is known to the client, pane.activity too (the client's
    # list was its own once, and lacked it): a malformed one is an error, not news.
    with pytest.raises(msgspec.DecodeError):
        decode_event_line(b'{"type":"pane.activity","id":"a:1"}')


def test_sse_decoder() -> None:
    dec = SSEDecoder()
    snap = encoder.encode(SnapshotEvent(id="a:5", time=1.0, panes=(LOC,)))
    lines = [b": heartbeat\n", b"id: a:5\n", b"event: snapshot\n", b"data: " + snap + b"\n"]
    assert [dec.feed(line) for line in lines] == [None] * 4
    assert dec.feed(b"\n") == SnapshotEvent(id="a:5", time=1.0, panes=(LOC,))
    assert dec.feed(b"\r\n") is None


def test_line_buffer() -> None:
    buf = LineBuffer()
    assert buf.feed(b"ab") == []
    assert buf.feed(b"c\nd") == [b"abc\n"]
    assert buf.feed(b"\n\ne") == [b"d\n", b"\n"]
    big = b"x" * 1_000_000
    assert buf.feed(big + b"\n") == [b"e" + big + b"\n"]


def test_backoff_and_retry_after() -> None:
    b = core._Backoff(0.05, 0.3)
    assert [b.next() for _ in range(5)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    b.reset()
    assert b.next() == 0.05
    assert core._retry_after("2", 0.1) == 2.0
    assert core._retry_after("soon", 0.1) == 0.1
    assert core._retry_after(None, 0.1) == 0.1


def test_error_bodies() -> None:
    err = core._error_of(404, b'{"error":{"code":"not_in_a_pane","message":"no tty"}}')
    assert (err.status, err.code, err.message) == (404, "not_in_a_pane", "no tty")
    err = core._error_of(502, b"Bad Gateway")
    assert (err.status, err.code, err.message) == (502, "http_502", "Bad Gateway")
    assert isinstance(DaemonUnavailable("/x", "gone"), client.ClientError)


def test_self_info_decodes_the_wire_form() -> None:
    wire = {
        "inside_tmux": True,
        "verified_by": "tty",
        "reason": None,
        "caller": {"pid": 9, "tty": "/dev/pts/5", "env_pane": "%3", "ancestor_pane": "%3"},
        "location": msgspec.to_builtins(LOC),
        "future_field": 1,
    }
    info = msgspec.json.decode(json.dumps(wire).encode(), type=client.SelfInfo)
    assert info.location == LOC and info.caller.env_pane == "%3"


def test_client_without_daemon(tmp_path: Path) -> None:
    with client.Client(str(tmp_path / "none.sock")) as c, pytest.raises(DaemonUnavailable):
        c.health()
    with client.Client(str(tmp_path / "none.sock")) as c, pytest.raises(DaemonUnavailable):
        next(iter(c.events()))


# ----------------------------------------------------------------------------------------------
# Text output of watch and tree.


def test_event_lines() -> None:
    removed = PaneRemoved(id="a:3", time=0, pane="%3", server="/s", last=LOC)
    lines = [
        cli.event_line(e).split(" ", 1)[1]
        for e in (
            SnapshotEvent(id="a:1", panes=(LOC,)),
            PaneAdded(location=LOC),
            PaneChanged(location=LOC, changed=("window.name", "neighbors")),
            removed,
            ServerUp(server=ServerRef(socket_path="/s", pid=7)),
            ServerDown(server=ServerRef(socket_path="/s", pid=None)),
            Reset(),
            Lagged(),
        )
    ]
    assert lines == [
        "snapshot 1 pane",
        'added %3 session work window 1 "editor" pane 0 79x40+0+0',
        'changed %3 session work window 1 "editor" pane 0 79x40+0+0 [window.name,neighbors]',
        "removed %3 (was session work window 1)",
        "server up /s pid 7",
        "server down /s",
        "reset (history unavailable; a snapshot follows)",
        "lagged (events dropped; a snapshot follows)",
    ]
    assert cli.event_line(Reset()).startswith("--:--:-- ")


def test_tree_lines() -> None:
    tree = msgspec.convert(
        {
            "servers": [
                {
                    "socket_path": "/s",
                    "pid": 7,
                    "running": True,
                    "sessions": [
                        {
                            "id": "$1",
                            "name": "work",
                            "windows": [
                                {
                                    "id": "@2",
                                    "index": 1,
                                    "name": 'a "b"',
                                    "active": True,
                                    "zoomed": True,
                                    "layout": "x",
                                    "panes": [msgspec.to_builtins(LOC.pane)],
                                }
                            ],
                        }
                    ],
                },
                {"socket_path": "/t", "pid": None, "running": False, "sessions": []},
            ]
        },
        Tree,
    )
    assert cli.tree_lines(tree, ("/s", "%3")) == [
        "server /s (pid 7)",
        "  session $1 work",
        '    window @2 1 "a \\"b\\"" (active, zoomed)',
        "     *pane %3 0 79x40+0+0 /dev/pts/5 (active)",
        "server /t (not running)",
    ]
    assert cli.tree_lines(tree, None)[3].startswith("      pane %3")


def test_durations() -> None:
    assert [cli._duration(s) for s in (5, 125, 7300)] == ["5s", "2m05s", "2h01m"]


# ----------------------------------------------------------------------------------------------
# Commands that stop before reaching a daemon.


def test_serve_config_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("log-level = 'loud'\n")
    assert cli.main(["serve", "--config", str(bad)]) == 2
    assert "log" in capsys.readouterr().err
    bad.write_text("not toml [")
    assert cli.main(["serve", "--config", str(bad)]) == 2
    assert "not valid TOML" in capsys.readouterr().err
    bad.write_text("stream-write-timeout = 0\n")
    assert cli.main(["serve", "--config", str(bad)]) == 2
    assert "stream-write-timeout" in capsys.readouterr().err
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    argv = ["serve", "--config", str(empty), "--stream-write-timeout", "-1"]
    assert cli.main(argv) == 2
    assert "stream-write-timeout" in capsys.readouterr().err


def test_stream_write_timeout_from_file_and_flag(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("stream-write-timeout = 5\n")
    config = load_config(path, explicit=True)
    assert config.stream_write_timeout == 5.0
    assert merge(config, stream_write_timeout=2.5).stream_write_timeout == 2.5
    assert merge(config, stream_write_timeout=None).stream_write_timeout == 5.0
    assert load_config(None).stream_write_timeout == 30.0


def test_mcp_without_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tmuxlocd.clients.mcp", None)  # import fails as if absent
    assert cli.main(["mcp"]) == 1
    assert "install tmuxlocd[mcp]" in capsys.readouterr().err


def test_no_command_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "usage: tmuxlocd" in capsys.readouterr().err


def test_bad_usage_exits_2() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["where", "--json", "--text"])
    assert exc.value.code == 2


# ----------------------------------------------------------------------------------------------
# direct: the pure parts.


def test_socket_from_tmux_env() -> None:
    assert sockets.socket_from_tmux_env("/tmp/tmux-1000/default,4242,0") == "/tmp/tmux-1000/default"
    assert sockets.socket_from_tmux_env("/tmp/a,b/sock,1,2") == "/tmp/a,b/sock"
    assert sockets.socket_from_tmux_env("") is None
    assert sockets.socket_from_tmux_env(None) is None
    assert sockets.socket_from_tmux_env("nocommas") is None


def test_env_pane() -> None:
    assert direct.env_pane({"TMUX_PANE": "%12"}) == "%12"
    assert direct.env_pane({"TMUX_PANE": "12"}) is None
    assert direct.env_pane({}) is None


def test_query_argv_and_parse() -> None:
    argv = oneshot.query_argv("tmux", "/s")
    # -N: a server that went away is not started again by the read (invoke.client_argv).
    assert argv[:5] == ["tmux", "-N", "-u", "-S", "/s"]
    assert argv.count(";") == 3 and argv[-3:] == ["display-message", "-p", oneshot.PID_FORMAT]
    assert SESSION_FORMAT in argv and WINDOW_FORMAT in argv and PANE_FORMAT in argv
    out = "\n".join(
        [
            "S\t$1\t0\twork",
            "W\t$1\t@2\t1\t1\t0\t%3\t4c30,158x40,0,0{79x40,0,0,3,78x40,80,0,4}\teditor",
            "P\t@2\t%3\t0\t1\t/dev/pts/5\t1234\t0\t0\t79\t40\t0",
            "P\t@2\t%4\t1\t0\t/dev/pts/6\t1235\t80\t0\t78\t40\t0",
            "V\t4242",
            "",
        ]
    )
    state = oneshot.parse_query("/tmp/tmux-1000/default", out)
    assert state.pid == 4242 and set(state.panes) == {"%3", "%4"}
    from tmuxlocd.core.location import build_locations

    assert build_locations(state)["%3"] == LOC
    with pytest.raises(RowError):
        oneshot.parse_query("/s", "X\tnope\n")


@pytest.mark.parametrize(
    ("version", "window", "session"),
    [("3.4", "$HOME", "s$x"), ("3.3a", "$HOME", "s$x"), ("3.5a", "\\$HOME", "s\\$x")],
)
def test_parse_query_names_by_tmux_version(version: str, window: str, session: str) -> None:
    # A window renamed to `$HOME` and a session to `s$x`, as each version prints them: 3.3a
    # stores and prints `\$HOME`; 3.4 stores the same and its output adds a backslash,
    # `\\$HOME`; 3.5 stores `$HOME`, so `\\$HOME` from 3.5 is the name `\$HOME`.
    printed = {
        "3.4": ("\\\\$HOME", "s\\\\$x"),
        "3.3a": ("\\$HOME", "s\\$x"),
        "3.5a": ("\\\\$HOME", "s\\\\$x"),
    }[version]
    out = "\n".join(
        [
            f"S\t$1\t0\t{printed[1]}",
            f"W\t$1\t@2\t1\t1\t0\t%3\tb25e,80x24,0,0,3\t{printed[0]}",
            "P\t@2\t%3\t0\t1\t/dev/pts/5\t1234\t0\t0\t80\t24\t0",
            f"V\t4242\t{version}",
            "",
        ]
    )
    state = oneshot.parse_query("/s", out)
    assert state.pid == 4242
    assert state.windows["@2"].name == window and state.sessions["$1"].name == session


def test_candidate_sockets(tmp_path: Path) -> None:
    sockdir = tmp_path / f"tmux-{os.getuid()}"
    sockdir.mkdir()
    (sockdir / "not-a-socket").write_text("")
    with socket.socket(socket.AF_UNIX) as a, socket.socket(socket.AF_UNIX) as b:
        a.bind(str(sockdir / "b"))
        b.bind(str(sockdir / "a"))
        env = {"TMUX_TMPDIR": str(tmp_path), "TMUX": f"{sockdir / 'b'},1,0"}
        found = direct.candidate_sockets(env, os.getuid())
        assert found == [str(sockdir / "b"), str(sockdir / "a")]  # $TMUX's first
        env = {"TMUX_TMPDIR": str(tmp_path / "missing")}
        assert direct.candidate_sockets(env, os.getuid()) == []


def test_direct_where_without_tty(tmp_path: Path) -> None:
    """A process with no controlling tty (and no ancestor with one) queries nothing."""
    code = (
        "import msgspec, sys; from tmuxlocd.clients import direct; "
        "sys.stdout.buffer.write(msgspec.json.encode(direct.where_am_i(tmux='/nonexistent')))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env.update(PYTHONPATH=REPO, TMUX_PANE="%7", TMUX_TMPDIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        check=True,
        cwd=REPO,
        env=env,
        start_new_session=True,
    ).stdout
    answer = json.loads(out)
    assert answer["inside_tmux"] is False
    assert answer["reason"] == "no_controlling_tty"
    assert answer["caller"]["env_pane"] == "%7"


def test_direct_query_keeps_a_raw_line_feed_in_a_window_name() -> None:
    """tmux stores `new-window -n` names as given: a LF splits the row, and is rejoined."""
    out = (
        "S\t$0\t1\tmain\n"
        "W\t$0\t@0\t0\t1\t0\t%0\tafbd,158x40,0,0,0\tbad\nname\n"
        "W\t$0\t@1\t1\t0\t0\t%1\tafbe,158x40,0,0,1\tok\n"
        "P\t@0\t%0\t0\t1\t/dev/pts/1\t10\t0\t0\t158\t40\t0\n"
        "P\t@1\t%1\t0\t1\t/dev/pts/2\t11\t0\t0\t158\t40\t0\n"
        "V\t42\t3.3a\n"
    )
    state = oneshot.parse_query("/s", out)
    assert {w.id: w.name for w in state.windows.values()} == {"@0": "bad\nname", "@1": "ok"}
    assert sorted(state.panes) == ["%0", "%1"]
