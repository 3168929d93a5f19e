from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.api.apitest import Api, serve_api
from tmuxlocd.daemon.hub import Hub


@pytest.fixture
def hub() -> Hub:
    return Hub()


@pytest.fixture
async def api(hub: Hub) -> AsyncIterator[Api]:
    async with serve_api(hub, heartbeat=30.0) as served:
        yield served
