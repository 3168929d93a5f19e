"""The contract suite: outside tools (Schemathesis, the official MCP SDK) against a live daemon
on a populated private tmux server.

Every test here is marked ``contract`` and runs only when asked for: ``pytest -m contract
tests/contract`` or ``TMUXLOCD_CONTRACT=1`` (CI runs it once, on the system's tmux).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ENV = "TMUXLOCD_CONTRACT"


def selected(config: pytest.Config) -> bool:
    markexpr = str(config.getoption("markexpr", "") or "")
    return os.environ.get(ENV) == "1" or ("contract" in markexpr and "not contract" not in markexpr)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run = selected(config)
    skip = pytest.mark.skip(reason=f"contract: select with -m contract or {ENV}=1")
    for item in items:
        if HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.contract)
            item.add_marker(pytest.mark.timeout(600))
            if not run:
                item.add_marker(skip)
