"""The mirror: handle -> enqueue -> dispatch -> record.

`Mirror.offer` is all the proxy's path ever calls: it decides in memory (kill switch, experiment end,
sample, rate cap, queue bounds) and returns at once; it never awaits a scorer or the store, and it
returns nothing a caller could put into a production response. The mirror API calls `offer_durably`,
which also waits for the queued decisions' accept marks to be on disk (the journal's group commit), so
a decision answered ``queued`` leaves a proposals row even if the process dies the next moment; it
never waits for a scorer. A fixed pool of workers takes decisions from the bounded queue (items and
bytes) and hands each finished row to the `Recorder`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from shadow.proposals import Decision
from shadow.records.sink import SinkFull
from shadow.sampling import is_sampled

if TYPE_CHECKING:
    from shadow.dispatch import Dispatcher
    from shadow.live_catalog import DecisionRuntime
    from shadow.metrics import Metrics
    from shadow.recorder import Recorder
    from shadow.state import State

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Offer:
    """One decision offered through the mirror API."""

    rt: DecisionRuntime
    decision_id: str
    state: State
    size: int


def _mark_failure(mark: asyncio.Future[None] | None) -> str | None:
    """The reason the worker will record for a decision whose accept mark failed; None if it is on disk."""
    if mark is None or mark.cancelled() or mark.exception() is None:
        return None
    return "disk_full" if isinstance(mark.exception(), SinkFull) else "internal_error"


@dataclass(frozen=True, slots=True)
class Limits:
    """The queue's bounds and the pool size."""

    max_items: int
    max_bytes: int
    workers: int


class Mirror:
    """Owns the queue, the workers and the kill switch."""

    def __init__(self, limits: Limits, dispatcher: Dispatcher, recorder: Recorder, metrics: Metrics) -> None:
        self.limits = limits
        self.dispatcher = dispatcher
        self.recorder = recorder
        self.metrics = metrics
        self.kill_switch = False
        self.closing = False
        self._queue: asyncio.Queue[Decision] = asyncio.Queue()  # bounded by `_admit`, not by maxsize
        self._bytes = 0
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._workers: list[asyncio.Task[None]] = []
        self._accepting: set[asyncio.Task[None]] = set()

    def offer(self, rt: DecisionRuntime, decision_id: str, state: State, size: int) -> str | None:
        """Take one decision; return None if queued, else the reason it was dropped."""
        return self._offer(rt, decision_id, state, size).reason

    async def offer_durably(self, offers: list[Offer]) -> list[str | None]:
        """Offer each decision, then wait until every queued one's accept mark is on disk.

        Returns, per decision, None if it is queued and durably accepted, else the reason its row carries:
        the drop reason, or ``disk_full`` / ``internal_error`` when its mark could not be written (the
        worker records it so).
        """
        taken = [self._offer(o.rt, o.decision_id, o.state, o.size) for o in offers]
        marks = [d.accepted for d in taken if d.reason is None and d.accepted is not None]
        if marks:
            await asyncio.wait(marks)
        return [d.reason if d.reason is not None else _mark_failure(d.accepted) for d in taken]

    def _offer(self, rt: DecisionRuntime, decision_id: str, state: State, size: int) -> Decision:
        now = time.time()
        d = Decision(decision_id, rt, state, int(now * 1e6), time.monotonic(), size)
        self.metrics.offered.labels(rt.name).inc()
        d.reason = self._admit(d, now)
        if d.reason is None:
            self._accept(d)
            self._queue.put_nowait(d)
            self._bytes += d.size
            self._gauges()
        else:
            self.recorder.drop(d, d.reason)
        return d

    def _accept(self, d: Decision) -> None:
        """Start the store's durable note now, so a crash while the decision waits leaves a ``lost`` row.

        The worker awaits it before scoring (and turns ``SinkFull`` into ``disk_full``).
        """
        task = asyncio.get_running_loop().create_task(
            self.dispatcher.sink.accept(d.decision_id, d.rt.name, d.received_us, d.rt.dtype.option_ids))
        self._accepting.add(task)
        task.add_done_callback(self._accepted)
        d.accepted = task

    def _accepted(self, task: asyncio.Task[None]) -> None:
        self._accepting.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved here; the worker re-raises it through `await d.accepted`

    def _admit(self, d: Decision, now: float) -> str | None:
        stopped = self._stopped(d, now)
        if stopped is not None:
            return stopped
        d.sampled = is_sampled(d.decision_id, d.rt.dtype.sampling.rate, d.rt.dtype.sampling.salt)
        if not d.sampled:
            return "not_sampled"
        self.metrics.sampled.labels(d.rt.name).inc()
        if d.rt.rate_cap is not None and not d.rt.rate_cap.allow():
            return "rate_limited"
        if self._queue.qsize() >= self.limits.max_items:
            return "queue_full"
        return "bytes_limit" if self._bytes + d.size > self.limits.max_bytes else None

    def _stopped(self, d: Decision, now: float) -> str | None:
        """Why mirroring is off for this decision: shutdown, the kill switch, or the experiment's end."""
        if self.closing:
            return "shutdown"
        if self.kill_switch:
            return "kill_switch"
        return "experiment_ended" if d.rt.dtype.ended(datetime.fromtimestamp(now, UTC)) else None

    def _gauges(self) -> None:
        self.metrics.queue_depth.set(self._queue.qsize())
        self.metrics.queue_bytes.set(self._bytes)

    def start(self) -> None:
        """Start the worker pool."""
        self._workers = [asyncio.create_task(self._work(), name=f"shadow-worker-{i}")
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
                log.exception("dispatch of %s failed", d.decision_id)
                self.recorder.drop(d, "internal_error")
                continue
            finally:
                self._busy -= 1
                if not self._busy:
                    self._idle.set()
            self.recorder.put(row)

    async def stop(self, grace_s: float) -> None:
        """Refuse new decisions, record the queued ones as ``shutdown``, give in-flight calls ``grace_s``."""
        self.closing = True
        while not self._queue.empty():
            d = self._queue.get_nowait()
            self._bytes -= d.size
            self.recorder.drop(d, "shutdown")
        self._gauges()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), grace_s)
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, *self._accepting, return_exceptions=True)
        self._workers = []

    @property
    def depth(self) -> int:
        """Decisions waiting for a worker."""
        return self._queue.qsize()
