"""What the operating system says: /proc, peer credentials, pidfds, the tmux socket directory.

The one place another operating system would be implemented. Imports ``core`` and ``host``.
"""
