from __future__ import annotations

from tmuxlocd.clients.cli import main

raise SystemExit(main())
