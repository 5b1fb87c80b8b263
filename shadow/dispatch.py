"""The dispatch phase: one queued decision becomes one proposals row.

accept    wait for the store's durable note, started when the decision was queued
          (``SinkFull`` -> dropped / disk_full)
guard     deadline left? spend budget left? breaker closed?
call      the backend, retried only for retryable answers, with full-jitter backoff that honours
``Retry-After``, all inside the decision's deadline
row       scored, or the status / reason of the last failure
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from shadow.cpupressure import ALIVE_S
from shadow.errors import InvalidScorerResponse, ScorerCallError, ScorerRejected, ScorerTimeout
from shadow.looplag import LoopLag
from shadow.proposals import QueuedDecision, RowStamp, Timing, blank_row, not_scored, scored
from shadow.records.sink import SinkFull
from shadow.refusals import RefusalLog

if TYPE_CHECKING:
    from shadow.backends.base import ScoreResult
    from shadow.live_catalog import CandidateRuntime
    from shadow.metrics import Metrics
    from shadow.records.sink import RecordSink

_NOT_BREAKER_FAILURES = (ScorerRejected, InvalidScorerResponse)  # the request's fault, not the endpoint's


@dataclass(slots=True)
class CallOutcome:
    """What the retry loop ended with."""

    result: ScoreResult | None = None
    status: str = "scored"
    reason: str | None = None
    attempts: int = 0
    scorer_ms: float = 0.0


class Dispatcher:
    """Turns queued decisions into rows; shared by every worker."""

    def __init__(self, sink: RecordSink, metrics: Metrics, stamp: RowStamp,
                 lag: LoopLag | None = None) -> None:
        self.sink = sink
        self.metrics = metrics
        self.stamp = stamp
        self.lag = lag if lag is not None else LoopLag()
        """The loop's lag: a timeout while the loop lagged is the sidecar's fault, not the scorer's."""
        self.rng = random.Random()  # noqa: S311  (backoff jitter, not security)
        self.refusals = RefusalLog(metrics)
        """Refusals are counted, and logged once per candidate and cause (not once per decision)."""

    async def dispatch(self, d: QueuedDecision) -> dict[str, Any]:
        """Score one decision with its candidate and return the candidate's row."""
        start = time.monotonic()
        queue_ms = (start - d.received_mono) * 1000
        prepared = d.rt.rules.prepare(d.state)
        row = blank_row(d, prepared, self.stamp)
        row["queue_ms"] = queue_ms
        try:
            if d.accepted is None:
                await self.sink.accept(d.decision_id, d.rt.name, d.received_us, d.rt.dtype.option_ids,
                                       d.cand.name)
            else:
                await d.accepted
        except SinkFull:
            return self._not_scored(row, d, "dropped", "disk_full")
        deadline = d.received_mono + d.cand.spec.deadline_s
        request = {"decision_id": d.decision_id, "decision_type": d.rt.name, "state": prepared.for_scorer,
                   "question": d.rt.dtype.question, "options": d.rt.options,
                   "scoring": {"normalization": d.cand.spec.normalization}}
        out = await self.call(d.cand, request, deadline)
        total_ms = (time.monotonic() - d.received_mono) * 1000
        if out.result is None:
            return self._not_scored(row, d, out.status, out.reason or "unknown", out.attempts)
        self.metrics.scored.labels(d.rt.name, d.cand.name).inc()
        return scored(row, out.result, Timing(queue_ms, out.scorer_ms, total_ms, out.attempts))

    def _not_scored(self, row: dict[str, Any], d: QueuedDecision, status: str, reason: str,
                    attempts: int = 0) -> dict[str, Any]:
        self.metrics.dropped.labels(d.rt.name, d.cand.name, reason).inc()
        total_ms = (time.monotonic() - d.received_mono) * 1000
        return not_scored(row, status, reason, total_ms, attempts)

    async def call(self, cand: CandidateRuntime, request: dict[str, Any], deadline: float) -> CallOutcome:
        """Call the candidate's backend until it answers, fails for good, or budget or deadline run out."""
        out = CallOutcome()
        spec = cand.spec
        while True:
            refusal = self._refusal(cand, deadline, out)
            if refusal is not None:
                out.status, out.reason = refusal
                return out
            out.attempts += 1
            t0 = time.monotonic()
            limit_s = min(spec.timeout_s, deadline - t0)
            try:
                out.result = await cand.backend.score(request, limit_s)
            except ScorerCallError as exc:
                self._observe(cand, t0, out, ok=isinstance(exc, _NOT_BREAKER_FAILURES),
                              starved=self._starved(cand, exc, t0, cut=limit_s < spec.timeout_s))
                out.status, out.reason = exc.status, exc.reason
                if isinstance(exc, ScorerRejected):
                    self.refusals.report(cand.name, cand.backend.endpoint, exc)
                pause = self._backoff(spec.backoff_base_s, spec.backoff_max_s, out.attempts, exc.retry_after)
                last = not exc.retryable or out.attempts >= spec.max_attempts
                if last or time.monotonic() + pause >= deadline:
                    return out
                self.metrics.retries.labels(cand.backend.name, cand.backend.endpoint, cand.name).inc()
                await asyncio.sleep(pause)
                continue
            self._observe(cand, t0, out, ok=True)
            cand.guard.spend_tokens(out.result.tokens)
            return out

    def _refusal(self, cand: CandidateRuntime, deadline: float, out: CallOutcome) -> tuple[str, str] | None:
        """Why no (further) call may go out now, as (status, reason); None if it may."""
        if time.monotonic() >= deadline - 0.001:
            return ("timeout", "deadline") if out.attempts == 0 else (out.status, out.reason or "deadline")
        if not cand.guard.allow_call():
            return "dropped", "budget_exhausted"
        if not cand.breaker.allow():
            self.metrics.breaker_state.labels(cand.backend.endpoint, cand.name).set(int(cand.breaker.state))
            return "dropped", "circuit_open"
        return None

    def _starved(self, cand: CandidateRuntime, exc: ScorerCallError, t0: float, *, cut: bool) -> str | None:
        """Why a failed call is the sidecar's or the machine's fault; None if it is the scorer's.

        Only a timeout can be: ``loop_lag`` (the sidecar's loop lagged), ``deadline_cut`` (the decision's
        deadline left the call less than its ``timeout_s``, the time spent queued or in earlier attempts,
        and the scorer answered lately), ``cpu_pressure`` (the machine's CPU was contended and the scorer
        answered lately, `shadow.cpupressure`). "Lately" is within ``ALIVE_S``: a scorer that stopped
        answering opens its breaker however its calls were cut or the machine was busy.
        """
        if not isinstance(exc, ScorerTimeout):
            return None
        if self.lag.starved(t0):
            return "loop_lag"
        if time.monotonic() - cand.breaker.last_success > ALIVE_S:
            return None  # silent this long: only the sidecar's own lag excuses it
        if cut:
            return "deadline_cut"
        return "cpu_pressure" if self.lag.pressure.contended(t0) else None

    def _observe(self, cand: CandidateRuntime, t0: float, out: CallOutcome, *, ok: bool,
                 starved: str | None = None) -> None:
        elapsed = time.monotonic() - t0
        out.scorer_ms += elapsed * 1000
        backend = cand.backend
        self.metrics.scorer_latency.labels(backend.name, backend.endpoint, cand.name).observe(elapsed)
        if starved is not None:  # neither a success nor the scorer's failure; a half-open trial may go again
            cand.breaker.trial_in_flight = False
            self.metrics.breaker_starved.labels(backend.endpoint, cand.name, starved).inc()
        elif ok:
            cand.breaker.success()
        else:
            cand.breaker.failure()
        self.metrics.breaker_state.labels(cand.backend.endpoint, cand.name).set(int(cand.breaker.state))

    def _backoff(self, base: float, cap: float, attempt: int, retry_after: float | None) -> float:
        """Full jitter: uniform in [0, min(cap, base * 2^(attempt-1))], at least ``Retry-After``."""
        pause = self.rng.uniform(0.0, min(cap, base * 2 ** (attempt - 1)))
        return max(pause, retry_after or 0.0)
