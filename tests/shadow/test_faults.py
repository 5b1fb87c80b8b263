"""The mirror API under every scorer condition: fast answers, and every decision accounted for."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from typing import TYPE_CHECKING

import aiohttp
import pytest

from tests.shadow.conftest import (
    free_port,
    read_rows,
    settings_for,
    sidecar_process,
    ticket_type,
    write_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.shadow.fault_scorer import Faults

ROUNDS = 4
PER_ROUND = 150
N_DECISIONS = ROUNDS * PER_ROUND
P99_BUDGET_MS = 5.0
WARM = 5
PACE_S = 0.003  # ~250 decisions/s offered, as production would, rather than back to back

# scenario -> the (status, reason) pairs its rows may carry, and the one that must appear
EXPECTED: dict[str, tuple[set[tuple[str, str | None]], tuple[str, str | None]]] = {
    "healthy": ({("scored", None)}, ("scored", None)),
    "slow": ({("timeout", "scorer_timeout"), ("dropped", "circuit_open"), ("dropped", "queue_full"),
              ("dropped", "shutdown"), ("timeout", "deadline")}, ("timeout", "scorer_timeout")),
    "error": ({("error", "scorer_error"), ("dropped", "circuit_open")}, ("error", "scorer_error")),
    "overloaded": ({("error", "scorer_overloaded"), ("dropped", "circuit_open")},
                   ("error", "scorer_overloaded")),
    "reset": ({("error", "scorer_unavailable"), ("dropped", "circuit_open")},
              ("error", "scorer_unavailable")),
    "dead": ({("error", "scorer_unavailable"), ("dropped", "circuit_open")}, ("error", "scorer_unavailable")),
}


def p99(samples: list[float]) -> float:
    """The 99th percentile (inclusive method)."""
    return statistics.quantiles(samples, n=100, method="inclusive")[98]


async def offer_many(url: str, rounds: int, per_round: int, prefix: str) -> list[list[float]]:
    """POST decisions one after another; return each round's answer latencies in ms."""
    latencies: list[list[float]] = []
    async with aiohttp.ClientSession() as session:
        for i in range(WARM):  # warm the connection and the code paths
            async with session.post(f"{url}/v1/decisions", json={
                    "decision_type": "tickets", "decision_id": f"warm-{prefix}-{i}", "state": "warm"}) as r:
                await r.read()
        for i in range(rounds * per_round):
            if i % per_round == 0:
                latencies.append([])
            body = {"decision_type": "tickets", "decision_id": f"{prefix}-{i}",
                    "state": {"subject": f"ticket {i}", "email": "a@example.com", "customer_id": i}}
            t0 = time.perf_counter()
            async with session.post(f"{url}/v1/decisions", json=body) as resp:
                await resp.read()
            latencies[-1].append((time.perf_counter() - t0) * 1000)
            assert resp.status == 202
            await asyncio.sleep(PACE_S)
    return latencies


@pytest.mark.parametrize("scenario", list(EXPECTED))
async def test_mirror_api_fast_and_every_decision_accounted(
        scenario: str, faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """Whatever the scorer does, the mirror API answers fast and every decision is accounted for.

    Healthy, 10 s slow, 500, 503, resetting or dead: POST /v1/decisions answers 202 within 5 ms p99;
    each offered decision ends as exactly one proposals row whose status/reason matches the scorer's
    condition; the breaker keeps a failing scorer from being flooded. Latency is the client's view,
    600 requests paced 3 ms apart to a sidecar running as its own process (`semif-shadow sidecar run`).
    """
    faults.mode = {"dead": "healthy"}.get(scenario, scenario)
    faults.retry_after = "0"
    endpoint = f"http://127.0.0.1:{free_port()}" if scenario == "dead" else scorer_url
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(endpoint)})
    settings = settings_for(tmp_path, catalog, queue_max_items=50, port=free_port())
    async with sidecar_process(settings) as url:
        rounds = await offer_many(url, ROUNDS, PER_ROUND, scenario)
        if scenario == "healthy":
            await asyncio.sleep(0.2)  # let the workers finish before shutdown
        faults.release.set()
    latencies = [ms for r in rounds for ms in r]
    p99s = [round(p99(r), 2) for r in rounds]
    assert p99(latencies) < P99_BUDGET_MS, f"p99 {p99(latencies):.2f} ms (per round {p99s})"

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
