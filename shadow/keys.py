"""Typed keys for the state the sidecar keeps on its `web.Application` (never in module globals)."""

from __future__ import annotations

from aiohttp import web

from contracts.catalog import Catalog
from shadow.api.budget import BodyBudget
from shadow.live_catalog import Runtimes
from shadow.metrics import Metrics
from shadow.mirror import Mirror
from shadow.recorder import Recorder
from shadow.settings import ShadowSettings

SETTINGS = web.AppKey("settings", ShadowSettings)
CATALOG = web.AppKey("catalog", Catalog)
METRICS = web.AppKey("metrics", Metrics)
RUNTIMES = web.AppKey("runtimes", Runtimes)
RECORDER = web.AppKey("recorder", Recorder)
MIRROR = web.AppKey("mirror", Mirror)
CORE = web.AppKey("core", web.Application)
BODY_BUDGET = web.AppKey("body_budget", BodyBudget)
