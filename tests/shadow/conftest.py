"""Sidecar fixtures: a fault scorer on loopback, AWS test credentials, all log lines (helpers: harness.py)."""

from __future__ import annotations

import io
import logging
from typing import TYPE_CHECKING

import pytest

from semif_shadow.logs import JsonFormatter
from tests.shadow.fault_scorer import Faults, fault_app
from tests.shadow.harness import serve

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterator


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


@pytest.fixture
def all_logs() -> Iterator[io.StringIO]:
    """Every log line (DEBUG and up) emitted while the test runs, JSON-formatted (extra fields too).

    The handler is on the root logger from the start, so a sidecar started inside the test installs its
    scrub filter on it as on any handler of the process.
    """
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)
