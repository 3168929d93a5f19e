"""Benchmarks of tmuxlocd against the alternatives, measured in one run (SPEC §9).

``python -m bench [--quick] [--out bench/RESULTS.md]`` builds private tmux servers of 10, 100
and 1,000 panes, starts the daemon on each, and compares it with the floor of its own stack
(a minimal aiohttp app on the same kind of socket) and with what clients do without it
(``display-message`` subprocesses, libtmux, per-turn tty checks, control-mode clients, hooks).
"""

from __future__ import annotations
