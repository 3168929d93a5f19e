"""tmuxlocd: tells a process inside tmux where it is, and the moment that changes."""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
