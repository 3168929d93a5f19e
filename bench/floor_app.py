"""The floor of the daemon's stack: a minimal aiohttp app on a Unix socket.

It answers every GET with a fixed JSON body of a given size (the size of the daemon's
``/v1/self`` answer) and an ETag, as the daemon does, with no access log.  Whatever the daemon
spends above this is its own work.

    python -m bench.floor_app --path SOCKET --size BYTES
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal

from aiohttp import web


def make_body(size: int) -> bytes:
    """A valid JSON object of exactly ``size`` bytes (at least 12)."""
    head, tail = b'{"pad":"', b'"}'
    return head + b"x" * max(0, size - len(head) - len(tail)) + tail


def make_app(body: bytes) -> web.Application:
    headers = {"ETag": '"0123456789abcdef"'}

    async def answer(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="application/json", headers=headers)

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    return app


async def serve(path: str, size: int) -> None:
    runner = web.AppRunner(make_app(make_body(size)), access_log=None)
    await runner.setup()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    site = web.UnixSite(runner, path)
    await site.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    await stop.wait()
    await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", required=True)
    parser.add_argument("--size", type=int, required=True)
    args = parser.parse_args()
    asyncio.run(serve(args.path, args.size))


if __name__ == "__main__":
    main()
