"""The door's gates beyond the row backlog: a lane's measured throughput, and the API's body budget.

A slow scorer sheds at the door (``shed``, gate ``lane_throughput``) instead of queueing decisions that
would time out waiting; bodies being read and handled at once never pass ``SHADOW_API_BODY_BUDGET_BYTES``.
Real sidecar, real fault scorer on loopback, real record store.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import TYPE_CHECKING

import aiohttp

from shadow.keys import BODY_BUDGET, METRICS, MIRROR
from tests.shadow import harness

if TYPE_CHECKING:
    from pathlib import Path

    from tests.shadow.fault_scorer import Faults


async def test_a_slow_scorer_sheds_at_the_door_instead_of_queueing_past_the_deadline(
        faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """2 workers on a 0.2 s scorer finish about 10 decisions a second; a 2 s deadline leaves 1 s to wait.

    Once the lane has measured that, a burst of 200 is admitted only up to about 10 queued; the rest is
    shed (``shadow_shed_total{gate="lane_throughput"}``, counted in ``drops``) and every burst decision
    that was queued is scored before its deadline. Without the gate (hard bounds only: 1000 items) the
    burst queues whole and most of it ends as ``timeout`` / ``deadline`` rows.
    """
    faults.mode, faults.delay_s = "slow", 0.2
    scorer = {"timeout_s": 1.0, "deadline_s": 2.0, "max_attempts": 1}
    catalog = harness.write_catalog(tmp_path, {"tickets": harness.ticket_type(scorer_url, scorer=scorer)})
    settings = harness.settings_for(tmp_path, catalog, workers=2)
    async with harness.running_sidecar(settings) as (url, app):
        lane = app[MIRROR].lanes["default"]
        await harness.offer_batches(url, ["warm"], n=15)
        await harness.until(lambda: lane.finished.rate > 0 and not lane.depth)  # measured, warm-up worked off
        answers = await harness.offer_batches(url, ["burst"], n=200)
        queued = sum(r is None for r in answers.values())
        await harness.until(lambda: lane.finished.count == 15 + queued)
        shed = app[METRICS].shed.labels("tickets", "default", "lane_throughput")._value.get()
    rows, drops = harness.accounted(tmp_path / "records")
    assert sum(rows.values()) + drops.total() == 215, (len(rows), drops)
    proposals = harness.read_rows(tmp_path / "records", "proposals")
    burst = [r for r in proposals if r["decision_id"].startswith("burst")]
    outcomes = Counter((r["status"], r["reason"]) for r in burst if r["reason"] != "shed")
    assert 0 < queued <= 60, (queued, lane.finished.rate)
    assert outcomes == {("scored", None): queued}, outcomes
    assert shed == 200 - queued


def padded(body: dict[str, object], size: int) -> bytes:
    """``body`` as JSON padded with spaces to exactly ``size`` bytes."""
    raw = json.dumps(body).encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


async def test_bodies_handled_at_once_stay_within_the_api_body_budget(
        scorer_url: str, tmp_path: Path) -> None:
    """A 40 KB body being read holds 40 KB of a 64 KiB budget: a 30 KB request is refused, a 1 KB one is not.

    The refusal comes before the body is read: 503 ``overloaded`` naming ``body``, ``Retry-After: 1``,
    ``shadow_api_refused_total{reason="body_budget"}``. Once the first body arrives it is answered 202
    and its bytes are free again; the budget never held more than its limit. A build without the
    budget answers the 30 KB request 202.
    """
    catalog = harness.write_catalog(tmp_path, {"tickets": harness.ticket_type(scorer_url)})
    settings = harness.settings_for(tmp_path, catalog, max_body_bytes=64 * 1024,
                                    api_body_budget_bytes=64 * 1024)
    async with harness.running_sidecar(settings) as (url, app):
        budget, port = app[BODY_BUDGET], int(url.rsplit(":", 1)[1])
        slow = padded(harness.batch("slow", 10), 40_000)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 40000\r\nConnection: close\r\n\r\n" + slow[:1000])
        await writer.drain()
        await harness.until(lambda: budget.held == 40_000)
        async with aiohttp.ClientSession() as session:
            refused = await session.post(f"{url}/v1/decisions", data=padded(harness.batch("big", 10), 30_000),
                                         headers={"Content-Type": "application/json"})
            error = await refused.json()
            small = await session.post(f"{url}/v1/decisions", json=harness.batch("small", 1))
            assert small.status == 202, await small.text()
        writer.write(slow[1000:])
        await writer.drain()
        answer = await reader.read()
        writer.close()
        assert answer.startswith(b"HTTP/1.1 202"), answer[:200]
        counted = app[METRICS].api_refused.labels("body_budget")._value.get()
    assert refused.status == 503, error
    assert error["error"]["code"] == "overloaded"
    assert error["error"]["field"] == "body"
    assert refused.headers["Retry-After"] == "1"
    assert counted == 1
    assert budget.held == 0
    assert budget.peak <= settings.api_body_budget_bytes
