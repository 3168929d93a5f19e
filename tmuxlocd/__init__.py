"""tmuxlocd: tells a process inside tmux where it is, and the moment that changes.

"SPEC §N" in the code's docstrings and comments is section N of ``docs/spec.md`` in the
repository: the contract (paths, fields, codes), kept current with the code.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
