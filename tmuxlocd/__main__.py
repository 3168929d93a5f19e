from __future__ import annotations

from tmuxlocd.cli import main

raise SystemExit(main())
