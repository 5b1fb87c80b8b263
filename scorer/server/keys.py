"""Typed application keys: the app's state, never module globals."""

from __future__ import annotations

from aiohttp import web

from scorer.server.metrics import ServerMetrics
from scorer.server.service import ScoringService
from scorer.settings import ScorerSettings

SETTINGS = web.AppKey("settings", ScorerSettings)
SERVICE = web.AppKey("service", ScoringService)
METRICS = web.AppKey("metrics", ServerMetrics)
