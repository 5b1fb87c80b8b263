"""Workbench fixtures: a built audit week and the workbench app on loopback."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from audit.workbench.app import init_app
from tests.audit import week
from tests.audit.week import settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

    from tests.typing import ClientFactory


@pytest.fixture
async def built(tmp_path: Path) -> tuple[Path, Path, list[week.Decision]]:
    """Twelve decisions written by the record store, all sampled."""
    return await week.build(tmp_path, 12)


@pytest.fixture
async def client(tmp_path: Path, built: tuple[Path, Path, list[week.Decision]],
                 aiohttp_client: ClientFactory) -> TestClient[Any, Any]:
    """The workbench over ``built``, on a test client (its cleanup context runs)."""
    root, catalog, _ = built
    app = init_app(settings_for(tmp_path, root, catalog), {week.TOKEN_ENV: week.TOKEN})
    return await aiohttp_client(app)
