"""One tmux control-mode client process: commands in, replies and notifications out.

The I/O shell around ``protocol.ControlParser``.  Replies are matched to commands FIFO on
the blocks whose flags are 1 (blocks with flags 0 belong to nobody: the initial attach, or
after-* hook commands run on this client's queue).  Every command has a deadline; a missed
deadline means the connection can no longer be trusted (the FIFO may be out of step), so the
client is closed and its owner re-attaches and re-syncs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from tmuxlocd.core.errors import CommandTimeout, ProtocolError, TmuxUnavailable
from tmuxlocd.core.invoke import client_argv
from tmuxlocd.core.protocol import (
    NEED_DATA,
    ConfigError,
    ControlParser,
    Event,
    Exit,
    Reply,
    command,
)
from tmuxlocd.host.lifeline import tied

log = logging.getLogger(__name__)

_CONFIG_ERROR = "%config-error "

# Half a barrier's deadline (observer.SYNC_TIMEOUT): a barrier that waits on a tmux that
# stopped answering hears why (this timeout, reported) before its own deadline.  A full
# listing at 1,000 panes takes tmux about 0.2 s.
COMMAND_TIMEOUT = 5.0

NotificationHandler = Callable[[Event], None]


def tmux_env() -> dict[str, str]:
    """The environment for tmux clients we start: never nested, always UTF-8."""
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    return env


async def spawned(
    make: Coroutine[Any, Any, asyncio.subprocess.Process],
) -> asyncio.subprocess.Process:
    """The process ``make`` (a ``create_subprocess_exec``) starts, even if the caller is
    cancelled meanwhile: then it is reaped before the cancellation goes on, so that no
    client of a stopping daemon outlives its event loop (a transport left to the garbage
    collector warns, and the process runs on)."""
    spawn = asyncio.ensure_future(make)
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await reap(await spawn)
        raise


async def reap(proc: asyncio.subprocess.Process, grace: float = 1.0) -> None:
    """Kill a tmux client and make sure it is gone, whatever its server does.

    tmux hands a client's stdin and stdout to the server, which writes to them itself; a
    server stuck in a loop holds our pipes open for ever, and asyncio's ``wait()`` (which also
    waits for the pipes to close) would then never return.  After ``grace`` the pipes are
    closed from our side."""
    with contextlib.suppress(ProcessLookupError):
        proc.kill()
    try:
        async with asyncio.timeout(grace):
            await proc.wait()
    except TimeoutError:
        # The Process object exposes no other way to close its pipe transports.
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                await proc.wait()


class ControlClient:
    def __init__(self, on_event: NotificationHandler) -> None:
        self._on_event = on_event
        self._parser = ControlParser()
        self._pending: deque[asyncio.Future[Reply]] = deque()
        self._proc: asyncio.subprocess.Process | None = None
        self._reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self.exit_reason: str | None = None
        # Why this client was closed by us, when a command failed: the owner, woken by
        # ``closed``, raises it (the caller of run() may be cancelled before it can).
        self.failure: CommandTimeout | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    async def start(
        self, tmux: str, socket_path: str, session_id: str, *, attach: str = "attach-session"
    ) -> None:
        """``attach`` is the spelling of attach-session that no command alias takes over."""
        # -N (client_argv): should the server die between our probe and this attach, the
        # attach fails ("no server running") instead of starting a server on a socket file
        # that would outlive it; -u: names come through as UTF-8 whatever the locale;
        # -E: the session's update-environment is left alone; the client flags keep
        # tmux from sending pane output or resizing anything for us.  Not read-only: that flag
        # guards nothing here (a control client runs any command anyway), and from tmux 3.7
        # on a command from outside tmux takes this client as its target client when no
        # other is more recently active, so ``send-keys`` would refuse ("client is read-only").
        # tied: its stdin closing ends it with a killed daemon anyway; a wedged server that
        # no longer reads it does not.
        self._proc = await spawned(
            asyncio.create_subprocess_exec(
                *tied(
                    [
                        *client_argv(tmux, socket_path, "-u"),
                        *("-C", attach, "-E", "-t", session_id, "-f", "no-output,ignore-size"),
                    ]
                ),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                env=tmux_env(),
                start_new_session=True,
            )
        )
        self._reader = asyncio.create_task(self._read_loop(), name=f"tmux-control-{socket_path}")

    async def _read_loop(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        stdout = self._proc.stdout
        try:
            while True:
                data = await stdout.read(1 << 16)
                self._parser.receive_data(data)
                while (event := self._parser.next_event()) is not NEED_DATA:
                    assert not isinstance(event, type)
                    self._dispatch(event)
                if not data:
                    break
        except ProtocolError as exc:
            log.warning("control connection broke: %s", exc)
        except Exception:  # never let a tmux quirk kill the daemon; the owner re-attaches
            log.exception("control reader failed")
        finally:
            self._finish()

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, Reply):
            if event.flags & 1:
                if self._pending:
                    fut = self._pending.popleft()
                    if not fut.done():
                        fut.set_result(event)
                else:
                    log.debug("reply with no command waiting: %s", event.number)
                return
            # Not ours: the attach command's block or a hook command's.  tmux 3.4+ writes the
            # configuration errors it kept for the first client into the attach's block.
            for line in event.lines:
                if line.startswith(_CONFIG_ERROR):
                    self._dispatch(ConfigError(text=line[len(_CONFIG_ERROR) :]))
            return
        if isinstance(event, Exit):
            self.exit_reason = event.reason or "exit"
        try:
            self._on_event(event)
        except Exception:
            log.exception("notification handler failed")

    def _finish(self) -> None:
        while self._pending:
            fut = self._pending.popleft()
            if not fut.done():
                fut.set_exception(TmuxUnavailable("control client ended"))
                # Marked as seen: a caller of run() takes the first failure of its batch from
                # gather and never looks at the rest, which asyncio would otherwise log as
                # "Future exception was never retrieved".
                fut.exception()
        self.closed.set()

    async def run(self, *commands: Sequence[str], timeout: float = COMMAND_TIMEOUT) -> list[Reply]:
        """Send commands in one write (pipelined) and return their replies in order."""
        if self.closed.is_set() or self._proc is None or self._proc.stdin is None:
            raise TmuxUnavailable("control client is not running")
        loop = asyncio.get_running_loop()
        data = b"".join(command(*argv) for argv in commands)
        futures = [loop.create_future() for _ in commands]
        self._pending.extend(futures)
        try:
            # The write is inside the deadline too: a tmux that stops reading its client
            # fills the pipe, and drain() would otherwise wait for ever.
            async with asyncio.timeout(timeout):
                self._proc.stdin.write(data)
                await self._proc.stdin.drain()
                return list(await asyncio.gather(*futures))
        except (ConnectionError, BrokenPipeError) as exc:
            await self.close()
            raise TmuxUnavailable(f"control client pipe closed: {exc}") from None
        except TimeoutError:
            # Logged by the owner, once per episode; the connection is out of step now.
            names = ", ".join(dict.fromkeys(argv[0] for argv in commands if argv))
            self.failure = CommandTimeout(names, f"no answer within {timeout:g} s")
            await self.close()
            raise self.failure from None

    async def close(self) -> None:
        """End the client: EOF on stdin detaches it (tmux sends %exit); then make sure."""
        proc = self._proc
        if proc is None:
            return
        if proc.returncode is None:
            if proc.stdin is not None:
                with contextlib.suppress(Exception):
                    proc.stdin.close()
            try:
                async with asyncio.timeout(1.0):
                    await proc.wait()
            except TimeoutError:
                await reap(proc)
        if self._reader is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                async with asyncio.timeout(1.0):
                    await self._reader
        self._finish()
