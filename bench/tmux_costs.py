"""What one tmux command costs the tmux server, alone or chained, with no daemon running.

A command sent over a control client is answered before the next is sent, so each one is a
turn of tmux's event loop, and every turn walks every pane (``server_client_loop``).  The
same commands chained in one client's message (``a ; b ; c``, as the 3.3 waiter client sends
its rounds) run in one turn.  The difference is the price of every extra turn a change
causes, paid by the tmux server on the same cores as the daemon and its subscribers.

    python -m bench.tmux_costs [--panes 1000] [--k 200] [--tmux PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys

from bench import procstat
from bench.tmuxfarm import Bus, Farm, attach_control

CHAIN_MAX = 200
COMMANDS: dict[str, tuple[str, ...]] = {
    "display-message -p": ("display-message", "-p", "x"),
    "set-option -s @x": ("set-option", "-s", "@tmuxlocd-bench", "x"),
}


async def command_costs(farm: Farm, bus: Bus, session: str, k: int) -> dict[str, float]:
    """Seconds of tmux-server CPU per command: ``k`` sent one by one over a control client
    attached to ``session`` (``control …``), and ``k`` (at most ``CHAIN_MAX``) chained in one
    client's message (``chained …``)."""
    pid = int(farm.run("display-message", "-p", "#{pid}").strip())
    out: dict[str, float] = {}
    peer = await attach_control(farm, session, "no-output,ignore-size", bus)
    try:
        for name, words in COMMANDS.items():
            line = " ".join(words)
            before = procstat.cpu_seconds(pid)
            for _ in range(k):
                await peer.command(line)
            out[f"control {name}"] = (procstat.cpu_seconds(pid) - before) / k
    finally:
        await peer.close()
    # tmux takes a client's commands in one message of at most 16 KiB.
    chain = min(k, CHAIN_MAX)
    for name, words in COMMANDS.items():
        argv: list[str] = []
        for _ in range(chain):
            argv += [";", *words] if argv else list(words)
        before = procstat.cpu_seconds(pid)
        await asyncio.to_thread(farm.run, *argv)
        out[f"chained {name}"] = (procstat.cpu_seconds(pid) - before) / chain
    farm.run("set-option", "-su", "@tmuxlocd-bench", check=False)
    return out


async def _alone(tmux: str, panes: int, k: int) -> dict[str, float]:
    farm = Farm(tmux, panes)
    try:
        await asyncio.to_thread(farm.build, ["sleep", "1000000"], ".")
        return await command_costs(farm, Bus(), "$0", k)
    finally:
        farm.kill()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--panes", type=int, default=1000)
    parser.add_argument("--k", type=int, default=200, help="commands of each kind")
    parser.add_argument("--tmux", default=shutil.which("tmux"))
    args = parser.parse_args()
    if args.tmux is None:
        print("no tmux on PATH", file=sys.stderr)
        return 2
    for name, seconds in asyncio.run(_alone(args.tmux, args.panes, args.k)).items():
        print(f"{args.panes} panes, {name}: {seconds * 1000:.3f} ms of tmux-server CPU each")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
