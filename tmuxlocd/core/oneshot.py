"""The no-daemon read (tmuxlocd.clients.direct): one tmux invocation for a whole server, and
its output as the ServerState the daemon would hold.

``list-sessions``, ``list-windows -a``, ``list-panes -a`` and a ``display-message`` for the
server's pid, with the row formats the daemon parses (``tmuxlocd.core.model``), so that the
Location is built by the same code.  No command used here can start a server, and the
client is told not to (``invoke.client_argv``).
"""

from __future__ import annotations

from tmuxlocd.core.errors import RowError
from tmuxlocd.core.invoke import client_argv
from tmuxlocd.core.model import (
    PANE_FORMAT,
    SESSION_FORMAT,
    WINDOW_FORMAT,
    ServerState,
    join_rows,
    state_from_rows,
)
from tmuxlocd.core.names import output_escapes_dollars, undo_output_dollars

PID_FORMAT = "V\t#{pid}\t#{version}"


def query_argv(tmux: str, socket: str) -> list[str]:
    """One tmux invocation for a whole server.  ``display-message`` goes last: tmux stops a
    command sequence at its first error, and the lists never fail on a live server."""
    return [
        *client_argv(tmux, socket, "-u"),
        "list-sessions", "-F", SESSION_FORMAT, ";",
        "list-windows", "-a", "-F", WINDOW_FORMAT, ";",
        "list-panes", "-a", "-F", PANE_FORMAT, ";",
        "display-message", "-p", PID_FORMAT,
    ]  # fmt: skip


def parse_query(socket: str, output: str) -> ServerState:
    """The output of ``query_argv`` -> a ServerState (rows sorted out by their tag)."""
    rows: dict[str, list[str]] = {"S": [], "W": [], "P": [], "V": []}
    tag = ""
    for line in output.split("\n"):
        if tag == "W" and line[:2] not in ("P\t", "V\t"):
            # A window name given with new-window -n is stored raw and may hold a line
            # feed: until the pane rows begin, join_rows sorts continuations from rows.
            rows["W"].append(line)
            continue
        if not line:
            continue
        tag = line[:1]
        bucket = rows.get(tag)
        if bucket is None or line[1:2] != "\t":
            raise RowError(f"unexpected row {line!r}")
        bucket.append(line)
    rows["W"] = join_rows(rows["W"], "W")
    if rows["W"] and rows["W"][-1] == "":
        rows["W"].pop()
    pid: int | None = None
    version = ""
    if rows["V"]:
        _, text, version = [*rows["V"][-1].split("\t", 2), "", ""][:3]
        pid = int(text) if text.isdigit() else None
    if output_escapes_dollars(version):
        # tmux 3.4 puts a backslash before `$` in all command output (names module).
        rows["S"] = [undo_output_dollars(row) for row in rows["S"]]
        rows["W"] = [undo_output_dollars(row) for row in rows["W"]]
    return state_from_rows(socket, pid, rows["S"], rows["W"], rows["P"])
