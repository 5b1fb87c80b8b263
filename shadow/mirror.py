"""The mirror: handle -> enqueue -> dispatch -> record, once per candidate.

`Mirror.offer` is all the proxy's path ever calls: it decides in memory and returns at once; it never
awaits a scorer or the store, and it returns nothing a caller could put into a production response.
The mirror API calls `offer_durably`, which also waits for every candidate's accept mark of the queued
decisions to be on disk (the journal's group commit), so a decision answered ``queued`` leaves its
proposals rows even if the process dies the next moment; it never waits for a scorer.
The kill switch, the experiment's end, the sample and the rate cap decide once per decision, for
every candidate alike (comparisons stay paired); then each candidate's own lane (`shadow.lanes`:
queue bounds, a gate sized from its measured throughput, workers) and the row backlog's room take the
decision or drop it, and each candidate ends with its own row.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from contracts.records import DEFAULT_CANDIDATE
from shadow import clock
from shadow.lanes import Lane, Limits
from shadow.proposals import QueuedDecision
from shadow.records.sink import SinkFull
from shadow.sampling import is_sampled

if TYPE_CHECKING:
    from collections.abc import Iterable

    from shadow.dispatch import Dispatcher
    from shadow.live_catalog import DecisionRuntime
    from shadow.metrics import Metrics
    from shadow.recorder import Recorder
    from shadow.state import State


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


class Mirror:
    """Owns the lanes (one per candidate name) and the kill switch."""

    def __init__(self, limits: Limits, dispatcher: Dispatcher, recorder: Recorder, metrics: Metrics,
                 lanes: Iterable[str] = (DEFAULT_CANDIDATE,)) -> None:
        self.limits = limits
        self.dispatcher = dispatcher
        self.recorder = recorder
        self.metrics = metrics
        self.kill_switch = False
        self.closing = False
        self.lanes = {name: Lane(name, limits, dispatcher, recorder, metrics) for name in lanes}
        self._accepting: set[asyncio.Task[None]] = set()
        self._stopping: asyncio.Future[None] | None = None

    def offer(self, rt: DecisionRuntime, decision_id: str, state: State, size: int) -> str | None:
        """Offer one decision to each of the type's candidates.

        Returns None if the champion's lane queued it, else the reason the champion's row will carry
        (each challenger's own outcome is in its row and its metrics).
        """
        return self._offer(rt, decision_id, state, size)[0]

    async def offer_durably(self, offers: list[Offer]) -> list[str | None]:
        """Offer each decision, then wait until every candidate's accept mark of each is on disk.

        Returns, per decision, what `offer` returns for the champion, or ``disk_full`` / ``internal_error``
        when the champion's mark could not be written (its worker records it so).
        """
        received = clock.now(), time.monotonic()  # one request, one instant of receipt for its decisions
        taken = [self._offer(o.rt, o.decision_id, o.state, o.size, received) for o in offers]
        marks = [d.accepted for _, ds in taken for d in ds if d.accepted is not None]
        if marks:
            await asyncio.wait(marks)
        return [reason if reason is not None else _mark_failure(ds[0].accepted) for reason, ds in taken]

    def _offer(self, rt: DecisionRuntime, decision_id: str, state: State, size: int,
               received: tuple[float, float] | None = None) -> tuple[str | None, list[QueuedDecision]]:
        """The champion's reason (None: queued), and the decisions each candidate's lane got.

        ``received``: the (clock, monotonic) instant the decision was received; now if not given.
        """
        now, received_mono = received if received is not None else (clock.now(), time.monotonic())
        received_us = int(now * 1e6)
        sampled, shared = self._admit(rt, decision_id, now)
        reasons, decisions = [], []
        for cand in rt.candidates:
            d = QueuedDecision(decision_id, rt, cand, state, received_us, received_mono, size, sampled)
            self.metrics.offered.labels(rt.name, cand.name).inc()
            if sampled:
                self.metrics.sampled.labels(rt.name, cand.name).inc()
            lane = self.lanes[cand.name]
            reason = shared or lane.refusal(size) or self._shed(lane, d)
            if reason is None:
                self.recorder.reserve(d)
                self._accept(d)
                lane.put(d)
            else:
                self.recorder.drop(d, reason)
            reasons.append(reason)
            decisions.append(d)
        return reasons[0], decisions

    def _shed(self, lane: Lane, d: QueuedDecision) -> str | None:
        """``shed`` when the lane's workers could not start it in time, or the row backlog has no room."""
        if lane.over_throughput(d.cand.spec.deadline_s):
            gate = "lane_throughput"
        elif not self.recorder.room(d.size, champion=d.cand is d.rt.candidates[0]):
            gate = "row_backlog"
        else:
            return None
        self.metrics.shed.labels(d.rt.name, d.cand.name, gate).inc()
        return "shed"

    def _accept(self, d: QueuedDecision) -> None:
        """Start the store's durable note now, so a crash while the decision waits leaves a ``lost`` row.

        One note per candidate. The candidate's worker awaits it before scoring (and turns ``SinkFull``
        into ``disk_full``).
        """
        task = asyncio.get_running_loop().create_task(self.dispatcher.sink.accept(
            d.decision_id, d.rt.name, d.received_us, d.rt.dtype.option_ids, d.cand.name))
        self._accepting.add(task)
        task.add_done_callback(self._accepted)
        d.accepted = task

    def _accepted(self, task: asyncio.Task[None]) -> None:
        self._accepting.discard(task)
        if not task.cancelled():
            task.exception()  # retrieved here; the worker re-raises it through `await d.accepted`

    def _admit(self, rt: DecisionRuntime, decision_id: str, now: float) -> tuple[bool, str | None]:
        """Whether the decision is sampled, and why no candidate may take it (None: each lane decides)."""
        stopped = self._stopped(rt, now)
        if stopped is not None:
            return False, stopped
        if not is_sampled(decision_id, rt.dtype.sampling.rate, rt.dtype.sampling.salt):
            return False, "not_sampled"
        if rt.rate_cap is not None and not rt.rate_cap.allow():
            return True, "rate_limited"
        return True, None

    def _stopped(self, rt: DecisionRuntime, now: float) -> str | None:
        """Why mirroring is off for this decision: shutdown, the kill switch, or the experiment's end."""
        if self.closing:
            return "shutdown"
        if self.kill_switch:
            return "kill_switch"
        return "experiment_ended" if rt.dtype.ended(datetime.fromtimestamp(now, UTC)) else None

    def start(self) -> None:
        """Start every lane's workers."""
        for lane in self.lanes.values():
            lane.start()

    async def stop(self, grace_s: float) -> None:
        """Refuse new decisions, record the queued ones as ``shutdown``, give in-flight calls ``grace_s``.

        A second call waits for the first (the command starts the stop beside the relay's own grace).
        """
        self.begin_stop(grace_s)
        assert self._stopping is not None
        await asyncio.shield(self._stopping)

    def begin_stop(self, grace_s: float) -> None:
        """Start `stop` without waiting for it (once)."""
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop(grace_s))

    async def _stop(self, grace_s: float) -> None:
        self.closing = True
        for lane in self.lanes.values():
            lane.drop_queued()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.gather(*(lane.idle() for lane in self.lanes.values())), grace_s)
        workers = [task for lane in self.lanes.values() for task in lane.cancel()]
        await asyncio.gather(*workers, *self._accepting, return_exceptions=True)

    @property
    def depth(self) -> int:
        """Decisions waiting for a worker, all lanes together."""
        return sum(lane.depth for lane in self.lanes.values())
