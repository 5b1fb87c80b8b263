"""Sidecar reasons that had no test: a throttled or rejecting scorer, a deadline, a full spool."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp
import pytest

from shadow.records.settings import RecordSettings
from tests.shadow.harness import (
    offer_and_collect,
    rows_by_id,
    running_sidecar,
    settings_for,
    ticket_type,
    write_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.shadow.fault_scorer import Faults


@pytest.mark.parametrize(("mode", "reason", "attempts"), [
    ("throttled", "scorer_throttled", 2),  # 429: retried up to max_attempts
    ("rejected", "scorer_rejected", 1),  # 400: retrying cannot help
])
async def test_scorer_answers_map_to_their_reason(mode: str, reason: str, attempts: int, faults: Faults,
                                                  scorer_url: str, tmp_path: Path) -> None:
    """A 429 is ``scorer_throttled`` after every attempt; a 400 is ``scorer_rejected`` after one."""
    faults.mode = mode
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        await offer_and_collect(url, ["t-1"], wait_s=0.3)
    row = rows_by_id(tmp_path)["t-1"]
    assert (row["status"], row["reason"], row["attempts"]) == ("error", reason, attempts)
    assert faults.calls == attempts


async def test_a_decision_queued_past_its_deadline_is_a_deadline_row(faults: Faults, scorer_url: str,
                                                                     tmp_path: Path) -> None:
    """One worker, a scorer that never answers: the second of two decisions offered together waits.

    Both are received at one instant. The first holds the only worker until its call times out, which
    is no earlier than its deadline (timeout = deadline = 0.3 s), so the second is picked up at or after
    its own deadline: ``timeout`` / ``deadline`` with no attempt, whatever the machine's speed.
    """
    faults.mode = "slow"
    scorer = {"timeout_s": 0.3, "deadline_s": 0.3, "max_attempts": 1}
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url, scorer=scorer)})
    state = {"subject": "My invoice is wrong", "customer_id": 9}
    body = {"decisions": [{"decision_type": "tickets", "decision_id": f"d-{i}", "state": state}
                          for i in (1, 2)]}
    async with running_sidecar(settings_for(tmp_path, catalog, workers=1)) as (url, _app), \
            aiohttp.ClientSession() as session:
        async with session.post(f"{url}/v1/decisions", json=body) as resp:
            assert resp.status == 202
        await asyncio.sleep(1.0)
    rows = rows_by_id(tmp_path)
    first, second = rows["d-1"], rows["d-2"]
    assert first["received_at"] == second["received_at"]  # one request: one instant, one deadline
    assert (first["status"], first["attempts"]) == ("timeout", 1)
    assert (second["status"], second["reason"], second["attempts"]) == ("timeout", "deadline", 0)


async def test_a_full_spool_drops_decisions_as_disk_full(tmp_path: Path) -> None:
    """A spool over its bound (``max_local_bytes`` 0): the decision is answered dropped, ``disk_full``."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type("http://127.0.0.1:9")})
    records = RecordSettings(root=str(tmp_path / "records"), spool_dir=tmp_path / "spool", writer_id="test",
                             max_local_bytes=0)
    body = {"decision_type": "tickets", "decision_id": "f-1", "state": {"subject": "charged twice"}}
    async with running_sidecar(settings_for(tmp_path, catalog, records=records)) as (url, _app), \
            aiohttp.ClientSession() as session:
        async with session.post(f"{url}/v1/decisions", json=body) as resp:
            assert resp.status == 202
            answer = await resp.json()
        async with session.get(f"{url}/metrics") as resp:
            metrics = await resp.text()
    assert answer["decisions"] == [{"decision_id": "f-1", "queued": False, "reason": "disk_full"}]
    counted = 'shadow_dropped_total{candidate="default",decision_type="tickets",reason="disk_full"} 1.0'
    assert counted in metrics
