"""The record phase: finished rows go to the sink from one writer task, off the request path.

Dropped decisions are handed over raw (`drop`): the writer redacts and hashes their state, so the
mirror API and the proxy never pay for it. One JSON log line per decision carries its ids (never its
state). The backlog is bounded; a row that does not fit is counted in ``shadow_rows_lost``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from shadow.proposals import Decision, blank_row, not_scored

if TYPE_CHECKING:
    from shadow.metrics import Metrics
    from shadow.proposals import RowStamp
    from shadow.records.sink import RecordSink

log = logging.getLogger("shadow.decisions")
Pending = tuple[Decision, str] | dict[str, Any]


class Recorder:
    """Owns the row backlog and the task that writes it."""

    def __init__(self, sink: RecordSink, metrics: Metrics, stamp: RowStamp, backlog: int) -> None:
        self.sink = sink
        self.metrics = metrics
        self.stamp = stamp
        self._queue: asyncio.Queue[Pending] = asyncio.Queue(maxsize=backlog)
        self._outcome_tasks: set[asyncio.Task[None]] = set()
        self._current: asyncio.Future[None] | None = None

    def drop(self, decision: Decision, reason: str) -> None:
        """Record a decision that will not be scored (never blocks)."""
        self.metrics.dropped.labels(decision.rt.name, decision.cand.name, reason).inc()
        self._put((decision, reason))

    def put(self, row: dict[str, Any]) -> None:
        """Record a finished row (never blocks)."""
        self._put(row)

    def _put(self, item: Pending) -> None:
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            self.metrics.rows_lost.inc()

    def outcome_later(self, row: dict[str, Any]) -> None:
        """Write a proxy-mode outcome in the background (the response has already gone)."""
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
        while True:
            item = await self._queue.get()
            self._current = asyncio.ensure_future(self._write(item))
            await asyncio.shield(self._current)

    async def drain(self) -> None:
        """Write everything still waiting (after the workers have stopped)."""
        if self._current is not None:
            await self._current
        if self._outcome_tasks:
            await asyncio.gather(*self._outcome_tasks, return_exceptions=True)
        while not self._queue.empty():
            await self._write(self._queue.get_nowait())

    async def _write(self, item: Pending) -> None:
        row = self._build(item) if isinstance(item, tuple) else item
        try:
            await self.sink.proposal(row)
        except Exception:
            log.exception("proposal row for %s not recorded", row.get("decision_id"))
            self.metrics.rows_lost.inc()
            return
        self.metrics.rows.labels(row["status"]).inc()
        if not log.isEnabledFor(logging.INFO):
            return
        log.info("decision", extra={"fields": {
            "event": "decision", "decision_id": row["decision_id"], "decision_type": row["decision_type"],
            "candidate": row.get("candidate"), "status": row["status"], "reason": row["reason"],
            "proposal": row.get("proposal"), "attempts": row.get("attempts"), "total_ms": row.get("total_ms"),
            "writer_id": self.stamp.writer_id}})

    def _build(self, item: tuple[Decision, str]) -> dict[str, Any]:
        decision, reason = item
        try:
            prepared = decision.rt.rules.prepare(decision.state)
        except Exception:  # noqa: BLE001  (a state that cannot be redacted is still accounted for)
            prepared = None
        total_ms = (time.monotonic() - decision.received_mono) * 1000
        return not_scored(blank_row(decision, prepared, self.stamp), "dropped", reason, total_ms)
