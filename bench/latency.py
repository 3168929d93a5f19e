"""``python -m bench.latency [...]``: ``python -m bench --section latency [...]``, the name
the results files made before the runner took the latency section in still cite."""

from __future__ import annotations

import sys

from bench.__main__ import main

if __name__ == "__main__":
    raise SystemExit(main(["--section", "latency", *sys.argv[1:]]))
