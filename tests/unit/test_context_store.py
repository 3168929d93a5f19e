"""The state files of ``tmuxlocd context``: private, atomic, locked, bounded."""

from __future__ import annotations

import errno
import io
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from tmuxlocd.clients import context
from tmuxlocd.core import harness
from tmuxlocd.core.harness import State

A = (
    'tmux location:\nsession s, window 0 "w", pane 0 %1\nwindow active=1, pane active=1, '
    "layout x\nneighbors: above none; below none; left none; right none\n"
)


@pytest.fixture
def store(tmp_path: Path) -> context.Store:
    s = context.Store(str(tmp_path / "run" / "context"))
    assert s.fd is not None
    return s


def test_directory_and_files_are_private(tmp_path: Path, store: context.Store) -> None:
    assert store.save("claude-s", State(1, 2, '"e"', A))
    directory = tmp_path / "run" / "context"
    assert directory.stat().st_mode & 0o777 == 0o700
    assert (tmp_path / "run").stat().st_mode & 0o777 == 0o700
    assert (directory / "claude-s").stat().st_mode & 0o777 == 0o600
    assert store.load("claude-s") == State(1, 2, '"e"', A)


def test_a_directory_of_others_or_a_link_is_refused(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir(mode=0o777)
    open_dir.chmod(0o777)
    (open_dir / "context").mkdir()
    (open_dir / "context").chmod(0o755)
    assert context.Store(str(open_dir / "context")).fd is None
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "p").mkdir(mode=0o700)
    (tmp_path / "p" / "context").symlink_to(real)
    assert context.Store(str(tmp_path / "p" / "context")).fd is None
    assert context.Store("/proc/nonexistent/context").fd is None


def test_a_failed_write_leaves_the_old_state_and_no_temporary_file(
    store: context.Store, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert store.save("claude-s", State(1, 2, '"e"', A))

    def full(fd: int, data: bytes) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("tmuxlocd.clients.context.os.write", full)
    assert not store.save("claude-s", State(2, 3, '"f"', A))
    monkeypatch.undo()
    assert store.load("claude-s") == State(1, 2, '"e"', A)
    assert sorted(p.name for p in (tmp_path / "run" / "context").iterdir()) == ["claude-s"]


def test_unreadable_state_is_no_state(store: context.Store, tmp_path: Path) -> None:
    (tmp_path / "run" / "context" / "claude-x").write_bytes(b"tmuxlocd-context 1\n1\n")
    assert store.load("claude-x") is None
    assert store.load("claude-missing") is None


def test_expiry_removes_old_sessions(store: context.Store, tmp_path: Path) -> None:
    directory = tmp_path / "run" / "context"
    for name in ("claude-old", "claude-old.lock", "claude-new"):
        (directory / name).write_text("")
    old = 1_000_000.0
    os.utime(directory / "claude-old", (old, old))
    os.utime(directory / "claude-old.lock", (old, old))
    store.expire(now_s=old + harness.STATE_MAX_AGE_S + 10)
    assert sorted(p.name for p in directory.iterdir()) == ["claude-new"]


def event(session: str, name: str = "UserPromptSubmit") -> harness.HookEvent:
    parsed = harness.parse_event(
        "claude", json.dumps({"hook_event_name": name, "session_id": session}).encode()
    )
    assert parsed is not None
    return parsed


def test_two_hooks_at_once_never_lose_a_turn(
    store: context.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twenty prompts of one session at once: each turn counted, the location told once."""
    reads: list[str] = []
    gate = threading.Barrier(20)

    def read(etag: str, env: Any, event: Any) -> harness.Reading:
        reads.append(etag)
        return harness.UNCHANGED if etag == '"e"' else harness.Reading("location", A, '"e"')

    monkeypatch.setattr(context, "read_location", read)
    told: list[str | None] = []

    def one() -> None:
        s = context.Store(store_path)
        gate.wait()
        try:
            told.append(context.handle(event("s1"), s, 0, {}))
        finally:
            s.close()

    store_path = os.readlink(f"/proc/self/fd/{store.fd}")
    threads = [threading.Thread(target=one) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert len(told) == 20
    assert [t for t in told if t is not None] == [harness.labelled(A, 1)]
    state = store.load(harness.state_name("claude", "s1"))
    assert state is not None and state.turn == 20


def test_run_reads_stdin_and_prints_the_harness_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(
        context, "read_location", lambda etag, env, event: harness.Reading("location", A, '"e"')
    )
    data = json.dumps({"hook_event_name": "BeforeAgent", "session_id": "g1"}).encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    env = {"TMUXLOCD_SOCKET": str(tmp_path / "d" / "d.sock")}
    context.run(["gemini", "--min-interval-ms", "oops"], env)
    out = capsys.readouterr()
    assert out.err == ""
    assert json.loads(out.out) == {
        "hookSpecificOutput": {
            "hookEventName": "BeforeAgent",
            "additionalContext": harness.labelled(A, 1),
        }
    }
    assert (tmp_path / "d" / "context" / "gemini-g1").exists()


@pytest.mark.parametrize(
    ("args", "parsed"),
    [
        (["claude"], ("claude", 0, "")),
        (["codex", "--min-interval-ms", "250"], ("codex", 250, "")),
        (["gemini", "--min-interval-ms=9"], ("gemini", 9, "")),
        (["claude", "--min-interval-ms", "-3"], ("claude", 0, "")),
        (["claude", "--min-interval-ms"], ("claude", 0, "")),
        (["copilot", "--event", "postToolUse"], ("copilot", 0, "postToolUse")),
        (
            ["antigravity", "--event=PreInvocation", "--min-interval-ms", "5"],
            ("antigravity", 5, "PreInvocation"),
        ),
        (["vim"], None),
        ([], None),
    ],
)
def test_arguments(args: list[str], parsed: tuple[str, int, str] | None) -> None:
    assert context.parse_args(args) == parsed


def test_main_never_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(args: Any, env: Any = None) -> None:
        raise RuntimeError("anything")

    monkeypatch.setattr(context, "run", boom)
    assert context.main(["claude"]) == 0


class FakeDaemon:
    """A Unix-socket HTTP server answering ``/v1/self?format=text`` with an ETag, 304 when the
    request carries it; it records each request's head."""

    def __init__(self, path: str, body: bytes) -> None:
        import socket

        self.body = body
        self.heads: list[str] = []
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen(8)
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    chunk = conn.recv(4096)
                    if not chunk:
                        break
                    head += chunk
                text = head.decode()
                self.heads.append(text)
                if 'if-none-match: "v1"' in text.lower():
                    conn.sendall(
                        b'HTTP/1.1 304 Not Modified\r\nETag: "v1"\r\nContent-Length: 0\r\n\r\n'
                    )
                else:
                    conn.sendall(
                        b'HTTP/1.1 200 OK\r\nETag: "v1"\r\nContent-Type: text/plain\r\n'
                        b"Content-Length: " + str(len(self.body)).encode() + b"\r\n\r\n" + self.body
                    )

    def close(self) -> None:
        self.sock.close()


def test_unchanged_is_one_conditional_request_and_no_write(tmp_path: Path) -> None:
    sock = str(tmp_path / "d.sock")
    daemon = FakeDaemon(sock, A.encode())
    env = {"TMUXLOCD_SOCKET": sock}
    store = context.Store(str(tmp_path / "context"))
    try:
        assert context.handle(event("s1"), store, 0, env) == harness.labelled(A, 1)
        state_file = tmp_path / "context" / "claude-s1"
        before = state_file.stat().st_mtime_ns, state_file.read_bytes()
        tool = event("s1", "PostToolUse")
        assert context.handle(tool, store, 0, env) is None
        assert context.handle(tool, store, 0, env) is None
        assert (state_file.stat().st_mtime_ns, state_file.read_bytes()) == before  # no write
        assert context.handle(event("s1"), store, 0, env) is None  # 304 too: the turn counted
    finally:
        store.close()
        daemon.close()
    assert len(daemon.heads) == 4
    first, *rest = daemon.heads
    # The session, so that below a shared server it is placed by its own client (spec §2).
    target = "/v1/self?format=text&neighbors=1&accept=ancestor&session=claude%3As1"
    assert first.startswith(f"GET {target} HTTP/1.1")
    assert "if-none-match" not in first.lower()
    assert all('If-None-Match: "v1"' in head for head in rest)


# ----------------------------------------------------------------------------------------------
# Gemini CLI's transcript: where a PreCompress left its mark, and what came after it.

# Lines as Gemini CLI 0.61.0 appends them (a session's transcript, JSONL).
MESSAGE = b'{"id":"3776b178","timestamp":"t","type":"gemini","content":"ok"}\n'
UPDATED = b'{"$set":{"lastUpdated":"2026-12-03T18:29:58.007Z"}}\n'
REBUILT = b'{"$set":{"sessionId":"119aa4c9-39f4-4cf8-8a3e-57745dd53829"}}\n'
MESSAGES = b'{"$set":{"messages":[{"id":"d049","type":"user","content":[]}]}}\n'


def test_the_transcript_after_a_mark(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(MESSAGE + UPDATED)
    mark = context.transcript_size(str(transcript))
    assert mark == len(MESSAGE + UPDATED)
    assert not context.transcript_rebuilt(str(transcript), mark)  # nothing since
    with transcript.open("ab") as f:
        f.write(MESSAGE + UPDATED + MESSAGES)  # a request, an abort's rollback: no rebuild
    assert not context.transcript_rebuilt(str(transcript), mark)
    with transcript.open("ab") as f:
        f.write(REBUILT + MESSAGES + MESSAGE)  # a compression
    assert context.transcript_rebuilt(str(transcript), mark)
    # A rebuild before the mark (the resume that opened the session) is not one after it.
    assert not context.transcript_rebuilt(str(transcript), transcript.stat().st_size)


def test_a_rebuild_across_the_reads_is_found(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    for split in range(1, len(harness.REBUILT)):  # splits inside the sign itself
        pad = b"x" * (context._CHUNK - split)
        transcript.write_bytes(pad + REBUILT)  # the marker across the first chunk's end
        assert context.transcript_rebuilt(str(transcript), 0), split
        transcript.write_bytes(pad + REBUILT[:split] + b"\n" + REBUILT[split:])
        assert not context.transcript_rebuilt(str(transcript), 0), split


def test_a_transcript_that_shrank_or_grew_past_reading_counts_as_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(MESSAGE)
    assert context.transcript_rebuilt(str(transcript), len(MESSAGE) + 1)  # rewritten
    monkeypatch.setattr(harness, "MAX_SCAN", len(MESSAGE) - 1)
    assert context.transcript_rebuilt(str(transcript), 0)


def test_a_transcript_it_cannot_read_is_no_evidence(tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.jsonl")
    assert context.transcript_size(missing) is None
    assert not context.transcript_rebuilt(missing, 0)
    assert context.transcript_size(str(tmp_path)) is None  # a directory
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert context.transcript_size(str(fifo)) is None  # opened without blocking, refused
    assert not context.transcript_rebuilt(str(fifo), 0)


def gemini(name: str, transcript: Path, **extra: str) -> harness.HookEvent:
    data = {"hook_event_name": name, "session_id": "g1", "transcript_path": str(transcript)}
    parsed = harness.parse_event("gemini", json.dumps({**data, **extra}).encode())
    assert parsed is not None
    return parsed


def test_gemini_told_once_and_again_after_a_compression(
    store: context.Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini CLI's order of events: SessionStart, BeforeAgent, then PreCompress before each
    request (compressing or not), AfterTool after a shell command."""
    monkeypatch.setattr(
        context, "read_location", lambda etag, env, event: harness.Reading("location", A, '"e"')
    )
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(MESSAGE)

    def hook(name: str, **extra: str) -> str | None:
        return context.handle(gemini(name, transcript, **extra), store, 0, {})

    def request(compressed: bool) -> None:
        assert hook("PreCompress", trigger="auto") is None
        with transcript.open("ab") as f:
            f.write((REBUILT + MESSAGES if compressed else b"") + MESSAGE + UPDATED)

    assert hook("SessionStart", source="startup") == A
    assert hook("BeforeAgent", prompt="hi") is None  # told at the start
    request(compressed=False)
    assert hook("AfterTool", tool_name="run_shell_command") is None
    request(compressed=False)
    assert hook("BeforeAgent", prompt="again") is None  # PreCompress alone forgets nothing
    request(compressed=True)
    assert hook("AfterTool", tool_name="run_shell_command") == harness.labelled(A, 2)
    request(compressed=False)
    assert hook("BeforeAgent", prompt="more") is None
    state = store.load(harness.state_name("gemini", "g1"))
    assert state is not None and state.turn == 3 and state.block == A and state.mark == -1
