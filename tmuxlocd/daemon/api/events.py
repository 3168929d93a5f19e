"""``GET /v1/events`` (SPEC §5): the aiohttp write loop over tmuxlocd.core.streams.StreamCore.

Each change stream is its own request task with a bounded hub queue: a slow reader blocks
only its own writes, and when it falls too far behind it is told ``lagged`` and given a fresh
snapshot instead of growing the daemon's memory.

A plain SSE or NDJSON stream whose reader keeps up is written by the publisher itself: once
the task has written all it had, it sets the subscriber's sink, and each publication goes
straight to the connection as one chunk shared by every stream of its format (no task wake,
no per-stream encoding).  When the connection's buffer is over its high-water mark (or it is
closing) the sink declines, and the stream is back on its queue: the task writes, waiting on
the reader under the write timeout, and the queue's bound still ends in ``lagged``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import msgspec
from aiohttp import web
from aiohttp.base_protocol import BaseProtocol

from tmuxlocd.core.events import ACTIVITY_TYPES, AGENT_TYPES, CHANGE_TYPES, HEARTBEAT_JSON
from tmuxlocd.core.queries import Selection
from tmuxlocd.core.streams import SSE_HEARTBEAT, EventFrames, StreamCore, StreamFormat, http_chunk
from tmuxlocd.daemon.api.context import Context
from tmuxlocd.daemon.api.errors import ApiError
from tmuxlocd.daemon.api.lookup import Lookup
from tmuxlocd.daemon.api.params import EventsQuery
from tmuxlocd.daemon.api.waits import activity_interest
from tmuxlocd.daemon.hub import Hub, Published, Subscriber

log = logging.getLogger(__name__)

# A snapshot (most of a megabyte at 1,000 panes) goes out in pieces of this size, each once
# the connection has taken the last: a thousand streams starting at once then hold a thousand
# pieces, not a thousand copies of the snapshot.
WRITE_SLICE = 16 * 1024
# What a stream's connection may hold in the daemon before its writer waits (and direct
# writes stop): the kernel's socket buffer holds far more; past both, the reader is behind.
# asyncio's default of 64 KiB, times 1,000 streams starting at once, left some 60 MB of
# freed but unreturned heap behind (B4).
STREAM_HIGH_WATER = 16 * 1024


class Stream(StreamCore):
    """One ``GET /v1/events`` connection: the core's frames, written to the response."""

    def __init__(
        self,
        ctx: Context,
        selection: Selection,
        types: frozenset[str],
        fmt: StreamFormat,
        *,
        interval: float | None,
        turn: int | None,
        with_neighbors: bool,
    ) -> None:
        super().__init__(
            ctx.hub,
            ctx.frames,
            selection,
            types,
            fmt,
            interval=interval,
            turn=turn,
            with_neighbors=with_neighbors,
        )
        self.hub: Hub = ctx.hub  # the whole hub: the core's Source and what the shell does
        self.settings = ctx.settings
        self.trimmer = ctx.trimmer
        self.event_frames: EventFrames = ctx.event_frames
        self.sub: Subscriber | None = None
        self.closing = False
        # Set when direct writes may be made: the connection and its aiohttp protocol.
        self.transport: asyncio.Transport | None = None
        self.protocol: BaseProtocol | None = None

    def close(self) -> None:
        self.closing = True
        if self.sub is not None:
            self.sub.close()

    def _first_frames(self, resume: int | None, reset: bool) -> tuple[list[bytes], list[Published]]:
        """What the stream starts with: a replay after ``resume``, or (a reset and) a snapshot.

        Called subscribed, with no await since: nothing published from here on can be missed,
        and the seq check drops doubles."""
        # A text stream cannot resume its text: it always starts from the current text.
        if resume is not None and self.fmt != "text":
            self.members_known = False
            self.last_seq = resume
            return [], [item for item in self.hub.since(resume) if self.admits(item.event)]
        first: list[bytes] = []
        if reset and self.fmt != "text":
            first.append(self.frame_event(self.hub.marker("reset")))
        first.append(self._fresh_snapshot())
        return first, []

    def _fresh_snapshot(self) -> bytes:
        self.last_seq, frame = self.snapshot_frame()
        return frame

    def _sink(self, items: list[Published]) -> bool:
        """The publisher's write (Subscriber.sink): False leaves the items to the queue.
        (Run for every stream of every publication: kept to a few checks.)"""
        transport, protocol = self.transport, self.protocol
        if transport is None or protocol is None or transport.is_closing():
            return False
        if protocol.writing_paused:
            return False
        if not self.scoped and items[0].seq > self.last_seq:
            # (``take``'s answer for a selection that is not scoped, without the call.)
            self.last_seq = items[-1].seq
            transport.write(self.event_frames.chunk(items, self.fmt))
            return True
        told = self.take(items)
        if told:
            transport.write(self.event_frames.chunk(told, self.fmt))
        return True

    def _go_direct(self, sub: Subscriber) -> None:
        """After the task wrote all it had: let the publisher write what comes next."""
        transport, protocol = self.transport, self.protocol
        if (
            transport is not None
            and protocol is not None
            and not (sub.queue or sub.lagged or sub.closed or self.closing)
            and not transport.is_closing()
            and not protocol.writing_paused
        ):
            sub.sink = self._sink

    async def _send(
        self, request: web.Request, response: web.StreamResponse, out: list[bytes]
    ) -> None:
        """Write ``out`` and wait until the connection is below its high-water mark (direct
        writes bypass aiohttp's own count of what it wrote, so its wait alone is not enough).
        Large frames go in slices, each written once the last is taken (WRITE_SLICE)."""
        size = sum(len(frame) for frame in out)
        async with asyncio.timeout(self.settings.write_timeout):
            transport = self.transport
            if transport is None:  # aiohttp frames the body (not chunked, or not direct)
                for piece in _slices(out, size):
                    await response.write(piece)
                    if request.protocol.writing_paused:
                        await request.writer.drain()
            else:
                await self._write_chunk(request, transport, out, size)
        if size > WRITE_SLICE:
            self.trimmer.soon()  # a snapshot's buffers are freed now (tmuxlocd.host.heap)

    async def _write_chunk(
        self, request: web.Request, transport: asyncio.Transport, out: list[bytes], size: int
    ) -> None:
        """Chunked, and the stream's own to write (as the publisher does): one HTTP chunk
        whose body goes straight from the shared frames to the socket, in slices.  aiohttp's
        chunked write would join each slice with its framing (a copy of every snapshot byte,
        700 MB for 1,000 streams at 1,000 panes)."""
        if size <= WRITE_SLICE:
            pieces: list[bytes | memoryview] = [http_chunk(b"".join(out))]
        else:
            pieces = [b"%x\r\n" % size, *_slices(out, size), b"\r\n"]
        for piece in pieces:
            if transport.is_closing():
                raise ConnectionResetError("the stream's reader went away")
            transport.write(piece)
            if request.protocol.writing_paused:
                await request.writer.drain()

    def _heartbeat(self) -> bytes:
        return HEARTBEAT_JSON + b"\n" if self.fmt == "ndjson" else SSE_HEARTBEAT

    async def run(
        self, request: web.Request, resume: int | None, reset: bool
    ) -> web.StreamResponse:
        content_type = "application/x-ndjson" if self.fmt == "ndjson" else "text/event-stream"
        response = web.StreamResponse(
            headers={"Content-Type": content_type, "Cache-Control": "no-cache"}
        )
        with self.hub.subscribe(self.admits, self.settings.queue_size, self.admission) as sub:
            self.sub = sub
            first, backlog = self._first_frames(resume, reset)
            try:
                await response.prepare(request)
            except ConnectionError:
                return response  # the client hung up before the stream began
            if request.transport is not None:
                request.transport.set_write_buffer_limits(high=STREAM_HIGH_WATER)
            if self.direct and response.headers.get("Transfer-Encoding") == "chunked":
                # (An HTTP/1.0 reader gets no chunks: its stream stays on the task's writes.)
                self.transport, self.protocol = request.transport, request.protocol
            pump = self._pump(request, response, sub, first, backlog)
            del first, backlog  # the pump owns them now, and lets them go once written
            try:
                await pump
                with contextlib.suppress(ConnectionError):
                    await response.write_eof()
            except ConnectionError:
                pass  # the reader went away
            except TimeoutError:
                # The reader stopped reading: drop the connection, or the last write would
                # wait on it again.
                log.debug("stream reader stalled; closed", extra={"sse_format": self.fmt})
                if request.transport is not None:
                    request.transport.abort()
            finally:
                self.trimmer.soon()  # and so are the connection's
        return response

    async def _pump(
        self,
        request: web.Request,
        response: web.StreamResponse,
        sub: Subscriber,
        out: list[bytes],
        pending: list[Published],
    ) -> None:
        """Writes until the stream is closed.  ``out`` and ``pending`` are taken over, not
        kept: a 1,000-pane snapshot is most of a megabyte, and a stream lives for hours."""
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + self.settings.heartbeat
        while True:
            now = loop.time()
            out += self.process(pending, now)
            if now >= next_beat:
                out.append(self._heartbeat())
                next_beat = now + self.settings.heartbeat
            if out:
                sub.sink = None  # the task writes now: nothing may come between its bytes
                await self._send(request, response, out)
                out = []
            self._go_direct(sub)
            timeout = next_beat - loop.time()
            if self.coalescer is not None and self.coalescer.holding:
                timeout = min(timeout, self.coalescer.next_allowed - loop.time())
            await sub.wait(max(timeout, 0.0))
            if sub.closed or self.closing:
                return
            if sub.lagged:
                # Dropped events: say so, and start over from a fresh snapshot.
                sub.drain()
                sub.lagged = False
                if self.coalescer is not None:
                    self.coalescer.clear()
                out.append(self.frame_event(self.hub.marker("lagged")))
                out.append(self._fresh_snapshot())
            pending = sub.drain()


async def get_events(ctx: Context, request: web.Request, q: EventsQuery) -> web.StreamResponse:
    fmt = q.format
    if fmt is None:
        fmt = "ndjson" if "application/x-ndjson" in request.headers.get("Accept", "") else "sse"
    if fmt == "text" and q.pane is None:
        q = msgspec.structs.replace(q, pane="self")  # the text form is of one pane: the caller's
    look = Lookup(ctx, request, accept=q.accept, server=q.server)
    await look.settle(q.pane, q.window, q.session)
    selection = look.selection(pane=q.pane, window=q.window, session=q.session)
    since = request.headers.get("Last-Event-ID") or q.since
    # Only ASCII can be an id of ours (and int() would take other scripts' digits).
    resume = ctx.hub.parse_event_id(since) if since and since.isascii() else None
    settings = ctx.settings
    if len(ctx.streams) >= settings.max_streams:
        raise ApiError(
            503,
            "too_many_streams",
            f"at most {settings.max_streams} streams at once",
            {"Retry-After": "1"},
        )
    types = CHANGE_TYPES if q.types is None else q.types
    if fmt == "text":  # the text form is of locations: activity never changes it
        types = types - ACTIVITY_TYPES - AGENT_TYPES
    stream = Stream(
        ctx,
        selection,
        types,
        fmt,
        interval=q.min_interval_ms / 1000 if q.min_interval_ms else None,
        turn=q.turn,
        with_neighbors=q.neighbors,
    )
    ctx.streams.add(stream)
    try:
        with activity_interest(ctx, selection, types):
            return await stream.run(request, resume, reset=since is not None and resume is None)
    finally:
        ctx.streams.discard(stream)


def _slices(out: list[bytes], size: int) -> list[bytes | memoryview]:
    """``out`` as pieces of at most WRITE_SLICE bytes (views of the frames, not copies)."""
    if size <= WRITE_SLICE:
        return [b"".join(out)]
    pieces: list[bytes | memoryview] = []
    for frame in out:
        view = memoryview(frame)
        pieces += [view[at : at + WRITE_SLICE] for at in range(0, len(frame), WRITE_SLICE)]
    return pieces
