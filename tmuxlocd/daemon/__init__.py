"""What runs in ``tmuxlocd serve``: listeners, tmux connections, the hub, the HTTP API.

Imports ``core``, ``host`` and ``daemon``; never ``clients``.
"""
