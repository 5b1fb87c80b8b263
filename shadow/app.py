"""The sidecar application: `init_app()` builds the mirror API; every resource lives in a cleanup context.

    log budget   a filter on the process's log handlers: what one request may log (`shadow.log_budget`)
    runtimes     the catalog made live; backends started (models loaded, client sessions opened); the
                 log scrub filter installed on the process's log handlers
    records      the durable record store (``shadow.records``) and the recorder's writer task
    mirror       a bounded queue and worker pool per candidate (stopped first: queued decisions become rows),
                 and the loop-lag sampler that tells the breakers a starved call from a failing scorer
    kill switch  a task watching ``SHADOW_KILL_SWITCH_FILE``
    gc           after start-up: freeze what start-up allocated and collect young objects less often, so a
                 collector pass never lands on a request as a multi-millisecond pause (docs/performance.md)

Proxy mode adds the relay (`shadow.proxy`) on its own port, feeding this application's mirror.
"""

from __future__ import annotations

import asyncio
import gc
from typing import TYPE_CHECKING

from aiohttp import web

from contracts.catalog import load_catalog
from contracts.tasks import stop_tasks
from shadow.api.budget import BodyBudget
from shadow.api.middlewares import body_budget_middleware, error_middleware, log_budget_middleware
from shadow.api.routes import setup_routes
from shadow.dispatch import Dispatcher
from shadow.keys import BODY_BUDGET, CATALOG, METRICS, MIRROR, RECORDER, RUNTIMES, SETTINGS
from shadow.lanes import Limits
from shadow.live_catalog import build_runtimes
from shadow.log_budget import install_budget_filter
from shadow.looplag import LoopLag
from shadow.metrics import Metrics
from shadow.mirror import Mirror
from shadow.proposals import RowStamp
from shadow.recorder import Recorder
from shadow.records.store import RecordStore
from shadow.redaction import install_scrub_filter

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from scorer.settings import ScorerSettings
    from shadow.settings import ShadowSettings


def init_app(settings: ShadowSettings, scorer_settings: ScorerSettings | None = None) -> web.Application:
    """The mirror API application (``/v1/decisions``, ``/v1/outcomes``, ``/metrics``, ``/healthz``)."""
    app = web.Application(middlewares=[log_budget_middleware, body_budget_middleware, error_middleware],
                          client_max_size=settings.max_body_bytes,
                          handler_args={"auto_decompress": False})  # api.views decodes, capped
    app[SETTINGS] = settings
    app[CATALOG] = load_catalog(settings.catalog)
    app[METRICS] = Metrics()
    app[BODY_BUDGET] = BodyBudget(settings.api_body_budget_bytes)
    app[METRICS].api_body_bytes.set_function(lambda: app[BODY_BUDGET].held)
    app.cleanup_ctx.append(_log_budget_ctx)
    app.cleanup_ctx.append(_runtimes_ctx(scorer_settings))
    app.cleanup_ctx.append(_records_ctx)
    app.cleanup_ctx.append(_mirror_ctx)
    app.cleanup_ctx.append(_kill_switch_ctx)
    app.cleanup_ctx.append(_gc_ctx)
    setup_routes(app)
    return app


async def _log_budget_ctx(app: web.Application) -> AsyncIterator[None]:
    remove = install_budget_filter(app[METRICS].log_dropped.inc)  # first: a dropped record is not scrubbed
    try:
        yield
    finally:
        remove()


def _runtimes_ctx(scorer_settings: ScorerSettings | None) -> Callable[[web.Application], AsyncIterator[None]]:
    async def ctx(app: web.Application) -> AsyncIterator[None]:
        key = app[SETTINGS].redaction_key
        runtimes = build_runtimes(app[CATALOG], key.get_secret_value().encode() if key else None,
                                  scorer_settings)
        remove_scrub = install_scrub_filter([t.rules.redactor for t in runtimes.types.values()])
        started = []
        try:
            for backend in runtimes.backends:
                await backend.start()
                started.append(backend)
            app[RUNTIMES] = runtimes
            yield
        finally:
            for backend in started:
                await backend.close()
            remove_scrub()
    return ctx


async def _records_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    stamp = RowStamp(settings.records.writer_id, app[CATALOG].sha256())
    records = settings.records.model_copy(update={"config_sha256": stamp.config_sha256})
    async with RecordStore(records) as store:
        recorder = Recorder(store, app[METRICS], stamp, settings.record_backlog,
                            settings.record_backlog_bytes)
        app[METRICS].watch_store(store.stats, records.max_local_bytes)
        app[RECORDER] = recorder
        writer = asyncio.create_task(recorder.run(), name="shadow-recorder")
        try:
            yield
        finally:
            await stop_tasks(writer)
            await recorder.drain(settings.shutdown_drain_s)


async def _mirror_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    recorder = app[RECORDER]
    lag = LoopLag()
    app[METRICS].loop_lag.set_function(lag.recent)
    sampler = asyncio.create_task(lag.run(), name="shadow-loop-lag")
    dispatcher = Dispatcher(recorder.sink, app[METRICS], recorder.stamp, lag)
    limits = Limits(settings.queue_max_items, settings.queue_max_bytes, settings.workers)
    mirror = Mirror(limits, dispatcher, recorder, app[METRICS], app[RUNTIMES].lanes)
    mirror.kill_switch = settings.kill_switch
    app[METRICS].kill_switch.set(int(mirror.kill_switch))
    app[MIRROR] = mirror
    mirror.start()
    try:
        yield
    finally:
        await mirror.stop(settings.shutdown_grace_s)
        await stop_tasks(sampler)


async def _kill_switch_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    if settings.kill_switch_file is None:
        yield
        return
    task = asyncio.create_task(_watch_kill_switch(app), name="shadow-kill-switch")
    try:
        yield
    finally:
        await stop_tasks(task)


async def _watch_kill_switch(app: web.Application) -> None:
    settings, mirror, metrics = app[SETTINGS], app[MIRROR], app[METRICS]
    assert settings.kill_switch_file is not None
    while True:
        on = settings.kill_switch or settings.kill_switch_file.exists()
        mirror.kill_switch = on
        metrics.kill_switch.set(int(on))
        await asyncio.sleep(settings.kill_switch_poll_s)


async def _gc_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    if not settings.gc_tuning:
        yield
        return
    before = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(settings.gc_threshold, 50, 100)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()
