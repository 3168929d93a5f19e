"""What each remote session was told, collected by the tests and printed as a Markdown table
at the end of the run (``conftest.pytest_terminal_summary``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Row:
    case: str
    session: str  # its name and the pane its ssh runs in
    started: str  # how its ssh was started
    told: str  # the pane the remote process was told, or the reason it was told none
    note: str = ""  # a figure measured on the way (ms)


ROWS: list[Row] = []


def record(row: Row) -> None:
    ROWS.append(row)


def render(rows: list[Row]) -> str:
    out = [
        "| case | session | started | told | note |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        cells = (r.case, r.session, r.started, r.told, r.note or "")
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)
