"""URL map of the mirror API."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadow.api import views

if TYPE_CHECKING:
    from aiohttp import web


def setup_routes(app: web.Application) -> None:
    """Attach every endpoint."""
    app.router.add_post("/v1/decisions", views.post_decisions)
    app.router.add_post("/v1/outcomes", views.post_outcomes)
    app.router.add_get("/healthz", views.healthz)
    app.router.add_get("/metrics", views.metrics)
