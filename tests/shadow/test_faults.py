"""The mirror API under every scorer condition: every answer comes, and every decision is accounted for.

Timings are not asserted here (a loaded CI machine is slow without a fault): `bench/sidecar.py` measures them.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import TYPE_CHECKING

import aiohttp
import pytest

from tests.harness import free_port
from tests.shadow.harness import (
    read_rows,
    settings_for,
    sidecar_process,
    ticket_type,
    wait_rows,
    write_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.shadow.fault_scorer import Faults

N_DECISIONS = 600
ANSWER_TIMEOUT_S = 10.0  # a sanity bound only a real fault breaks: a hung or blocked request path
WARM = 5
PACE_S = 0.003  # ~250 decisions/s offered, as production would, rather than back to back

# scenario -> the (status, reason) pairs its rows may carry, and the one that must appear
EXPECTED: dict[str, tuple[set[tuple[str, str | None]], tuple[str, str | None]]] = {
    "healthy": ({("scored", None)}, ("scored", None)),
    "slow": ({("timeout", "scorer_timeout"), ("dropped", "circuit_open"), ("dropped", "queue_full"),
              ("dropped", "shutdown"), ("timeout", "deadline"), ("dropped", "shed")},  # shed: the lane's gate
             ("timeout", "scorer_timeout")),
    "error": ({("error", "scorer_error"), ("dropped", "circuit_open")}, ("error", "scorer_error")),
    "overloaded": ({("error", "scorer_overloaded"), ("dropped", "circuit_open")},
                   ("error", "scorer_overloaded")),
    "reset": ({("error", "scorer_unavailable"), ("dropped", "circuit_open")},
              ("error", "scorer_unavailable")),
    "dead": ({("error", "scorer_unavailable"), ("dropped", "circuit_open")}, ("error", "scorer_unavailable")),
}


async def offer_many(url: str, n: int, prefix: str) -> list[float]:
    """POST decisions one after another, each within ``ANSWER_TIMEOUT_S``; return the latencies in ms."""
    latencies: list[float] = []
    timeout = aiohttp.ClientTimeout(total=ANSWER_TIMEOUT_S)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for i in range(WARM):  # warm the connection and the code paths
            async with session.post(f"{url}/v1/decisions", json={
                    "decision_type": "tickets", "decision_id": f"warm-{prefix}-{i}",
                    "state": {"text": "warm"}}) as r:
                await r.read()
        for i in range(n):
            body = {"decision_type": "tickets", "decision_id": f"{prefix}-{i}",
                    "state": {"subject": f"ticket {i}", "email": "a@example.com", "customer_id": i}}
            t0 = time.perf_counter()
            async with session.post(f"{url}/v1/decisions", json=body) as resp:
                await resp.read()
            latencies.append((time.perf_counter() - t0) * 1000)
            assert resp.status == 202
            await asyncio.sleep(PACE_S)
    return latencies


@pytest.mark.parametrize("scenario", list(EXPECTED))
async def test_mirror_api_answers_and_every_decision_accounted(
        scenario: str, faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """Whatever the scorer does, the mirror API answers and every decision is accounted for.

    Healthy, 10 s slow, 500, 503, resetting or dead: each of 600 POST /v1/decisions (paced 3 ms apart,
    to a sidecar running as its own process) answers 202 within the client's timeout, however slow the
    scorer (a 10 s scorer must not hold the answer); each offered decision ends as exactly one proposals
    row whose status/reason matches the scorer's condition; the breaker keeps a failing scorer from
    being flooded. No latency percentile is asserted: `bench/sidecar.py` measures those.
    """
    faults.mode = {"dead": "healthy"}.get(scenario, scenario)
    faults.retry_after = "0"
    endpoint = f"http://127.0.0.1:{free_port()}" if scenario == "dead" else scorer_url
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(endpoint)})
    settings = settings_for(tmp_path, catalog, queue_max_items=50, port=free_port())
    async with sidecar_process(settings) as url:
        latencies = await offer_many(url, N_DECISIONS, scenario)
        if scenario == "healthy":  # every row written before the stop (else queued ones end as shutdown)
            await wait_rows(url, N_DECISIONS + WARM)
        faults.release.set()
    assert max(latencies) < ANSWER_TIMEOUT_S * 1000

    rows = read_rows(tmp_path / "records", "proposals")
    ids = Counter(r["decision_id"] for r in rows)
    offered = {f"{scenario}-{i}" for i in range(N_DECISIONS)} | {f"warm-{scenario}-{i}" for i in range(WARM)}
    assert set(ids) == offered
    assert max(ids.values()) == 1
    allowed, required = EXPECTED[scenario]
    seen = Counter((r["status"], r["reason"]) for r in rows)
    assert set(seen) <= allowed, seen
    assert seen[required] > 0, seen
    if scenario != "healthy":
        assert faults.calls < 40, f"the breaker should stop the flood, scorer saw {faults.calls} calls"
    if scenario == "overloaded":
        assert all(r["attempts"] == 2 for r in rows if r["reason"] == "scorer_overloaded")
    if scenario == "error":
        assert all(r["attempts"] == 1 for r in rows if r["reason"] == "scorer_error")
