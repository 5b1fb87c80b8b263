"""The model behind the server: loaded off the event loop, fed by a bounded queue, one thread.

    submit  -> refuse at once when not ready, draining, or the queue is full (503), else enqueue
    worker  -> take the next job (and, with cross-request batching, up to ``cross_batch_max`` waiting
               decisions of any type, after at most ``batch_wait_ms`` for more to arrive), run them on
               the single llama.cpp thread (the engine packs them into calls within its token budget),
               resolve each caller's future
    drain   -> SIGTERM: stop taking work, finish what is queued within the grace period, fail the rest

llama.cpp holds one context, so everything that touches the model runs on one executor thread; the
event loop only queues and answers, so `/ping` and `/metrics` are never blocked by scoring.
"""

from __future__ import annotations

import asyncio
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from contracts.tasks import stop_tasks
from scorer.engine import Engine
from scorer.errors import NotReady, Overloaded

if TYPE_CHECKING:
    from collections.abc import Callable

    from contracts.semif import ScoreRequest
    from scorer.server.metrics import ServerMetrics
    from scorer.settings import ScorerSettings

log = logging.getLogger("scorer.server")


@dataclass(slots=True)
class Job:
    """One queued piece of work and the future its caller awaits."""

    kind: str  # "score" or "chat"
    payload: Any
    future: asyncio.Future[Any]
    enqueued: float = field(default_factory=time.perf_counter)


class ScoringService:
    """Owns the engine, the bounded queue and the worker; lives in the app's cleanup context."""

    def __init__(
        self,
        settings: ScorerSettings,
        metrics: ServerMetrics,
        engine_factory: Callable[[ScorerSettings], Engine] = Engine.from_settings,
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self.engine: Engine | None = None
        self.load_error: str | None = None
        self.draining = False
        self._factory = engine_factory
        self._queue: asyncio.Queue[Job] = asyncio.Queue(maxsize=settings.queue_size)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="llama")
        self._tasks: set[asyncio.Task[None]] = set()
        self._busy = False

    # -- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        """Start loading the model and the worker; returns at once (`/ping` says when ready)."""
        for coro in (self._load(), self._worker()):
            task = asyncio.create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _load(self) -> None:
        started = time.perf_counter()
        loop = asyncio.get_running_loop()
        try:
            engine = await loop.run_in_executor(self._executor, self._build)
        except Exception as exc:
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.exception("model load failed")
            return
        self.engine = engine
        self.metrics.model_load.set(time.perf_counter() - started)
        self.metrics.ready.set(1)
        ident = engine.identity
        self.metrics.build.info({"version": self.metrics.build_version, "model": ident.name,
                                 "sha256": ident.sha256, "quantization": ident.quantization,
                                 "runtime": f"{ident.runtime} {ident.runtime_version}",
                                 "device": ident.device})
        log.info("model loaded in %.1fs: %s", time.perf_counter() - started, engine.identity.file)

    def _build(self) -> Engine:
        engine = self._factory(self.settings)
        engine.warm_up()
        return engine

    async def drain(self, grace_s: float) -> None:
        """Stop taking work; let queued jobs finish within ``grace_s``; fail the rest with 503."""
        self.draining = True
        deadline = time.monotonic() + grace_s
        while (self._busy or not self._queue.empty()) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.02)  # polled: the worker and the queue are both sources of "done"
        while not self._queue.empty():
            job = self._queue.get_nowait()
            if not job.future.done():
                job.future.set_exception(NotReady("server shut down before this request was scored"))
        self.metrics.queue_depth.set(0)

    async def stop(self) -> None:
        """Cancel the worker, wait for a load in progress, free the model."""
        await stop_tasks(*self._tasks)
        engine, self.engine = self.engine, None
        if engine is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, engine.close)
        self._executor.shutdown(wait=True)

    # -- the queue -----------------------------------------------------------------------------

    def submit(self, kind: str, payload: Any) -> asyncio.Future[Any]:
        """Queue a job or refuse it at once (never waits, never queues without bound)."""
        if self.draining:
            raise NotReady("server is shutting down")
        if self.engine is None:
            raise NotReady(
                "model is still loading"
                if self.load_error is None
                else f"model failed to load: {self.load_error}"
            )
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        try:
            self._queue.put_nowait(Job(kind, payload, future))
        except asyncio.QueueFull:
            self.metrics.overloaded.inc()
            raise Overloaded(f"{self._queue.maxsize} requests are already waiting") from None
        self.metrics.queue_depth.set(self._queue.qsize())
        return future

    async def _worker(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            first = await self._queue.get()
            self._busy = True  # from here until its answers are out (drain waits for it)
            try:
                await self._gather_wait(first)
                jobs = self._take([first])
                self.metrics.queue_depth.set(self._queue.qsize())
                await self._run_jobs(loop, jobs)
            finally:
                self._busy = False

    async def _gather_wait(self, first: Job) -> None:
        """With cross-request batching, give other decisions ``batch_wait_ms`` to join ``first``."""
        wait_s = self.settings.batch_wait_ms / 1000
        if wait_s <= 0 or first.kind != "score" or not self.settings.cross_batching:
            return
        if self._queue.qsize() < self.settings.cross_batch_max - 1:
            await asyncio.sleep(wait_s)  # a fixed batching window, not a poll

    async def _run_jobs(self, loop: asyncio.AbstractEventLoop, jobs: list[Job]) -> None:
        """Run the live jobs on the llama.cpp thread and resolve their callers' futures."""
        live = [j for j in jobs if not j.future.done()]  # callers that hung up are skipped
        if not live:
            return
        now = time.perf_counter()
        for job in live:
            self.metrics.queue_wait.observe(now - job.enqueued)
        results = await loop.run_in_executor(self._executor, self._run, live, now)
        for job, result in zip(live, results, strict=True):
            if job.future.done():
                continue
            if isinstance(result, BaseException):
                job.future.set_exception(result)
            else:
                job.future.set_result(result)

    def _take(self, jobs: list[Job]) -> list[Job]:
        """With cross-request batching, add waiting decisions (any type) up to ``cross_batch_max``."""
        if not self.settings.cross_batching or jobs[0].kind != "score":
            return jobs
        while len(jobs) < self.settings.cross_batch_max and not self._queue.empty():
            head = self._queue._queue[0]  # type: ignore[attr-defined]  # noqa: SLF001  (peek)
            if head.kind != "score":
                break
            jobs.append(self._queue.get_nowait())
        return jobs

    def _run(self, jobs: list[Job], picked: float) -> list[Any]:
        """On the llama.cpp thread: run the jobs, return a result or an exception per job."""
        engine = self.engine
        assert engine is not None
        before = (engine.stats.tokens_computed, engine.stats.tokens_cached, engine.stats.memo_hits)
        started = time.perf_counter()
        results: list[Any]
        if jobs[0].kind == "chat":
            results = [_capture(jobs[0].payload, engine)]
        else:
            queue_ms = [(picked - j.enqueued) * 1000 for j in jobs]
            results = _score_jobs(engine, [j.payload for j in jobs], queue_ms)
            self.metrics.batch_size.observe(len(jobs))
        self.metrics.score_time.labels(jobs[0].kind).observe(time.perf_counter() - started)
        self.metrics.tokens_computed.inc(engine.stats.tokens_computed - before[0])
        self.metrics.tokens_cached.inc(engine.stats.tokens_cached - before[1])
        self.metrics.memo_hits.inc(engine.stats.memo_hits - before[2])
        return results


def _score_jobs(engine: Engine, requests: list[ScoreRequest], queue_ms: list[float]) -> list[Any]:
    if len(requests) > 1:
        return list(engine.score_many(requests, queue_ms=queue_ms))  # a failed one gets its exception
    out: list[Any] = []
    for request, wait in zip(requests, queue_ms, strict=True):
        try:
            out.append(engine.score(request, queue_ms=wait))
        except Exception as exc:  # noqa: BLE001  (handed to the caller's future)
            out.append(exc)
    return out


def _capture(call: Callable[[Engine], Any], engine: Engine) -> Any:
    try:
        return call(engine)
    except Exception as exc:  # noqa: BLE001  (handed to the caller's future)
        return exc
