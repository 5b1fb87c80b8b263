"""`init_app()`: the scorer server's aiohttp application."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from scorer.engine import Engine
from scorer.server import sagemaker, views
from scorer.server.keys import METRICS, SERVICE, SETTINGS
from scorer.server.metrics import ServerMetrics
from scorer.server.middlewares import error_middleware
from scorer.server.service import ScoringService

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from scorer.settings import ScorerSettings


def init_app(
    settings: ScorerSettings, engine_factory: Callable[[ScorerSettings], Engine] = Engine.from_settings
) -> web.Application:
    """Build the app; the model starts loading when the app starts (`/ping` answers 503 until then)."""
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        handler_args={"auto_decompress": False},  # bodies are decoded, capped, in views.read_json
        middlewares=[_count_requests, error_middleware(settings.retry_after_s)],
    )
    app[SETTINGS] = settings
    app[METRICS] = ServerMetrics()
    app[SERVICE] = ScoringService(settings, app[METRICS], engine_factory)
    app.cleanup_ctx.append(_service_ctx)
    app.on_shutdown.append(_drain)
    app.router.add_get("/ping", views.ping)
    app.router.add_post("/invocations", views.invocations)
    app.router.add_get("/metrics", views.metrics)
    app.router.add_post("/endpoints/{name}/invocations", sagemaker.invoke_endpoint)
    return app


async def _service_ctx(app: web.Application) -> AsyncIterator[None]:
    service = app[SERVICE]
    await service.start()
    yield
    await service.stop()


async def _drain(app: web.Application) -> None:
    """SIGTERM (run_app's graceful exit): stop taking work, finish the queue within the grace period."""
    await app[SERVICE].drain(app[SETTINGS].shutdown_grace_s)


@web.middleware
async def _count_requests(
    request: web.Request, handler: Callable[[web.Request], object]
) -> web.StreamResponse:
    response: web.StreamResponse = await handler(request)  # type: ignore[misc]
    route = request.match_info.route.resource.canonical if request.match_info.route.resource else "other"
    request.app[METRICS].requests.labels(route, str(response.status)).inc()
    return response
