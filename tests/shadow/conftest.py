"""Sidecar fixtures: a fault-injecting scorer on loopback, AWS test credentials (helpers: `harness.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.shadow.fault_scorer import Faults, fault_app
from tests.shadow.harness import serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


@pytest.fixture
def faults() -> Faults:
    """The fault scorer's controls (healthy until a test says otherwise)."""
    return Faults()


@pytest.fixture
async def scorer_url(faults: Faults) -> AsyncIterator[str]:
    """A running fault-injecting scorer."""
    async with serve(fault_app(faults)) as url:
        yield url
        faults.release.set()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Dummy credentials: the client signs requests, the loopback server ignores the signature."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
