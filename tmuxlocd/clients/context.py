"""``tmuxlocd context <harness>``: the I/O around ``tmuxlocd.core.harness`` (SPEC §10).

Run by an agent harness as a command hook: the event JSON on stdin, the harness's JSON on
stdout when there is something to inject, nothing otherwise.  It always exits 0, prints
nothing on stderr (Gemini CLI reads stderr when stdout is empty) and never touches the
terminal.

Who is asking: the daemon's rule, the hook's controlling tty, then that of its nearest
ancestor that has one (``?accept=ancestor``; a harness may start hooks in a new session).
``$TMUX_PANE`` is never used.  With no daemon the same answer is computed from tmux.

State: one small file per harness session in a 0700 directory beside the daemon's socket,
opened without following links, written to a temporary file and renamed, under a per-session
lock (two hooks of one session may run at once).  When no state can be kept (a full disk, an
unsafe directory), a prompt injects every time and a tool call never.

Gemini CLI's transcript: its ``PreCompress`` hook records how long the session's transcript
is; the next hook of the session reads only what was appended since (regular files only,
opened without blocking), for the line Gemini CLI writes when it rebuilds the history.

Start-up cost is the point: this module imports only ``json``, ``zlib`` and ``fcntl`` (plus
the stdlib-only request of ``tmuxlocd.clients.cli``); the no-daemon path pays for
the rest.
"""

from __future__ import annotations

import os
import sys
import time

if __name__ == "__main__":
    # Run as a file, ``python -S <package>/context.py <harness>``, as ``tmuxlocd install``
    # writes the hooks: no site start-up (site-packages, .pth files, an editable install's
    # finder), which is most of a hook's cost; the site is two directories above
    # (``<site>/tmuxlocd/clients/context.py``).
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tmuxlocd.core import harness
from tmuxlocd.host.paths import client_socket_path, context_state_dir

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Self

REQUEST_TIMEOUT = 2.0
MAX_STATE = 64 * 1024


def parse_args(args: Sequence[str]) -> tuple[str, int, str] | None:
    """``<harness> [--min-interval-ms N] [--event NAME]`` -> (harness, floor, event); a bad
    floor is 0 (ignored); an unknown harness is None (nothing to do).  ``--event``: the event
    a harness that writes none on stdin runs this hook for (Copilot CLI, Antigravity CLI)."""
    if not args or args[0] not in harness.HARNESSES:
        return None
    floor = 0
    event = ""
    rest = list(args[1:])
    i = 0
    while i < len(rest):
        name, eq, value = rest[i].partition("=")
        if name in ("--min-interval-ms", "--event"):
            if not eq and i + 1 < len(rest):
                i += 1
                value = rest[i]
            if name == "--event":
                event = value
            else:
                floor = harness.parse_min_interval(value) or 0
        i += 1
    return args[0], floor, event


def main(args: Sequence[str]) -> int:
    try:
        run(args)
    except Exception:  # noqa: BLE001 - a hook never fails its harness, nor writes on stderr
        return 0
    return 0


def run(args: Sequence[str], env: Mapping[str, str] | None = None) -> None:
    env = os.environ if env is None else env
    parsed = parse_args(args)
    if parsed is None:
        return
    name, floor, event_name = parsed
    try:
        data = sys.stdin.buffer.read(harness.MAX_STDIN + 1)
    except (OSError, ValueError, AttributeError):
        return
    value = harness.payload(data)
    if value is None:
        return
    report_agent(name, value, env, event_name)
    event = harness.event_of(name, value, event_name)
    if event is None:
        return
    store = Store(context_state_dir(env))
    try:
        text = handle(event, store, floor, env)
    finally:
        store.close()
    if text is not None:
        out = harness.render(event.harness, event.name, text)
        try:
            sys.stdout.buffer.write(out)
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


def report_agent(
    name: str, value: dict[str, object], env: Mapping[str, str], event_name: str = ""
) -> None:
    """What the event says of the session's agent, to the daemon (``tmuxlocd.core.agents``): one
    request, whose answer is not waited for beyond its first bytes.  No daemon: nothing."""
    from tmuxlocd.core import agents

    report = agents.report_of(name, value, event_name)
    if report is None:
        return
    from tmuxlocd.clients.rawhttp import NoDaemon, raw_request
    from tmuxlocd.core.urls import query_string

    target = "/v1/agents/self" + query_string(
        {
            "harness": report.harness,
            "session_id": report.session_id,
            "event": report.event,
            "state": report.state,
            "reason": report.reason or None,
        }
    )
    try:
        raw_request(client_socket_path(env), "POST", target, REQUEST_TIMEOUT, read_answer=False)
    except (NoDaemon, OSError, ValueError):
        pass


def handle(
    event: harness.HookEvent, store: Store, floor: int, env: Mapping[str, str]
) -> str | None:
    """One event: lock the session's state, read the transcript if a mark asks for it,
    decide, read the location if needed, save."""
    key = harness.state_name(event.harness, event.session)
    with store.locked(key):
        prior = store.load(key)
        now_ms = time.time_ns() // 1_000_000
        where = harness.check_from(event, prior)
        rebuilt = transcript_rebuilt(*where) if where is not None else False
        step = harness.plan(event, prior, now_ms, floor, rebuilt)
        reading = read_location(step.etag, env, event) if step.ask else None
        size = transcript_size(step.measure) if step.measure else None
        outcome = harness.conclude(event, step, reading, now_ms, size)
        if outcome.state is not None:
            store.save(key, outcome.state, new=prior is None)
    return outcome.text


# ----------------------------------------------------------------------------------------------
# The transcript (Gemini CLI's, for compression; see ``harness.REBUILT``).

_TRANSCRIPT_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 16


def _open_regular(path: str) -> tuple[int, int] | None:
    """(fd, size) of a regular file, opened without blocking (a FIFO never stalls a hook)."""
    import stat

    try:
        fd = os.open(path, _TRANSCRIPT_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st.st_size


def transcript_size(path: str) -> int | None:
    opened = _open_regular(path)
    if opened is None:
        return None
    os.close(opened[0])
    return opened[1]


def transcript_rebuilt(path: str, offset: int) -> bool:
    """Whether the transcript shows its history rebuilt after ``offset``: read from there,
    a chunk at a time, up to the first sign.  A transcript that shrank, or grew by more than
    ``harness.MAX_SCAN``, counts as rebuilt; one that cannot be read, as not."""
    opened = _open_regular(path)
    if opened is None:
        return False
    fd, size = opened
    try:
        if size < offset or size - offset > harness.MAX_SCAN:
            return True
        keep = len(harness.REBUILT) - 1
        tail = b""
        position = offset
        while position < size:
            chunk = os.pread(fd, min(_CHUNK, size - position), position)
            if not chunk:
                break
            if harness.rebuilt_in(tail + chunk):
                return True
            tail = (tail + chunk)[-keep:]
            position += len(chunk)
        return False
    except OSError:
        return False
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------------------------
# The location.


def read_location(
    etag: str, env: Mapping[str, str], event: harness.HookEvent | None = None
) -> harness.Reading:
    """The location of the hook's caller (its tty, then its ancestors); when they lead to no
    pane, that of the one process writing the session's transcript (``read_by_transcript``)."""
    reading = read_self(etag, env, event)
    if reading.status != "absent" or event is None:
        return reading
    if not event.transcript:
        debug(env, event, "no pane from the hook's tty or ancestors, and no transcript path")
        return reading
    return read_by_transcript(event, env)


def read_self(
    etag: str, env: Mapping[str, str], event: harness.HookEvent | None = None
) -> harness.Reading:
    from tmuxlocd.clients.rawhttp import NoDaemon, raw_request
    from tmuxlocd.core.urls import self_target, session_key

    headers = {"If-None-Match": etag} if etag else None
    # The session, so that below a shared server (Codex's app-server) the daemon places it
    # by the one client it is bound to, bound anew at the session's start.
    target = self_target(
        text=True,
        neighbors=True,
        accept_ancestor=True,
        session=session_key(event.harness, event.session) if event is not None else "",
        bind=event is not None and event.kind == harness.START,
    )
    try:
        resp = raw_request(client_socket_path(env), "GET", target, REQUEST_TIMEOUT, headers=headers)
    except (NoDaemon, OSError, ValueError):
        return read_direct()
    if resp is None:
        return harness.ABSENT
    if resp.status == 304:
        return harness.UNCHANGED
    if resp.status != 200:
        return harness.ABSENT  # 204: not in a pane; anything else: nothing to say
    try:
        text = resp.body.decode("utf-8")
    except UnicodeDecodeError:
        return harness.ABSENT
    if not text.startswith(harness.HEAD):
        return harness.ABSENT
    return harness.Reading("location", text, resp.headers.get("etag", ""))


def read_direct() -> harness.Reading:
    """No daemon: the same text, computed from tmux (no ETag, so never a 304)."""
    _with_site()
    from tmuxlocd.clients import direct
    from tmuxlocd.core.location import text_form

    info = direct.where_am_i(accept_ancestor=True)
    if info.location is None:
        return harness.ABSENT
    return harness.Reading("location", text_form(info.location, with_neighbors=True), "")


def _with_site() -> None:
    if "site" not in sys.modules:  # started with -S: the dependencies are in site-packages
        import site

        site.main()


def transcript_writers(path: str) -> list[harness.Holder]:
    """This user's processes that have ``path`` open for writing (the host's look: ``/proc``
    on Linux, ``lsof`` on the portable host), with their ttys; the hook itself is not one."""
    return _writers(path, None)


def ancestor_writers(path: str, pid: int) -> list[harness.Holder]:
    """``transcript_writers`` among the ancestors of ``pid`` (``caller.ancestors``): a few
    processes' descriptors instead of every process's."""
    from tmuxlocd.core.caller import ancestors
    from tmuxlocd.host import identity

    up = ancestors(pid, identity.read_stat, shared=identity.shared_server)
    return _writers(path, up)


def _writers(path: str, pids: Sequence[int] | None) -> list[harness.Holder]:
    from tmuxlocd.host import identity
    from tmuxlocd.host.system import HOST

    try:
        target = os.path.realpath(path)
    except OSError:
        return []
    me = os.getpid()
    out: list[harness.Holder] = []
    for pid in HOST.writers(target, pids):
        if pid == me:
            continue
        stat = identity.read_stat(pid)
        if stat is not None:
            shared = identity.shared_server(stat.pid)
            out.append(harness.Holder(stat.pid, stat.tty_nr, shared, stat.session))
    return out


def read_by_transcript(event: harness.HookEvent, env: Mapping[str, str]) -> harness.Reading:
    """The pane of the one process that has the session's transcript open for writing, read
    from tmux (no ETag); nothing, and why in the debug log, when it cannot be told."""
    _with_site()
    from tmuxlocd.clients import direct
    from tmuxlocd.core.caller import ancestors, nearest_tty_ancestor
    from tmuxlocd.core.location import Location, text_form
    from tmuxlocd.core.queries import owners
    from tmuxlocd.host import identity

    # Only a hook with no tty whose ancestors reach no tty, or a server of several sessions
    # first: one whose harness is on a tty that is no pane's is outside tmux, and so is the
    # session, whoever else writes its transcript.
    me = os.getpid()
    own = identity.read_stat(me)
    up = nearest_tty_ancestor(me, identity.read_stat, shared=identity.shared_server)
    if (own is not None and own.tty_nr) or up > 0:
        debug(env, event, "the hook's tty or nearest ancestor's is no pane's")
        return harness.ABSENT
    # An ancestor of the hook (with no tty, or a server of several sessions, or the walk
    # would not have led here) that writes the transcript settles it: a writer like that
    # places nobody, beside any other (``harness.writer_tty``).  Codex's shared app-server
    # writes every session's rollout itself, and this spares each of its hooks a scan of
    # every process's descriptors.
    holders = ancestor_writers(event.transcript, me) or transcript_writers(event.transcript)
    tty_nr, why = harness.writer_tty(holders)
    if not tty_nr:
        debug(env, event, "no pane from the hook's tty or ancestors; " + why)
        return harness.ABSENT
    writers = [h for h in holders if h.tty_nr == tty_nr]
    view = direct.read_view(env, until_tty=tty_nr, until_session=writers[0].session)
    on_tty = view.panes_by_rdev(tty_nr)

    # The writers' tty proves their pane only as it proves a caller's (spec §2): a live pane
    # whose process is each writer's session leader or ancestor.
    def proven(h: harness.Holder) -> list[Location]:
        return owners(on_tty, h.session, lambda: ancestors(h.pid, identity.read_stat))

    per_writer = [proven(h) for h in writers]
    here = list({loc.pane.id: loc for found in per_writer for loc in found}.values())
    if len(here) != 1 or not all(per_writer):
        debug(
            env,
            event,
            f"the transcript's writer is on a tty in {len(on_tty)} panes, proven in {len(here)}",
        )
        return harness.ABSENT
    block = text_form(here[0], with_neighbors=True) + harness.VERIFIED_TRANSCRIPT
    return harness.Reading("location", block, "")


DEBUG_LOG = "TMUXLOCD_CONTEXT_LOG"


def debug(env: Mapping[str, str], event: harness.HookEvent, why: str) -> None:
    """One line in the file ``$TMUXLOCD_CONTEXT_LOG`` names, if any: why nothing is told."""
    path = env.get(DEBUG_LOG)
    if not path:
        return
    line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {event.harness} {event.name} "
    line += f"session={event.session!r} pid={os.getpid()}: {why}\n"
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError:
        return
    try:
        os.write(fd, line.encode("utf-8", "replace"))
    except OSError:
        pass
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------------------------
# State files.


class _Lock:
    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the lock


class Store:
    """The state directory, opened once, without following links, and only if it is this
    user's and nobody else's (mode 0700); every file in it is 0600 and opened by its fd."""

    def __init__(self, path: str) -> None:
        self.fd = self._open(path)

    @staticmethod
    def _open(path: str) -> int | None:
        for directory in (os.path.dirname(path), path):
            try:
                os.mkdir(directory, 0o700)
            except FileExistsError:
                pass
            except OSError:
                return None
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            os.close(fd)
            return None
        return fd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def locked(self, key: str) -> _Lock:
        if self.fd is None:
            return _Lock(None)
        import fcntl

        try:
            fd = os.open(
                key + ".lock",
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
                dir_fd=self.fd,
            )
        except OSError:
            return _Lock(None)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            os.close(fd)
            return _Lock(None)
        return _Lock(fd)

    def load(self, key: str) -> harness.State | None:
        if self.fd is None:
            return None
        try:
            fd = os.open(key, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=self.fd)
        except OSError:
            return None
        try:
            data = os.read(fd, MAX_STATE)
        except OSError:
            return None
        finally:
            os.close(fd)
        return harness.decode_state(data)

    def save(self, key: str, state: harness.State, *, new: bool = False) -> bool:
        if self.fd is None:
            return False
        tmp = f"{key}.tmp{os.getpid()}"
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        data = harness.encode_state(state)
        try:
            fd = os.open(tmp, flags, 0o600, dir_fd=self.fd)
            try:
                if os.write(fd, data) != len(data):
                    raise OSError("short write")
            finally:
                os.close(fd)
            os.replace(tmp, key, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except OSError:
            try:
                os.unlink(tmp, dir_fd=self.fd)
            except OSError:
                pass
            return False
        if new:
            self.expire()
        return True

    def expire(self, now_s: float | None = None) -> None:
        """Remove the files of old sessions (run when a session is new, not on every turn)."""
        if self.fd is None:
            return
        entries: list[tuple[str, float]] = []
        try:
            with os.scandir(self.fd) as it:
                for entry in it:
                    try:
                        entries.append((entry.name, entry.stat(follow_symlinks=False).st_mtime))
                    except OSError:
                        continue
        except OSError:
            return
        for name in harness.expired(entries, time.time() if now_s is None else now_s):
            try:
                os.unlink(name, dir_fd=self.fd)
            except OSError:
                pass


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
