"""A champion and a slow challenger through every drop reason: each candidate accounts for every decision.

The paired review compares candidates on their rows and their ``drops``, so for each candidate
separately every offered decision is one proposals row or counted once in ``drops``, whatever the
reason (the kill switch, the spend budget, an open breaker, a full lane queue, shedding at the door,
the relay's ``handoff_full`` and ``relay_memory``). The champion (a healthy fault scorer) and the
challenger (another fault scorer, slow or failing, PMI-normalized) never share a scorer. Where the
reason does not depend on timing, the same offers are replayed with the champion alone and its rows
and drops must be the same, decision by decision: a challenger never changes the champion's record.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

from shadow.intake.supervisor import ProxyProcess, running_proxy, running_proxy_process
from shadow.keys import METRICS, MIRROR, SETTINGS
from tests.shadow import harness
from tests.shadow.fault_scorer import Faults, fault_app
from tests.shadow.proxy.harness import N, claimed_client, threaded_upstream

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable
    from pathlib import Path

    from aiohttp import web

CHAMPION, CHALLENGER = "default", "slow"


@dataclass
class Record:
    """One candidate's record: its rows (decision id -> status, reason) and its drops per reason."""

    rows: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    drops: Counter[str] = field(default_factory=Counter)

    @property
    def accounted(self) -> int:
        """Rows plus decisions counted in ``drops``."""
        return len(self.rows) + self.drops.total()

    def reasons(self) -> Counter[str | None]:
        """Rows and drops together, per reason (None: scored)."""
        return Counter(reason for _, reason in self.rows.values()) + Counter(dict(self.drops))


def records(root: Path) -> dict[str, Record]:
    """Each candidate's `Record`; a decision with two rows for one candidate fails here."""
    out: dict[str, Record] = {}
    for r in harness.read_rows(root, "proposals"):
        rec = out.setdefault(r["candidate"], Record())
        assert r["decision_id"] not in rec.rows, ("two rows", r["decision_id"], r["candidate"])
        rec.rows[r["decision_id"]] = (r["status"], r["reason"])
    for r in harness.read_rows(root, "drops"):
        out.setdefault(r["candidate"], Record()).drops[r["reason"]] += r["dropped"]
    return out


@contextlib.asynccontextmanager
async def fault_scorer(mode: str, delay_s: float = 30.0) -> AsyncIterator[str]:
    """A fault scorer of its own (never the champion's), released when the block ends."""
    faults = Faults(mode=mode, delay_s=delay_s)
    async with harness.serve(fault_app(faults)) as url:
        try:
            yield url
        finally:
            faults.release.set()


def challenger(url: str, **spec: Any) -> dict[str, dict[str, Any]]:
    """The ``candidates`` entry of the challenger: its own scorer, PMI, one attempt."""
    return {CHALLENGER: {"backend": "semif_http", "endpoint": url, "normalization": "pmi",
                         "max_attempts": 1, **spec}}


async def run(tmp: Path, dtype: dict[str, Any], drive: Callable[[str, web.Application, int], Awaitable[int]],
              **settings: Any) -> tuple[int, dict[str, Record]]:
    """Run a sidecar on ``dtype``, let ``drive`` offer decisions; (offered, each candidate's record)."""
    await asyncio.to_thread(tmp.mkdir)
    catalog = harness.write_catalog(tmp, {"tickets": dtype})
    n_candidates = 1 + len(dtype.get("candidates", {}))
    async with harness.running_sidecar(harness.settings_for(tmp, catalog, **settings)) as (url, app):
        offered = await drive(url, app, n_candidates)
    return offered, records(tmp / "records")


async def paired_and_alone(tmp: Path, dtype: dict[str, Any],
                           drive: Callable[[str, web.Application, int], Awaitable[int]],
                           **settings: Any) -> dict[str, Record]:
    """Run with the challenger, then with the champion alone; return the paired run's records.

    Every candidate accounts for every offer, and the champion's record is the same both times.
    """
    offered, paired = await run(tmp / "paired", dtype, drive, **settings)
    alone_type = {k: v for k, v in dtype.items() if k != "candidates"}
    offered_alone, alone = await run(tmp / "alone", alone_type, drive, **settings)
    assert offered == offered_alone > 0
    assert set(paired) == {CHAMPION, CHALLENGER}, paired
    for name, rec in paired.items():
        assert rec.accounted == offered, (name, len(rec.rows), rec.drops)
    assert alone[CHAMPION].accounted == offered
    assert paired[CHAMPION] == alone[CHAMPION], (paired[CHAMPION].reasons(), alone[CHAMPION].reasons())
    return paired


async def test_kill_switch_is_accounted_to_both_candidates(scorer_url: str, tmp_path: Path) -> None:
    """The kill switch on: 20 decisions, each one ``kill_switch`` for the champion and for the challenger."""
    async def drive(url: str, _app: web.Application, _n: int) -> int:
        return len(await harness.offer_batches(url, ["k"], n=20))

    async with fault_scorer("slow") as slow_url:
        dtype = harness.ticket_type(scorer_url, candidates=challenger(slow_url))
        paired = await paired_and_alone(tmp_path, dtype, drive, kill_switch=True)
    for rec in paired.values():
        assert rec.reasons() == {"kill_switch": 20}


async def test_budget_is_spent_per_candidate_and_accounted(scorer_url: str, tmp_path: Path) -> None:
    """3 calls an hour each: the champion scores 3 of 6, the slow challenger times out on 3; both drop 3.

    One worker per lane takes decisions in order, so it is the first three for both, with or without
    the challenger.
    """
    async def drive(url: str, _app: web.Application, n: int) -> int:
        offered = len(await harness.offer_batches(url, ["b"], n=6))
        await harness.wait_rows(url, 6 * n)
        return offered

    async with fault_scorer("slow") as slow_url:
        dtype = harness.ticket_type(scorer_url, budget={"calls_per_hour": 3},
                                    candidates=challenger(slow_url, timeout_s=0.3, deadline_s=10.0))
        paired = await paired_and_alone(tmp_path, dtype, drive, workers=1)
    assert paired[CHAMPION].rows == {**{f"b-{i}": ("scored", None) for i in range(3)},
                                     **{f"b-{i}": ("dropped", "budget_exhausted") for i in range(3, 6)}}
    assert paired[CHALLENGER].rows == {**{f"b-{i}": ("timeout", "scorer_timeout") for i in range(3)},
                                       **{f"b-{i}": ("dropped", "budget_exhausted") for i in range(3, 6)}}


async def test_circuit_open_is_the_failing_candidates_alone(scorer_url: str, tmp_path: Path) -> None:
    """The challenger's scorer answers 500: its breaker opens after 3, the next 7 are ``circuit_open``.

    The champion's breaker is its own: it scores all 10, as it does alone.
    """
    async def drive(url: str, _app: web.Application, n: int) -> int:
        offered = len(await harness.offer_batches(url, ["c"], n=10))
        await harness.wait_rows(url, 10 * n)
        return offered

    async with fault_scorer("error") as failing_url:
        dtype = harness.ticket_type(scorer_url, breaker={"failure_threshold": 3, "reset_after_s": 60},
                                    candidates=challenger(failing_url))
        paired = await paired_and_alone(tmp_path, dtype, drive, workers=1)
    assert paired[CHAMPION].reasons() == {None: 10}
    assert paired[CHALLENGER].reasons() == {"scorer_error": 3, "circuit_open": 7}, paired[CHALLENGER]


Q = 8


async def test_queue_full_is_the_slow_candidates_alone(scorer_url: str, tmp_path: Path) -> None:
    """Lanes of 8 items, one worker each; the challenger's scorer never answers in time.

    Two batches of 8, the second once the champion finished the first: the champion queues and scores
    all 16 (as alone); the challenger holds one call and 7 queued, takes one more, and refuses the other
    7 as ``queue_full``. What it holds at the stop ends as ``shutdown``.
    """
    async def drive(url: str, app: web.Application, _n: int) -> int:
        lane = app[MIRROR].lanes[CHAMPION]
        first = await harness.offer_batches(url, ["q0"], n=Q)
        await harness.until(lambda: lane.finished.count == Q)
        second = await harness.offer_batches(url, ["q1"], n=Q)
        await harness.until(lambda: lane.finished.count == 2 * Q)
        return len(first) + len(second)

    async with fault_scorer("slow") as slow_url:
        champion = {"timeout_s": 5.0, "deadline_s": 600.0}  # a measured lane never sheds these 8
        dtype = harness.ticket_type(scorer_url, scorer=champion,
                                    candidates=challenger(slow_url, timeout_s=60.0, deadline_s=120.0))
        paired = await paired_and_alone(tmp_path, dtype, drive, workers=1, queue_max_items=Q)
    assert paired[CHAMPION].reasons() == {None: 2 * Q}
    assert paired[CHALLENGER].reasons() == {"shutdown": Q + 1, "queue_full": Q - 1}, paired[CHALLENGER]


async def test_shedding_at_the_door_is_the_slow_candidates_alone(scorer_url: str, tmp_path: Path) -> None:
    """A challenger at 0.2 s a call sheds most of a burst of 200 at the door; the champion sheds none.

    Two workers at 0.2 s finish about 10 decisions a second; the challenger's 2 s deadline leaves 1 s
    to wait, so once its lane is measured it admits about 10 of the burst and sheds the rest (``shed``,
    gate ``lane_throughput``). The champion's lane is fast and its deadline long: it takes the whole
    burst and scores it, as alone.
    """
    async def drive(url: str, app: web.Application, n: int) -> int:
        lanes = app[MIRROR].lanes
        warm = await harness.offer_batches(url, ["warm"], n=15)
        await harness.until(lambda: all(lane.finished.count == 15 for lane in lanes.values()))
        if n > 1:  # the challenger's lane measured (the champion's may not be: 15 took under a second)
            await harness.until(lambda: lanes[CHALLENGER].finished.rate > 0)
        burst = await harness.offer_batches(url, ["burst"], n=200)
        shed = app[METRICS].shed.labels("tickets", CHALLENGER, "lane_throughput")
        await harness.until(lambda: all(lane.finished.count + (shed._value.get() if name == CHALLENGER else 0)
                                        == 215 for name, lane in lanes.items()), 60)
        assert n == 1 or 0 < shed._value.get() < 200
        return len(warm) + len(burst)

    async with fault_scorer("slow", delay_s=0.2) as slow_url:
        champion = {"timeout_s": 5.0, "deadline_s": 3600.0}
        dtype = harness.ticket_type(scorer_url, scorer=champion,
                                    candidates=challenger(slow_url, timeout_s=1.0, deadline_s=2.0))
        paired = await paired_and_alone(tmp_path, dtype, drive, workers=2)
    assert paired[CHAMPION].reasons() == {None: 215}
    slow = paired[CHALLENGER].reasons()
    assert slow["shed"] > 100, slow
    assert slow[None] + slow["shed"] == 215, slow  # what the challenger queued it scored in time


async def test_a_slow_challenger_never_sheds_the_champion_for_backlog_room(scorer_url: str,
                                                                           tmp_path: Path) -> None:
    """A row backlog of 100 and a challenger whose calls never end: it holds what it reserved.

    Four batches of 40, each once the champion has scored the one before. The challenger's accepted
    decisions keep their rows' room reserved until the stop; it may take only half the backlog
    (the rest is shed, gate ``row_backlog``), so the champion's 40 always fit and it scores all 160,
    as alone. Were the room shared first come, first served, the champion would shed a third of them.
    """
    async def drive(url: str, app: web.Application, _n: int) -> int:
        lane = app[MIRROR].lanes[CHAMPION]
        shed = app[METRICS].shed.labels("tickets", CHAMPION, "row_backlog")
        for i in range(1, 5):
            await harness.offer_batches(url, [f"r{i}"], n=40)
            await harness.until(lambda i=i: lane.finished.count + shed._value.get() == 40 * i)  # type: ignore[misc]
        return 160

    async with fault_scorer("slow") as slow_url:
        champion = {"timeout_s": 5.0, "deadline_s": 3600.0}
        dtype = harness.ticket_type(scorer_url, scorer=champion,
                                    candidates=challenger(slow_url, timeout_s=60.0, deadline_s=120.0))
        paired = await paired_and_alone(tmp_path, dtype, drive, workers=1, record_backlog=100)
    assert paired[CHAMPION].reasons() == {None: 160}
    slow = paired[CHALLENGER].reasons()
    assert slow["shed"] > 0, slow
    assert slow["shutdown"] <= 50, slow  # the half it may hold


async def test_handoff_full_is_accounted_to_both_candidates(scorer_url: str, tmp_path: Path) -> None:
    """60 claimed 20 KB exchanges while the sidecar's loop is blocked: the relay drops some at the hand-off.

    The relay drops an exchange before any candidate sees it, so each candidate counts the same
    ``handoff_full`` drops and has its rows for the same decisions: rows + drops = 60 for each.
    """
    statuses: list[int] = []
    async with fault_scorer("slow", delay_s=0.05) as slow_url:
        late = challenger(slow_url, timeout_s=5.0, deadline_s=10.0)
        dtype = harness.ticket_type(scorer_url, candidates=late)
        catalog = harness.write_catalog(tmp_path, {"tickets": dtype})
        with threaded_upstream() as upstream_url:
            settings = harness.settings_for(tmp_path, catalog, upstream_url=upstream_url, proxy_port=0,
                                            proxy_handoff_bytes=65536)
            async with harness.running_sidecar(settings) as (api, core):
                proxy = ProxyProcess(settings, core)
                port = int((await proxy.start()).rsplit(":", 1)[1])
                try:
                    client = threading.Thread(target=claimed_client, args=(port, statuses))
                    client.start()
                    client.join(60)  # blocks the loop: the sidecar reads nothing meanwhile
                    offered = [core[METRICS].offered.labels("tickets", c) for c in (CHAMPION, CHALLENGER)]
                    # the next counters frame
                    await harness.until(lambda: all(o._value.get() >= N for o in offered))
                    handed = offered[0]._value.get() - core[METRICS].dropped.labels(
                        "tickets", CHAMPION, "handoff_full")._value.get()
                    await harness.wait_rows(api, 2 * handed)
                finally:
                    await proxy.stop()
    assert statuses == [200] * N
    got = records(tmp_path / "records")
    for rec in got.values():
        assert rec.accounted == N, rec
    assert got[CHAMPION].drops == got[CHALLENGER].drops
    assert got[CHAMPION].drops["handoff_full"] > 0
    assert set(got[CHAMPION].rows) == set(got[CHALLENGER].rows)
    assert got[CHAMPION].reasons()[None] == len(got[CHAMPION].rows)


@pytest.mark.parametrize("mode", ["process", "in_process"])
async def test_relay_memory_is_accounted_to_both_candidates(mode: str, scorer_url: str,
                                                            tmp_path: Path) -> None:
    """No held-bytes budget: every claimed exchange is ``relay_memory`` for the champion and the challenger.

    As alone: the champion's record is 60 ``relay_memory`` drops either way.
    """
    running = running_proxy_process if mode == "process" else running_proxy

    async def drive(_url: str, core: web.Application, n: int) -> int:
        statuses: list[int] = []
        async with running(core[SETTINGS], core) as url:
            await asyncio.to_thread(claimed_client, int(url.rsplit(":", 1)[1]), statuses)
            offered = [core[METRICS].offered.labels("tickets", c) for c in (CHAMPION, CHALLENGER)[:n]]
            # the relay's next counters frame
            await harness.until(lambda: all(o._value.get() >= N for o in offered))
        assert statuses == [200] * N
        return N

    async with fault_scorer("slow") as slow_url:
        dtype = harness.ticket_type(scorer_url, candidates=challenger(slow_url))
        with threaded_upstream() as upstream_url:
            settings = {"upstream_url": upstream_url, "proxy_port": 0, "proxy_held_bytes": 0}
            paired = await paired_and_alone(tmp_path, dtype, drive, **settings)
    for rec in paired.values():
        assert rec.reasons() == {"relay_memory": N}
