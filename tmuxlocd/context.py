"""The path of the hooks written before the package had layers: ``python -S
<site>/tmuxlocd/context.py <harness>``.  It runs ``tmuxlocd.clients.context``, the hook
itself; ``tmuxlocd install`` now writes that module's path.  Standard library only, and
nothing imported before ``sys.path`` is set: a hook started with ``python -S`` pays for
every import.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    # Run as a file: the directory on sys.path[0] is this package's, the site is above it.
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from tmuxlocd.clients.context import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
