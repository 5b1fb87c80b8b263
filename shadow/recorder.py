"""The record phase: finished rows go to the sink from one writer task, off the request path.

Dropped decisions are handed over raw (`drop`): the writer redacts and hashes their state, so the
mirror API and the proxy never pay for it. One JSON log line per decision carries its ids (never its
state). The backlog (`shadow.backlog`) is bounded in items and bytes; an accepted decision's row always
has room reserved, and a decision dropped before acceptance becomes a row only while the backlog has
spare room, else it is counted in the ``drops`` summaries (`shadow.drops`, flushed every ``FLUSH_S``).
Every offered decision is one proposals row or counted once in ``drops``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from contracts.tasks import stop_tasks
from shadow.backlog import Backlog
from shadow.drops import DropCounter
from shadow.proposals import QueuedDecision, blank_row, not_scored

if TYPE_CHECKING:
    from shadow.metrics import Metrics
    from shadow.proposals import RowStamp
    from shadow.records.sink import RecordSink

log = logging.getLogger("shadow.decisions")
Pending = tuple[QueuedDecision, str] | dict[str, Any]
FLUSH_S = 1.0
CHALLENGER_SHARE = 0.5
"""A challenger's decisions are accepted while the row backlog stays under this share of its limits."""
MAX_OUTCOME_WRITES = 1024
"""Proxy-mode outcomes being written at once; beyond, an outcome is counted lost (a metric)."""


def _has_mark(d: QueuedDecision) -> bool:
    """Whether the store holds ``d``'s accept mark (then it owes a row: ``lost`` if nothing else)."""
    mark = d.accepted
    return mark is not None and mark.done() and not mark.cancelled() and mark.exception() is None


class Recorder:
    """Owns the row backlog, the drop counts and the task that writes both."""

    def __init__(self, sink: RecordSink, metrics: Metrics, stamp: RowStamp, backlog: int,
                 backlog_bytes: int = 64 * 1024 * 1024) -> None:
        self.sink = sink
        self.metrics = metrics
        self.stamp = stamp
        self.backlog = Backlog(backlog, backlog_bytes)
        self.drops = DropCounter()
        self._wake = asyncio.Event()
        self._outcome_tasks: set[asyncio.Task[None]] = set()
        self._current: asyncio.Future[None] | None = None

    def room(self, size: int, *, champion: bool = True) -> bool:
        """Whether the door may accept a decision of ``size`` bytes (see `Backlog.room`).

        A challenger's only while the backlog stays under half full: the rest is the champion's.
        """
        return self.backlog.room(size, 1.0 if champion else CHALLENGER_SHARE)

    def reserve(self, d: QueuedDecision) -> None:
        """Hold backlog room for an accepted decision's row."""
        self.backlog.reserve(d.size)

    def drop(self, decision: QueuedDecision, reason: str) -> None:
        """Record a decision that will not be scored (never blocks)."""
        self.metrics.dropped.labels(decision.rt.name, decision.cand.name, reason).inc()
        if decision.accepted is not None:
            self._push_accepted((decision, reason), decision.size)
        elif self.backlog.spare(decision.size):
            self._push((decision, reason), decision.size, accepted=False)
        else:
            self.count(decision.rt.name, decision.cand.name, reason, received_us=decision.received_us)

    def count(self, decision_type: str, candidate: str, reason: str, n: int = 1,
              received_us: int | None = None) -> None:
        """Count decisions in the ``drops`` summaries instead of writing a row for each."""
        self.drops.count(decision_type, candidate, reason, n, received_us)
        self.metrics.drop_summaries.labels(decision_type, candidate, reason).inc(n)

    def put(self, row: dict[str, Any], size: int = 0) -> None:
        """Record an accepted decision's finished row (never blocks; its room was reserved)."""
        self._push_accepted(row, size)

    def _push_accepted(self, item: Pending, size: int) -> None:
        self.backlog.release(size)
        self._push(item, size, accepted=True)

    def _push(self, item: Pending, size: int, *, accepted: bool) -> None:
        self.backlog.push(item, size, accepted=accepted)
        self._wake.set()

    def outcome_later(self, row: dict[str, Any]) -> None:
        """Write a proxy-mode outcome in the background (the response has already gone)."""
        if len(self._outcome_tasks) >= MAX_OUTCOME_WRITES:
            self.metrics.outcomes_lost.inc()
            return
        task = asyncio.create_task(self._outcome(row))
        self._outcome_tasks.add(task)
        task.add_done_callback(self._outcome_tasks.discard)

    async def _outcome(self, row: dict[str, Any]) -> None:
        try:
            await self.sink.outcome(row)
            self.metrics.outcomes.labels(row["decision_type"], row["source"]).inc()
            if not row["in_options"]:
                self.metrics.outcomes_outside.labels(row["decision_type"], row["source"]).inc()
        except Exception:
            log.exception("outcome for %s not recorded", row.get("decision_id"))

    async def run(self) -> None:
        """The writer loop (started and cancelled by the app's cleanup context).

        Each write is shielded: cancelling the loop never cuts a row in half; `drain` finishes it.
        """
        flusher = asyncio.create_task(self._flush_loop(), name="shadow-drops-flush")
        try:
            while True:
                while not self.backlog.items:
                    self._wake.clear()
                    await self._wake.wait()
                self._current = asyncio.ensure_future(self._write(*self.backlog.pop()))
                await asyncio.shield(self._current)
        finally:
            await stop_tasks(flusher)

    async def _flush_loop(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_S)
            self.backlog.measure()
            self.metrics.admit_limit.set(self.backlog.limit)
            self.metrics.backlog_items.set(len(self.backlog.items))
            self.metrics.backlog_bytes.set(self.backlog.bytes)
            await self.flush_drops()

    async def flush_drops(self) -> None:
        """Write the drop counts gathered since the last flush (put back if the store refuses)."""
        rows = self.drops.take()
        if not rows:
            return
        try:
            await self.sink.drops(rows)
        except Exception:
            log.exception("drop summaries not written; kept for the next flush")
            self.drops.restore(rows)

    async def drain(self, budget_s: float) -> None:
        """Write what is waiting for up to ``budget_s`` (after the workers have stopped); count the rest.

        What the time does not cover: a decision dropped before acceptance is counted in ``drops``; an
        accepted one is left to the store, whose close writes its ``lost`` / ``shutdown`` row from the
        accept mark (one short journal frame), or counted when it has no mark. Exit never waits on the
        backlog's length.
        """
        end = time.monotonic() + budget_s
        if self._current is not None:
            await self._current
        if self._outcome_tasks:
            await asyncio.wait(self._outcome_tasks, timeout=max(0.0, end - time.monotonic()))
        while self.backlog.items and time.monotonic() < end:
            await self._write(*self.backlog.pop())
        left = 0
        while self.backlog.items:
            item, _, accepted = self.backlog.pop()
            left += 1
            self._leave(item, accepted=accepted)
        self.metrics.rows_left_at_shutdown.inc(left)
        await self.flush_drops()

    def _leave(self, item: Pending, *, accepted: bool) -> None:
        """Account for an item the shutdown could not write."""
        if isinstance(item, tuple):
            d, reason = item
            if not (accepted and _has_mark(d)):
                self.count(d.rt.name, d.cand.name, reason, received_us=d.received_us)
        elif item.get("reason") == "disk_full":  # its accept mark failed: nothing in the store owes it
            received = item["received_at"]
            self.count(item["decision_type"], item["candidate"], "disk_full",
                       received_us=int(received.timestamp() * 1e6))

    async def _write(self, item: Pending, size: int = 0, accepted: bool = False) -> None:  # noqa: ARG002  (popped as a triple)
        row = self._build(item) if isinstance(item, tuple) else item
        try:
            await self.sink.proposal(row)
        except Exception:
            log.exception("proposal row for %s not recorded", row.get("decision_id"))
            if accepted:  # its accept mark stays pending: the store's close (or recovery) writes it lost
                self.metrics.rows_lost.inc()
            else:
                self._leave(item, accepted=False)
            return
        finally:
            self.backlog.written.add()
        self.metrics.rows.labels(row["status"]).inc()
        if not log.isEnabledFor(logging.INFO):
            return
        log.info("decision", extra={"fields": {
            "event": "decision", "decision_id": row["decision_id"], "decision_type": row["decision_type"],
            "candidate": row.get("candidate"), "status": row["status"], "reason": row["reason"],
            "proposal": row.get("proposal"), "attempts": row.get("attempts"), "total_ms": row.get("total_ms"),
            "writer_id": self.stamp.writer_id}})

    def _build(self, item: tuple[QueuedDecision, str]) -> dict[str, Any]:
        decision, reason = item
        try:
            prepared = decision.rt.rules.prepare(decision.state)
        except Exception:  # noqa: BLE001  (a state that cannot be redacted is still accounted for)
            prepared = None
        total_ms = (time.monotonic() - decision.received_mono) * 1000
        return not_scored(blank_row(decision, prepared, self.stamp), "dropped", reason, total_ms)
