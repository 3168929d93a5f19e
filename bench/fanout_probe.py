"""A lean holder of many ``/v1/events`` streams, as its own process (B4, B8, B9).

``python -m bench.fanout_probe`` reads one JSON command per line on stdin and answers one
JSON line on stdout.  It holds its streams on raw non-blocking sockets under one epoll, and
takes for every stream the time of the epoll wait that reported its bytes, so that 1,000
subscribers cost the measuring side a few microseconds each (an asyncio protocol per stream
costs ten times that, and the measured spread would be the client's own).  A time is when
this process learnt that the bytes were there: an upper bound of when they arrived.

Commands:

- ``connect {socket, target, n}``: open ``n`` more streams, answer when each has its snapshot.
- ``changes {split, kill, k, gap_s}``: ``k`` times run the ``split`` argv (which prints the new
  pane id), wait until every stream has its ``pane.added``, then the ``kill`` argv (with
  ``{pane}`` in it) and wait for every ``pane.removed``; answers the first and last arrival of
  each ``pane.added`` after the spawn, and the event lines and bytes one stream got.
- ``attach {argv}``: start a bare control client (``tmux -C attach ...``), read under the
  same epoll; ``detach`` ends it.
- ``hits {pattern, wait, control}``: answers ``{"armed": true}`` at once; then, when every
  stream has read a line with ``pattern`` and the control client (with ``control``) a line
  starting with ``control`` (or ``wait`` seconds passed), the time each did (None: not).
  B3 with many subscribers: the runner makes the change; the control client is its
  alternative in the observer's session.
- ``storm {timeout}``: answers ``{"armed": true}`` at once; then every stream that ends is
  reopened with ``Last-Event-ID`` (retrying while nothing listens), until each has a snapshot
  of another daemon instance; answers when each got it, and what was refused.
- ``close``: close every stream and exit.
"""

from __future__ import annotations

import json
import os
import resource
import select
import socket
import subprocess
import sys
import time
from typing import Any

HEAD, SIZE, DATA = 0, 1, 2
# How much of each event line is kept: enough for its type and id (the id comes first).
LINE_HEAD = 200

# Every read lands in this one buffer and only its bytes are copied out.  ``recv(1 MiB)``
# has glibc map a fresh 1 MiB block and unmap it again for each call (measured: 18 to 21 µs
# a read, against 2.6 µs this way); over 1,000 streams that was 20 ms of this process's own
# time inside the spread it measures.
READ_BUF = bytearray(1 << 20)
READ_VIEW = memoryview(READ_BUF)


class Sub:
    """One stream: an HTTP/1.1 chunked NDJSON response, parsed just enough."""

    def __init__(self, path: str, target: str) -> None:
        self.path = path
        self.target = target
        self.sock: socket.socket | None = None
        self.raw = bytearray()  # the head, or a chunk's size line, until it ends
        self.line_head = bytearray()  # the first bytes of the event line being read
        self.unparsed: list[bytes] = []  # read while measuring, parsed after
        self.tail = b""  # the end of the last read, for a pattern cut in two
        self.state = HEAD
        self.need = 0
        self.status = 0
        self.last_id: str | None = None
        self.snapshot_at: float | None = None  # when the latest snapshot was complete
        self.snapshot_instance: str | None = None
        self.lines = 0
        self.received = 0  # bytes read, all told
        self.pattern: bytes | None = None
        self.hit: float | None = None
        self.ended = False

    def open(self, resume: bool) -> bool:
        """Connect (non-blocking: a Unix connect either succeeds at once or fails) and send
        the request; False when nothing accepted it."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.setblocking(False)
        try:
            sock.connect(self.path)
        except OSError:
            sock.close()
            return False
        head = f"GET {self.target} HTTP/1.1\r\nHost: localhost\r\n"
        if resume and self.last_id is not None:
            head += f"Last-Event-ID: {self.last_id}\r\n"
        sock.sendall((head + "\r\n").encode())
        self.sock, self.raw, self.state, self.status, self.ended = sock, bytearray(), HEAD, 0, False
        self.line_head = bytearray()
        return True

    def fileno(self) -> int:
        assert self.sock is not None
        return self.sock.fileno()

    def read(self, now: float) -> None:
        assert self.sock is not None
        try:
            n = self.sock.recv_into(READ_BUF)
        except BlockingIOError:
            return
        except OSError:
            n = 0
        if not n:
            self.ended = True
            return
        self.received += n
        if self.pattern is not None:
            # Measuring: only look for the pattern (across the last read's end too), and
            # parse later, so that reading 1,000 streams keeps up with their writer.
            data = bytes(READ_VIEW[:n])
            seen = self.tail + data[: len(self.pattern)]
            if self.pattern in data or self.pattern in seen:
                self.pattern, self.hit = None, now
            self.tail = data[-len(self.pattern or b"") :] if self.pattern else b""
            self.unparsed.append(data)
            return
        self.flush(now)
        self._consume(READ_BUF, n, now)

    def flush(self, now: float) -> None:
        """Parse what was read while measuring."""
        for data in self.unparsed:
            self._consume(data, len(data), now)
        self.unparsed.clear()

    def _consume(self, buf: bytes | bytearray, n: int, now: float) -> None:
        """Parse ``buf[:n]``, the next bytes of the response, where they lie: the data of a
        chunk is scanned for line ends and only each line's first bytes are copied (its type
        and id).  A storm's reader takes in 1,000 snapshots of 866 KiB at 1,000 panes; one
        that copied each byte five times over (to join, to cut chunks, to split lines) spent
        more CPU on it than the daemon that wrote them, on the same 2 cores."""
        at = 0
        while at < n and not self.ended:
            if self.state == DATA:
                take = min(self.need, n - at)
                # ``need`` counts the chunk's closing CRLF too: no line end is looked for there.
                self._data(buf, at, at + min(take, max(self.need - 2, 0)), now)
                self.need -= take
                at += take
                if not self.need:
                    self.state = SIZE
                continue
            # The head and a chunk's size line are small: gathered in ``raw`` until they end.
            before = len(self.raw)
            piece = buf[at : min(n, at + 4096)]
            self.raw += piece
            sep = b"\r\n\r\n" if self.state == HEAD else b"\r\n"
            end = self.raw.find(sep)
            if end < 0:
                at += len(piece)
                continue
            line = bytes(self.raw[:end])
            at += end + len(sep) - before
            self.raw.clear()
            if self.state == HEAD:
                self.status = int(line[9:12])
                if self.status != 200:
                    self.ended = True
                    return
                self.state = SIZE
                continue
            size = int(line.split(b";")[0], 16)
            if size == 0:
                self.ended = True
                return
            # The chunk's data, then its closing CRLF.
            self.need, self.state = size + 2, DATA

    def _data(self, buf: bytes | bytearray, start: int, stop: int, now: float) -> None:
        """Bytes ``start:stop`` of a chunk's data.  Events come as lines; a snapshot's may span
        chunks."""
        at = start
        head = self.line_head
        while at < stop:
            eol = buf.find(b"\n", at, stop)
            stop_line = stop if eol < 0 else eol
            if len(head) < LINE_HEAD:
                head += buf[at : min(stop_line, at + LINE_HEAD - len(head))]
            if eol < 0:
                return
            self._line(bytes(head), now)
            head.clear()
            at = eol + 1

    def _line(self, line: bytes, now: float) -> None:
        """A whole event line, as its first LINE_HEAD bytes."""
        if not line or line.startswith(b'{"type":"heartbeat"'):
            return
        self.lines += 1
        at = line.find(b'"id":"')
        if at >= 0 and (close := line.find(b'"', at + 6)) >= 0:
            ident = line[at + 6 : close].decode()
            self.last_id = ident
            if line.startswith(b'{"type":"snapshot"'):
                self.snapshot_at = now
                self.snapshot_instance = ident.rpartition(":")[0]

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class Control:
    """A bare control client (``tmux -C attach ...``) read under the same epoll as the
    streams: B3's alternative, stamped by the same process and the same waits as the
    subscribers it is compared with, so that neither side's time holds a wake-up of a
    process the other does not need."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buf = b""  # the start of a line still being read
        self.pattern: bytes | None = None  # armed: the start of the line looked for
        self.hit: float | None = None
        self.ended = False
        self.ready = False

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command.encode() + b"\n")
        self.proc.stdin.flush()

    def read(self, now: float) -> None:
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return
        if not data:
            self.ended = True
            return
        *lines, self.buf = (self.buf + data).split(b"\n")
        for line in lines:
            if line == b"ready":
                self.ready = True
            if self.pattern is not None and line.startswith(self.pattern):
                self.pattern, self.hit = None, now

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()  # tmux -C ends at the end of its input
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Probe:
    def __init__(self) -> None:
        self.subs: list[Sub] = []
        self.epoll = select.epoll()
        self.by_fd: dict[int, Sub | Control] = {}
        self.control: Control | None = None

    def _watch(self, sub: Sub) -> None:
        fd = sub.fileno()
        self.by_fd[fd] = sub
        self.epoll.register(fd, select.EPOLLIN)

    def _unwatch(self, sub: Sub) -> None:
        if sub.sock is not None:
            fd = sub.fileno()
            self.epoll.unregister(fd)
            self.by_fd.pop(fd, None)
            sub.close()

    def poll(self, timeout: float) -> list[Sub]:
        """Read whatever is ready (waiting at most ``timeout``); the streams that ended."""
        ended: list[Sub] = []
        ready = self.epoll.poll(timeout, 4096)
        # Every stream of the batch had its bytes when the wait returned: that time is the
        # tighter bound (reading 1,000 streams one by one takes longer than their arrival).
        now = time.perf_counter()
        for fd, _ in ready:
            sub = self.by_fd.get(fd)
            if sub is None:
                continue
            sub.read(now)
            if not sub.ended:
                continue
            if sub is self.control:
                raise RuntimeError("the control client ended")
            assert isinstance(sub, Sub)
            ended.append(sub)
        return ended

    def run_until(self, done: Any, timeout: float) -> bool:
        deadline = time.perf_counter() + timeout
        while not done():
            left = deadline - time.perf_counter()
            if left <= 0:
                return False
            for sub in self.poll(min(left, 0.05)):
                raise RuntimeError(f"a stream ended (status {sub.status})")
        return True

    def connect(self, socket_path: str, target: str, n: int) -> dict[str, Any]:
        t0, cpu0 = time.perf_counter(), time.process_time()
        fresh = []
        for _ in range(n):
            sub = Sub(socket_path, target)
            if not sub.open(resume=False):
                raise RuntimeError("connect refused")
            self._watch(sub)
            fresh.append(sub)
            self.subs.append(sub)
            self.poll(0)  # keep up with the snapshots as they come
        if not self.run_until(lambda: all(s.snapshot_at is not None for s in fresh), 300):
            raise RuntimeError("not every stream got its snapshot")
        return {
            "seconds": time.perf_counter() - t0,
            "streams": len(self.subs),
            # What the new streams read, all told (a snapshot and its framing each).
            "bytes": sum(s.received for s in fresh),
            "cpu": time.process_time() - cpu0,
        }

    def _arm(self, pattern: bytes) -> None:
        for sub in self.subs:
            sub.flush(time.perf_counter())
            sub.pattern, sub.hit, sub.tail = pattern, None, b""

    def _wait_all(self, pattern: bytes, timeout: float) -> bool:
        self._arm(pattern)
        ok = self.run_until(lambda: all(s.pattern is None for s in self.subs), timeout)
        for sub in self.subs:
            sub.pattern = None
            sub.flush(time.perf_counter())
        return ok

    def attach(self, argv: list[str]) -> dict[str, Any]:
        """Start the control client (``argv``), answer once it answers a command."""
        if self.control is not None:
            raise ValueError("a control client is attached already")
        control = self.control = Control(argv)
        self.by_fd[control.fd] = control
        self.epoll.register(control.fd, select.EPOLLIN)
        control.send("display-message -p ready")
        if not self.run_until(lambda: control.ready, 30):
            raise RuntimeError("the control client did not answer")
        return {}

    def detach(self) -> dict[str, Any]:
        control, self.control = self.control, None
        if control is not None:
            self.epoll.unregister(control.fd)
            self.by_fd.pop(control.fd, None)
            control.close()
        return {}

    def hits(self, pattern: str, wait: float, control: str | None = None) -> dict[str, Any]:
        """Arm every stream for ``pattern`` (and the control client for a line starting with
        ``control``) and say so at once; answer when each saw it."""
        peer = None
        if control is not None:
            peer = self.control
            if peer is None:
                raise ValueError("no control client is attached")
            peer.pattern, peer.hit = control.encode(), None
        self._arm(pattern.encode())
        print(json.dumps({"ok": True, "armed": True}), flush=True)
        ok = self.run_until(
            lambda: (
                all(s.pattern is None for s in self.subs) and (peer is None or peer.pattern is None)
            ),
            wait,
        )
        for sub in self.subs:
            sub.pattern = None
            sub.flush(time.perf_counter())
        answer: dict[str, Any] = {"hits": [s.hit for s in self.subs], "complete": ok}
        if peer is not None:
            answer["control"] = peer.hit
            peer.pattern = None
        return answer

    def changes(
        self, split: list[str], kill: list[str], k: int, gap_s: float, control: str | None = None
    ) -> dict[str, Any]:
        """``k`` splits (each followed by its kill): the first and the last stream's time of
        each split's ``pane.added`` after its spawn, and with ``control`` the attached control
        client's time of its line starting so (B3's alternative, in the same sample)."""
        first: list[float] = []
        last: list[float] = []
        seen: list[float] = []
        peer = self.control
        if control is not None and peer is None:
            raise ValueError("no control client is attached")
        misses = 0
        lines0, bytes0 = self.subs[0].lines, self.subs[0].received
        split_bytes: list[int] = []
        for _ in range(k):
            # Quiet first: nothing of the last change still on its way.
            quiet_until = time.perf_counter() + gap_s
            while time.perf_counter() < quiet_until:
                self.poll(max(quiet_until - time.perf_counter(), 0))
            self._arm(b'"pane.added"')
            if control is not None and peer is not None:
                peer.pattern, peer.hit = control.encode(), None
            before = self.subs[0].received
            t0 = time.perf_counter()
            proc = subprocess.Popen(split, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            ok = self.run_until(
                lambda: (
                    all(s.pattern is None for s in self.subs)
                    and (control is None or peer is None or peer.pattern is None)
                ),
                10,
            )
            for sub in self.subs:
                sub.pattern = None
                sub.flush(time.perf_counter())
            out, _ = proc.communicate(timeout=30)
            hits = [s.hit for s in self.subs if s.hit is not None]
            # The publication that carried the pane.added (one chunk to each stream).
            split_bytes.append(self.subs[0].received - before)
            if ok and len(hits) == len(self.subs):
                first.append(min(hits) - t0)
                last.append(max(hits) - t0)
                if control is not None and peer is not None and peer.hit is not None:
                    seen.append(peer.hit - t0)
            else:
                misses += 1
            pane = out.decode().strip()
            if not pane.startswith("%"):
                raise RuntimeError(f"split failed: {out!r}")
            subprocess.run([a.replace("{pane}", pane) for a in kill], check=True)
            if not self._wait_all(b'"pane.removed"', 10):
                misses += 1
        return {
            "first": first,
            "last": last,
            "misses": misses,
            "lines": self.subs[0].lines - lines0,
            "bytes": self.subs[0].received - bytes0,
            "split_bytes": split_bytes,
            "control": seen,
        }

    def storm(self, timeout: float) -> dict[str, Any]:
        old = {s.snapshot_instance for s in self.subs}
        cpu0 = time.process_time()
        print(json.dumps({"armed": True}), flush=True)
        refused = 0
        down: list[Sub] = []
        deadline = time.perf_counter() + timeout
        ended_at: dict[int, float] = {}
        reopened_at: dict[int, float] = {}
        statuses: dict[int, int] = {}
        next_try = 0.0

        def fresh(s: Sub) -> bool:
            return s.snapshot_instance not in old and s.snapshot_at is not None

        while not all(fresh(s) for s in self.subs):
            if time.perf_counter() > deadline:
                break
            for sub in self.poll(0.002 if down else 0.05):
                if sub.status and sub.status != 200:
                    statuses[sub.status] = statuses.get(sub.status, 0) + 1
                ended_at.setdefault(id(sub), time.perf_counter())
                self._unwatch(sub)
                down.append(sub)
            still: list[Sub] = []
            now = time.perf_counter()
            # While nothing listens, one connect every 5 ms (as a client backing off would);
            # once one is accepted, all the others at once.
            if down and now >= next_try:
                for sub in down:
                    if still or not sub.open(resume=True):
                        still.append(sub)
                        continue
                    reopened_at[id(sub)] = time.perf_counter()
                    self._watch(sub)
                if still and len(still) == len(down):
                    refused += 1
                    next_try = now + 0.005
                down = still
        got = [s.snapshot_at for s in self.subs if fresh(s) and s.snapshot_at is not None]
        return {
            "streams": len(self.subs),
            "resumed": len(got),
            "last_snapshot": max(got) if got else None,
            "first_end": min(ended_at.values()) if ended_at else None,
            "first_reopen": min(reopened_at.values()) if reopened_at else None,
            "last_reopen": max(reopened_at.values()) if reopened_at else None,
            "connect_retries": refused,
            "cpu": time.process_time() - cpu0,  # this process's, reading the storm's bytes
            "statuses": {str(k): v for k, v in statuses.items()},
        }

    def close(self) -> None:
        for sub in self.subs:
            self._unwatch(sub)
        self.subs.clear()


def main() -> int:
    # 1,000 streams and the epoll: more descriptors than the usual soft limit.
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    probe = Probe()
    for line in sys.stdin:
        cmd = json.loads(line)
        kind = cmd.pop("kind")
        try:
            if kind == "connect":
                result = probe.connect(cmd["socket"], cmd["target"], cmd["n"])
            elif kind == "changes":
                result = probe.changes(
                    cmd["split"], cmd["kill"], cmd["k"], cmd["gap_s"], cmd.get("control")
                )
            elif kind == "hits":
                result = probe.hits(cmd["pattern"], cmd["wait"], cmd.get("control"))
            elif kind == "attach":
                result = probe.attach(cmd["argv"])
            elif kind == "detach":
                result = probe.detach()
            elif kind == "storm":
                result = probe.storm(cmd["timeout"])
            elif kind == "close":
                probe.detach()
                probe.close()
                print(json.dumps({"ok": True}), flush=True)
                return 0
            else:
                raise ValueError(f"unknown command {kind}")
        except (OSError, RuntimeError, ValueError, KeyError, subprocess.SubprocessError) as exc:
            # The runner shows it; the probe stays usable.
            print(json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"}), flush=True)
            continue
        print(json.dumps({"ok": True, **result}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
