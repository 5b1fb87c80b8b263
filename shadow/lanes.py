"""A candidate's lane: its own bounded queue (items and bytes) and its own pool of workers.

Each candidate name in the catalog gets one lane (the champion's is ``default`` unless the catalog
names it), so a slow challenger fills, times out and drops from its own queue and never holds a worker
the champion needs. `put` never awaits; the workers take decisions in order, hand each to the
`Dispatcher` and its finished row to the `Recorder`.

Besides its hard bounds (`refusal`: ``queue_full``, ``bytes_limit``), a lane admits no more than its
workers can start in time: `over_throughput` says a decision should be shed when the queue already
holds ``QUEUE_SHARE`` of the decision's deadline worth of the lane's measured throughput (decisions
its workers finished per second, `shadow.throughput`), so a slow scorer sheds at the door instead of
filling the queue with decisions that would time out waiting. A lane not yet measured has only its
hard bounds.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shadow.throughput import Throughput

if TYPE_CHECKING:
    from shadow.dispatch import Dispatcher
    from shadow.metrics import Metrics
    from shadow.proposals import QueuedDecision
    from shadow.recorder import Recorder

log = logging.getLogger(__name__)

QUEUE_SHARE = 0.5
"""A queued decision may wait about this share of its deadline; the rest is for its scorer call."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Each lane's queue bounds and pool size."""

    max_items: int
    max_bytes: int
    workers: int


class Lane:
    """One candidate's queue and workers (see the module docstring)."""

    def __init__(self, name: str, limits: Limits, dispatcher: Dispatcher, recorder: Recorder,
                 metrics: Metrics) -> None:
        self.name = name
        self.limits = limits
        self.dispatcher = dispatcher
        self.recorder = recorder
        self._queue: asyncio.Queue[QueuedDecision] = asyncio.Queue()  # bounded by `refusal`, not by maxsize
        self._bytes = 0
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._workers: list[asyncio.Task[None]] = []
        self._depth_gauge = metrics.queue_depth.labels(name)
        self._bytes_gauge = metrics.queue_bytes.labels(name)
        self._throughput_gauge = metrics.lane_throughput.labels(name)
        self.finished = Throughput()
        """Decisions the workers finished (whatever their row says), and per second."""

    def refusal(self, size: int) -> str | None:
        """Why this lane cannot take ``size`` more bytes now (``queue_full``, ``bytes_limit``), or None."""
        if self._queue.qsize() >= self.limits.max_items:
            return "queue_full"
        return "bytes_limit" if self._bytes + size > self.limits.max_bytes else None

    def admit_limit(self, deadline_s: float) -> int | None:
        """How many queued decisions a lane whose decisions have ``deadline_s`` takes; None: not measured."""
        self.finished.tick(waiting=not self._queue.empty())
        rate = self.finished.rate
        if rate == 0:
            return None
        return max(self.limits.workers, int(rate * deadline_s * QUEUE_SHARE))

    def over_throughput(self, deadline_s: float) -> bool:
        """Whether one more decision would wait past its share of ``deadline_s`` (shed it: ``shed``)."""
        limit = self.admit_limit(deadline_s)
        return limit is not None and self._queue.qsize() >= limit

    def put(self, d: QueuedDecision) -> None:
        """Queue a decision the lane has room for (never blocks)."""
        self._queue.put_nowait(d)
        self._bytes += d.size
        self._gauges()

    def _gauges(self) -> None:
        self._depth_gauge.set(self._queue.qsize())
        self._bytes_gauge.set(self._bytes)

    def start(self) -> None:
        """Start the worker pool."""
        self._workers = [asyncio.create_task(self._work(), name=f"shadow-{self.name}-worker-{i}")
                         for i in range(self.limits.workers)]

    async def _work(self) -> None:
        while True:
            d = await self._queue.get()
            self._bytes -= d.size
            self._gauges()
            self._busy += 1
            self._idle.clear()
            try:
                row = await self.dispatcher.dispatch(d)
            except asyncio.CancelledError:
                self.recorder.drop(d, "shutdown")
                raise
            except Exception:
                log.exception("dispatch of %s for %s failed", d.decision_id, self.name)
                self.recorder.drop(d, "internal_error")
                continue
            finally:
                self._busy -= 1
                if not self._busy:
                    self._idle.set()
                self.finished.add()
                self.finished.tick(waiting=not self._queue.empty())
                self._throughput_gauge.set(self.finished.rate)
            self.recorder.put(row, d.size)

    def drop_queued(self) -> None:
        """Record every queued decision as ``shutdown`` (the mirror is closing)."""
        while not self._queue.empty():
            d = self._queue.get_nowait()
            self._bytes -= d.size
            self.recorder.drop(d, "shutdown")
        self._gauges()

    async def idle(self) -> None:
        """Return once no worker holds a decision."""
        await self._idle.wait()

    def cancel(self) -> list[asyncio.Task[None]]:
        """Cancel the workers; return them for the caller to await."""
        workers, self._workers = self._workers, []
        for task in workers:
            task.cancel()
        return workers

    @property
    def depth(self) -> int:
        """Decisions waiting for a worker."""
        return self._queue.qsize()
