"""Time from a tmux command's start to the daemon's event for it (next-3.8): a split
(``pane.added``) against a pane floated (``break-pane -W``) and tiled again (``join-pane``).
One subscriber, the daemon in process, a private server of three panes.

    TMUXLOCD_TEST_TMUX=<next-3.8 tmux> python -m tests.tools.floating_latency
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from tests.api.apitest import StreamReader
from tests.integration.test_api_live import Live

Event = dict[str, Any]


def pane_of(ev: Event) -> dict[str, Any]:
    loc = ev.get("location") or ev.get("last") or {}
    return dict(loc.get("pane", {}))


async def timed(
    live: Live, reader: StreamReader, argv: list[str], match: Callable[[Event], bool]
) -> tuple[float, str]:
    """Milliseconds from starting ``tmux argv`` to the first event that ``match``es, and
    what the command printed."""
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *live.srv.argv(*argv), stdout=asyncio.subprocess.PIPE
    )
    output = asyncio.create_task(proc.communicate())
    while not match(await reader.event(timeout=10)):
        pass
    elapsed = (time.perf_counter() - start) * 1000
    return elapsed, (await output)[0].decode().strip()


async def main() -> None:
    live = Live()
    live.srv.start("main", width=120, height=40)
    live.srv.run("split-window", "-h", "-t", "main:0", "cat")
    await live.start_daemon()
    await live.sync()
    res: dict[str, list[float]] = {"split": [], "break-pane -W": [], "join-pane": []}
    try:
        async with live.client.get("http://localhost/v1/events?format=ndjson") as resp:
            reader = StreamReader(resp)
            await reader.event()
            for _ in range(30):
                took, new = await timed(
                    live,
                    reader,
                    ["split-window", "-d", "-P", "-F", "#{pane_id}", "-t", "%0", "cat"],
                    lambda ev: ev["type"] == "pane.added",
                )
                res["split"].append(took)
                await live.tmux("kill-pane", "-t", new)
                await live.sync()
                took, _ = await timed(
                    live,
                    reader,
                    ["break-pane", "-W", "-s", "%1", "-x", "20", "-y", "6"],
                    lambda ev: pane_of(ev).get("id") == "%1" and bool(pane_of(ev).get("floating")),
                )
                res["break-pane -W"].append(took)
                await live.sync()
                took, _ = await timed(
                    live,
                    reader,
                    ["join-pane", "-h", "-s", "%1", "-t", "%0"],
                    lambda ev: (
                        ev["type"] == "pane.changed"
                        and pane_of(ev).get("id") == "%1"
                        and not pane_of(ev).get("floating")
                    ),
                )
                res["join-pane"].append(took)
                await live.sync()
    finally:
        await live.stop_daemon()
        live.srv.kill()
    for name, values in res.items():
        print(
            f"{name}: median {statistics.median(values):.2f} ms, max {max(values):.2f} ms "
            f"(n={len(values)})"
        )


if __name__ == "__main__":
    asyncio.run(main())
