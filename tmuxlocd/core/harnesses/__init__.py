"""The harnesses tmuxlocd knows: one module each (``core/harnesses/<name>.py``, whose
``HARNESS`` is its ``base.Harness``), registered in ``NAMES``.

A module is imported when its harness is first asked for: the hook (``python -S``) runs for
one harness and loads that one's description only.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tmuxlocd.core.harnesses.base import Harness

# The one list: adding a harness is its module and its name here (CONTRIBUTING.md).
NAMES = (
    "claude",
    "codex",
    "gemini",
    "copilot",
    "qwen",
    "opencode",
    "antigravity",
    "cursor",
    "goose",
    "crush",
    "kiro",
    "pi",
    "cline",
)

_loaded: dict[str, Harness] = {}


def get(name: str) -> Harness:
    """The description of ``name``; KeyError for a name not in ``NAMES``."""
    found = _loaded.get(name)
    if found is None:
        if name not in NAMES:
            raise KeyError(name)
        module = __import__(f"{__name__}.{name}", fromlist=["HARNESS"])
        found = _loaded[name] = module.HARNESS
    return found


def find(name: str) -> Harness | None:
    return get(name) if name in NAMES else None


def every() -> list[Harness]:
    return [get(name) for name in NAMES]
