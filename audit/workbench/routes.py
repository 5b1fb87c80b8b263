"""URL map of the workbench."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from audit.workbench import views

if TYPE_CHECKING:
    from aiohttp import web

STATIC = Path(__file__).with_name("static")


def setup_routes(app: web.Application) -> None:
    """Attach every page, write and static file."""
    app.router.add_get("/", views.index)
    app.router.add_get("/sign-in", views.sign_in_form)
    app.router.add_post("/sign-in", views.sign_in)
    app.router.add_get("/next", views.next_decision)
    app.router.add_get("/decisions/{decision_id}", views.decision)
    app.router.add_post("/answers", views.answer)
    app.router.add_post("/skip", views.skip)
    app.router.add_post("/undo", views.undo)
    app.router.add_post("/sign-out", views.sign_out)
    app.router.add_get("/favicon.ico", views.no_icon)
    app.router.add_get("/static/{name}", views.static_files(STATIC))
