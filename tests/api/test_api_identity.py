"""Who is calling, proven by real processes: a child whose controlling tty is a pty we open
(and that the hand-fed hub says is a pane's tty), children without a tty, another uid.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.api.apitest import SPEC_LAYOUT, Api, curl, spec_state
from tests.tmuxtest import wait_until
from tmuxlocd.daemon.api import views
from tmuxlocd.daemon.api.replies import Prepared, prepare_json
from tmuxlocd.daemon.hub import Hub
from tmuxlocd.host.identity import PeerFacts
from tmuxlocd.host.sockets import resolve_server
from tmuxlocd.host.system import HOST

A = resolve_server("tla-alpha")
SETSID = shutil.which("setsid")
SETPRIV = shutil.which("setpriv")
# The hand-fed panes' process: this test process, an ancestor of every client it starts, as
# a pane's process is of whatever runs in the pane (spec §2: the session leader, or failing
# that an ancestor, proves the tty's pane).
LEADER = os.getpid()

pytestmark = pytest.mark.skipif(
    SETSID is None or shutil.which("curl") is None, reason="needs setsid and curl"
)


@contextmanager
def pty() -> Iterator[tuple[int, str]]:
    """A fresh pty: (the slave fd, its path)."""
    master, slave = os.openpty()
    try:
        yield slave, os.ttyname(slave)
    finally:
        os.close(slave)
        os.close(master)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    env.update(extra)
    return env


async def run(
    argv: list[str], *, stdin: int | None = None, env: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """Run a client without blocking the loop the daemon answers on; (status, body)."""
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=stdin if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env or clean_env(),
    )
    out, err = await asyncio.wait_for(proc.communicate(), 20)
    body, _, status = out.rpartition(b"\n")
    assert status.isdigit(), (out, err)
    return int(status), body


def in_pty(argv: list[str]) -> list[str]:
    """``argv`` in a new session whose controlling tty is its stdin (the pty)."""
    assert SETSID is not None
    return [SETSID, "-c", *argv]


async def test_a_caller_in_a_pane_is_verified_by_its_tty(api: Api, hub: Hub) -> None:
    with pty() as (slave, path):
        hub.update(spec_state(A, pid3=LEADER, tty3=path))
        status, body = await run(in_pty(curl(api.path, "/v1/self")), stdin=slave)
        answer = json.loads(body)
        assert status == 200
        assert answer["inside_tmux"] is True
        assert answer["verified_by"] == "tty" and answer["reason"] is None
        assert answer["location"]["pane"]["id"] == "%3"
        assert answer["caller"]["tty"] == path
        assert answer["caller"]["env_pane"] is None
        assert answer["caller"]["ancestor_pane"] == "%3"
        assert answer["caller"]["pid"] not in (0, os.getpid())
        # The same caller, through the routes that take `self`.
        status, body = await run(in_pty(curl(api.path, "/v1/panes/self")), stdin=slave)
        assert status == 200 and json.loads(body)["pane"]["id"] == "%3"
        status, body = await run(
            in_pty(curl(api.path, "/v1/panes?window=self&detail=summary")), stdin=slave
        )
        assert [p["id"] for p in json.loads(body)["panes"]] == ["%3", "%4"]
        status, body = await run(
            in_pty(curl(api.path, "/v1/panes/self/neighbors/right")), stdin=slave
        )
        assert json.loads(body)["panes"] == [{"id": "%4", "index": 1, "shared": 40}]


async def test_text_form_from_a_real_caller(api: Api, hub: Hub) -> None:
    with pty() as (slave, path):
        hub.update(spec_state(A, pid3=LEADER, tty3=path, layout=SPEC_LAYOUT))
        status, body = await run(in_pty(curl(api.path, "/v1/self?format=text")), stdin=slave)
    assert status == 200
    assert body == (
        b"tmux location:\n"
        b'session work, window 1 "editor", pane 0 %3\n'
        b"window active=1, pane active=1, layout b25d,158x40,0,0{79x40,0,0,3,78x40,80,0,4}\n"
    )


async def test_tmux_pane_is_only_a_hint(api: Api, hub: Hub) -> None:
    with pty() as (slave, path):
        hub.update(spec_state(A, pid3=LEADER, tty3=path))
        status, body = await run(
            in_pty(curl(api.path, "/v1/self")), stdin=slave, env=clean_env(TMUX_PANE="%4")
        )
    assert status == 200
    answer = json.loads(body)
    assert answer["location"]["pane"]["id"] == "%3"  # the tty decides, not the variable
    assert answer["caller"]["env_pane"] == "%4"


async def test_a_tty_that_is_no_pane(api: Api, hub: Hub) -> None:
    with pty() as (slave, path):
        # No pane has the caller's tty: the default pane tty (/dev/pts/5) may be the very pty
        # just opened, so the pane gets a path no terminal has.
        hub.update(spec_state(A, pid3=LEADER, tty3=path + "-elsewhere"))
        status, body = await run(
            in_pty(curl(api.path, "/v1/self")), stdin=slave, env=clean_env(TMUX_PANE="%3")
        )
    assert status == 200
    answer = json.loads(body)
    assert (answer["inside_tmux"], answer["reason"]) == (False, "tty_not_a_pane")
    assert answer["caller"]["tty"] == path
    assert answer["caller"]["env_pane"] == "%3"
    assert answer["location"] is None


async def test_a_terminal_inside_a_pane_names_the_pane_above(api: Api, hub: Hub) -> None:
    # As under `script` in a pane: a shell on a second pty, whose parent is on the pane's.
    assert SETSID is not None
    with pty() as (pane_slave, pane_path), pty() as (_, inner_path):
        hub.update(spec_state(A, pid3=LEADER, tty3=pane_path))
        inner = f"{shlex.join(curl(api.path, '/v1/self'))}; true"
        outer = f"{SETSID} -c sh -c {shlex.quote(inner)} <{inner_path}; true"
        status, body = await run(in_pty(["sh", "-c", outer]), stdin=pane_slave)
    answer = json.loads(body)
    assert status == 200
    assert (answer["inside_tmux"], answer["reason"]) == (False, "tty_not_a_pane")
    assert answer["caller"]["tty"] == inner_path
    assert answer["caller"]["ancestor_pane"] == "%3"


async def test_no_server_running(api: Api, hub: Hub) -> None:
    hub.server(A)  # watched, but down
    with pty() as (slave, _):
        status, body = await run(in_pty(curl(api.path, "/v1/self")), stdin=slave)
    assert status == 200 and json.loads(body)["reason"] == "no_server"


def no_tty_child_of_pty_shell(argv: list[str]) -> list[str]:
    """A shell on the pty starts ``argv`` in a new session with no tty (as setsid does for
    daemons); the shell stays its parent, so the ancestor walk reaches the pty."""
    assert SETSID is not None
    inner = f"{SETSID} {shlex.join(argv)} </dev/null; true"
    return in_pty(["sh", "-c", inner])


async def test_no_controlling_tty_gives_the_ancestor_pane(api: Api, hub: Hub) -> None:
    with pty() as (slave, path):
        hub.update(spec_state(A, pid3=LEADER, tty3=path))
        status, body = await run(
            no_tty_child_of_pty_shell(curl(api.path, "/v1/self")),
            stdin=slave,
            env=clean_env(TMUX_PANE="%3"),
        )
        answer = json.loads(body)
        assert (answer["inside_tmux"], answer["reason"]) == (False, "no_controlling_tty")
        assert answer["caller"]["tty"] is None
        assert answer["caller"]["ancestor_pane"] == "%3"
        assert answer["caller"]["env_pane"] == "%3"
        status, body = await run(
            no_tty_child_of_pty_shell(curl(api.path, "/v1/self?accept=ancestor")), stdin=slave
        )
        answer = json.loads(body)
        assert answer["inside_tmux"] is True and answer["verified_by"] == "ancestor"
        assert answer["reason"] is None and answer["location"]["pane"]["id"] == "%3"
        status, body = await run(
            no_tty_child_of_pty_shell(curl(api.path, "/v1/panes/self")), stdin=slave
        )
        assert (status, json.loads(body)["error"]["code"]) == (404, "not_in_a_pane")
        status, body = await run(
            no_tty_child_of_pty_shell(curl(api.path, "/v1/panes/self?accept=ancestor")), stdin=slave
        )
        assert status == 200 and json.loads(body)["pane"]["id"] == "%3"


# A process shaped like Codex's shared app-server (``codex app-server --listen unix://``, in a
# session of its own) that runs its client's commands as its children.
SHARED_SERVER = [
    sys.executable,
    "-c",
    "import subprocess, sys; sys.exit(subprocess.call(sys.argv[sys.argv.index('--') + 1 :]))",
    "app-server",
    "--listen",
    "unix://",
    "--",
]


async def test_below_a_server_of_several_sessions_nobody_is_placed(api: Api, hub: Hub) -> None:
    with pty() as (slave, path):
        hub.update(spec_state(A, pid3=LEADER, tty3=path))
        for target in ("/v1/self", "/v1/self?accept=ancestor"):
            status, body = await run(
                no_tty_child_of_pty_shell([*SHARED_SERVER, *curl(api.path, target)]),
                stdin=slave,
                env=clean_env(TMUX_PANE="%3"),
            )
            answer = json.loads(body)
            assert (answer["inside_tmux"], answer["reason"]) == (False, "shared_ancestor")
            assert answer["caller"]["ancestor_pane"] is None
            assert answer["caller"]["env_pane"] is None  # the starter's TMUX_PANE
        status, body = await run(
            no_tty_child_of_pty_shell(
                [*SHARED_SERVER, *curl(api.path, "/v1/panes/self?accept=ancestor")]
            ),
            stdin=slave,
        )
        assert (status, json.loads(body)["error"]["code"]) == (404, "not_in_a_pane")


async def test_no_controlling_tty_comes_before_no_server(api: Api, hub: Hub) -> None:
    # No server at all, and a child in a session of its own (pytest's may have a tty).
    assert SETSID is not None
    status, body = await run([SETSID, *curl(api.path, "/v1/self")])
    assert status == 200 and json.loads(body)["reason"] == "no_controlling_tty"


async def test_pane_self_stream_follows_the_callers_pane(api: Api, hub: Hub) -> None:
    assert SETSID is not None
    with pty() as (slave, path):
        hub.update(spec_state(A, pid3=LEADER, tty3=path))
        argv = in_pty(
            [
                "curl",
                "-sN",
                "--unix-socket",
                api.path,
                "http://localhost/v1/events?pane=self&format=ndjson",
            ]
        )
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=slave, stdout=asyncio.subprocess.PIPE, env=clean_env()
        )
        assert proc.stdout is not None
        try:

            async def line() -> dict[str, Any]:
                assert proc.stdout is not None
                raw = await asyncio.wait_for(proc.stdout.readline(), 10)
                return dict(json.loads(raw))

            snap = await line()
            assert [p["pane"]["id"] for p in snap["panes"]] == ["%3"]
            # Another pane of another server changes: nothing.  Then ours: one event.
            hub.update(spec_state(resolve_server("tla-other")))
            hub.update(spec_state(A, pid3=LEADER, tty3=path, layout=SPEC_LAYOUT))
            ev = await line()
            assert (ev["type"], ev["location"]["pane"]["id"]) == ("pane.changed", "%3")
            # The same panes in the same places: only the layout string (its checksum) differs.
            assert ev["changed"] == ["window.layout"]
        finally:
            proc.kill()
            await proc.wait()


@pytest.mark.skipif(SETPRIV is None or os.getuid() != 0, reason="needs setpriv and root")
async def test_another_uid_is_forbidden(api: Api, hub: Hub) -> None:
    hub.update(spec_state(A))
    # Only for this test: let uid 65534 reach the socket at all, so the daemon decides.
    os.chmod(api.dir, 0o711)
    os.chmod(api.path, 0o666)
    assert SETPRIV is not None
    for url in ("/v1/self", "/v1/panes/3", "/v1/nothing"):
        status, body = await run(
            [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", *curl(api.path, url)]
        )
        error = json.loads(body)["error"]
        assert (status, error["code"]) == (403, "forbidden"), url
        assert "65534" in error["message"]


# One caller process asking on one keep-alive connection, one request per line it reads on
# the pipe it is given.
ASK_AGAIN = """
import http.client, json, os, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sys.argv[1])
conn = C("localhost")
step = os.fdopen(int(sys.argv[2]))
for target in iter(step.readline, ""):
    conn.request("GET", target.strip())
    r = conn.getresponse()
    body = r.read()
    print(r.status, r.getheader("ETag"), json.dumps(body.decode()), flush=True)
"""


async def test_an_unchanged_callers_answer_is_kept_and_never_stale(
    api: Api, hub: Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same caller asking again about an unchanged model gets the same bytes (kept:
    the connection's memo.Kept); after a change, at once the new answer, never the kept one."""
    assert SETSID is not None
    made: list[object] = []

    def counted(value: object) -> Prepared:
        made.append(value)
        return prepare_json(value)

    monkeypatch.setattr(views, "prepare_json", counted)
    with pty() as (slave, path):
        hub.update(spec_state(A, pid3=LEADER, tty3=path))
        read_end, write_end = os.pipe()
        proc = await asyncio.create_subprocess_exec(
            SETSID,
            "-c",
            shutil.which("python3") or "python3",
            "-c",
            ASK_AGAIN,
            api.path,
            str(read_end),
            stdin=slave,
            stdout=asyncio.subprocess.PIPE,
            env=clean_env(),
            pass_fds=(read_end,),
        )
        os.close(read_end)
        assert proc.stdout is not None

        async def ask(target: str = "/v1/self") -> tuple[str, str, dict[str, Any]]:
            os.write(write_end, target.encode() + b"\n")
            assert proc.stdout is not None
            line = await asyncio.wait_for(proc.stdout.readline(), 20)
            status, etag, body = line.decode().split(" ", 2)
            return status, etag, json.loads(json.loads(body))

        try:
            first = await ask()
            assert first[0] == "200" and first[2]["location"]["window"]["layout"] != SPEC_LAYOUT
            assert len(made) == 1
            assert await ask() == first  # kept: the same answer, not made again
            assert await ask() == first
            assert len(made) == 1
            hub.update(spec_state(A, pid3=LEADER, tty3=path, layout=SPEC_LAYOUT))
            changed = await ask()
            assert changed[2]["location"]["window"]["layout"] == SPEC_LAYOUT
            assert len(made) == 2
            # Another query is another question; asking the first again after it is made anew
            # (one answer is kept per connection) and equal to the last.
            assert (await ask("/v1/self?neighbors=1"))[0] == "200" and len(made) == 3
            assert await ask() == changed and len(made) == 4
            assert changed[1] != first[1]
            # The text form is its own question, with its own answer.
            os.write(write_end, b"/v1/self?format=text\n")
            text = await asyncio.wait_for(proc.stdout.readline(), 20)
            assert text.startswith(b"200 ") and b"tmux location:" in text
            # The pane goes away: no kept answer says it is still there.
            hub.update(spec_state(A, pid3=LEADER, tty3="/dev/pts/999999"))
            gone = await ask()
            assert gone[2]["inside_tmux"] is False and gone[2]["location"] is None
        finally:
            os.close(write_end)
            await asyncio.wait_for(proc.wait(), 20)


def kept_stat_files(pid: int) -> int:
    """How many descriptors of this process are open on ``/proc/<pid>/stat``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == f"/proc/{pid}/stat":
                count += 1
        except OSError:
            continue
    return count


async def ask_self(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    writer.write(b"GET /v1/self HTTP/1.1\r\nHost: localhost\r\n\r\n")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5)
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await asyncio.wait_for(reader.readexactly(length), 5)


async def test_a_keep_alive_caller_s_stat_is_kept_open_while_it_asks(api: Api) -> None:
    # The app runs in this process, so the caller (this process) reads its own record: a
    # one-shot question holds no descriptor, a second on the same connection keeps one, and
    # the connection's end closes it.
    me = os.getpid()
    before = kept_stat_files(me)
    reader, writer = await asyncio.open_unix_connection(api.path)
    try:
        first = await ask_self(reader, writer)
        assert b" 200 " in first.split(b"\r\n", 1)[0]
        assert kept_stat_files(me) == before
        second = await ask_self(reader, writer)
        third = await ask_self(reader, writer)
        assert second.rpartition(b"\r\n\r\n")[2] == first.rpartition(b"\r\n\r\n")[2]
        assert third.rpartition(b"\r\n\r\n")[2] == first.rpartition(b"\r\n\r\n")[2]
        # The portable host keeps nothing: a record per question (a sysctl on macOS).
        assert kept_stat_files(me) == before + (1 if HOST.name == "linux" else 0)
    finally:
        writer.close()
        await writer.wait_closed()
    await wait_until(lambda: kept_stat_files(me) == before, 10, "the kept stat file closed")


async def test_a_kept_stat_file_of_a_process_gone_reads_nothing(tmp_path: Any) -> None:
    # What makes keeping it safe: the file names the process, not its number.
    proc = await asyncio.create_subprocess_exec("sleep", "30")
    facts = PeerFacts(proc.pid)
    try:
        first, second = facts.read(), facts.read()  # the second one keeps the file
        assert first.stat is not None and second == first
        proc.kill()
        await proc.wait()
        assert facts.read().stat is None
    finally:
        facts.close()


# A stand-in for an ssh connection master: a process named ``ssh`` (its comm, from the name
# it was started by) that listens on a Unix socket, as a master does on its ControlPath, and
# asks the daemon as ``ssh -R`` forwards a remote client's connection.
FAKE_SSH = """
import socket, sys, urllib.parse
listen, daemon = sys.argv[1], sys.argv[2]
if listen:
    control = socket.socket(socket.AF_UNIX)
    control.bind(listen)
    control.listen(1)
s = socket.socket(socket.AF_UNIX)
s.connect(daemon)
s.sendall(b"GET /v1/self HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n")
data = b""
while chunk := s.recv(65536):
    data += chunk
head, _, body = data.partition(b"\\r\\n\\r\\n")
sys.stdout.write(body.decode() + "\\n" + head.split()[1].decode())
"""


@pytest.mark.parametrize("master", [True, False], ids=["master", "plain"])
async def test_an_ssh_connection_master_is_in_no_pane(
    api: Api, hub: Hub, master: bool, tmp_path: Any
) -> None:
    ssh = tmp_path / "ssh"
    ssh.symlink_to(sys.executable)
    control = str(tmp_path / "cm-sock") if master else ""
    with pty() as (slave, path):
        hub.update(spec_state(A, pid3=LEADER, tty3=path))
        argv = in_pty([str(ssh), "-c", FAKE_SSH, control, api.path])
        status, body = await run(argv, stdin=slave, env=clean_env(TMUX_PANE="%3"))
    answer = json.loads(body)
    assert status == 200
    if HOST.name != "linux":
        # The portable host cannot see listening sockets: any ssh may be a master, and so
        # places no one (fail safe), whether it listens or not.
        assert (answer["verified_by"], answer["location"]) == (None, None)
        assert answer["reason"] == "shared_ssh_master"
        assert "cannot see its listening sockets" in answer["hint"]
        return
    if not master:  # an ssh that shares no connection speaks for its own pane
        assert answer["verified_by"] == "tty" and answer["location"]["pane"]["id"] == "%3"
        assert answer["hint"] is None
        return
    assert (answer["inside_tmux"], answer["verified_by"], answer["location"]) == (
        False,
        None,
        None,
    )
    assert answer["reason"] == "shared_ssh_master"
    assert control in answer["hint"] and "-o ControlPath=none" in answer["hint"]
    assert answer["caller"]["tty"] == path
    assert answer["caller"]["env_pane"] is None and answer["caller"]["ancestor_pane"] is None
