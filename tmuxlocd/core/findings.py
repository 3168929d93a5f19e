"""What ``tmuxlocd doctor`` finds, as data: the pure part its harness descriptions share.

A ``Finding`` names its harness (None for the daemon and the caller), a check, a status
(``ok``, ``warning``, ``problem``), what was found and, unless it is ok, what to do.  A
harness's own checks (``Harness.doctor_checks``) get a ``DoctorContext``: the files the
doctor read, parsed, and the facts the shell gathered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

OK = "ok"
WARNING = "warning"
PROBLEM = "problem"


@dataclass(frozen=True)
class Finding:
    harness: str | None
    check: str
    status: str
    found: str
    fix: str | None = None


@dataclass(frozen=True)
class OurHook:
    """One hook entry of ours in a hooks file: its event, the position of its matcher group
    in the event's list, its position in the group's hooks, the group's matcher."""

    event: str
    group: int
    index: int
    matcher: str | None
    entry: dict[str, Any]

    @property
    def command(self) -> str:
        entry = self.entry
        return str(entry.get("command", entry.get("bash")) or "")


def table(value: Any, *keys: str) -> dict[str, Any]:
    """``value[k1][k2]...`` when each is an object; {} otherwise."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


class DoctorContext:
    """What a harness's own checks see: the harness, whether a project's files are checked,
    each file by role (``where``) and its text (None: missing), the hooks file parsed
    (``data``) and our hooks in it (``ours``), the current directory; and the shell's
    functions: ``parse_json``/``parse_toml`` (text, path -> (object, None) or (None, why)),
    ``spellings`` (a path as written and resolved), ``shared_servers`` (a kind of shared
    server -> each one's pid and its clients, (pid, tty), None when unreadable); ``env``: the
    environment a harness started from here gets."""

    def __init__(
        self,
        harness: str,
        *,
        project: bool,
        where: Mapping[str, Any],
        texts: Mapping[Any, str | None],
        data: Mapping[str, Any],
        ours: Sequence[OurHook],
        cwd: Any,
        parse_json: Callable[[str | None, Any], tuple[dict[str, Any] | None, str | None]],
        parse_toml: Callable[[str | None, Any], tuple[dict[str, Any] | None, str | None]],
        spellings: Callable[[Any], list[str]],
        shared_servers: Callable[[str], list[tuple[int, list[tuple[int, str]] | None]]],
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.harness = harness
        self.project = project
        self.where = where
        self.texts = texts
        self.data = data
        self.ours = ours
        self.cwd = cwd
        self.parse_json = parse_json
        self.parse_toml = parse_toml
        self.spellings = spellings
        self.shared_servers = shared_servers
        self.env = env if env is not None else {}
