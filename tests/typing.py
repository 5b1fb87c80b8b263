"""Type aliases for test fixtures."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

ClientFactory = Callable[[web.Application], Awaitable[TestClient[Any, Any]]]
