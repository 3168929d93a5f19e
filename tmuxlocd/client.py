"""The public import path of the typed clients: ``from tmuxlocd.client import Client``.

The clients live in ``tmuxlocd.clients.client``; this module only hands its public names on
(its ``__all__``).
"""

from __future__ import annotations

from tmuxlocd.clients.client import *  # noqa: F403
from tmuxlocd.clients.client import __all__ as __all__  # noqa: PLC0414 (handed on too)
