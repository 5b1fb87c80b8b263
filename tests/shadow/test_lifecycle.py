"""What stops mirroring, and the row each stop leaves.

Kill switch, experiment end, budget, rate cap, full queue, shutdown; and the durable RecordStore as the
default sink.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import aiohttp

from shadow.keys import METRICS, MIRROR
from tests.shadow.harness import (
    read_rows,
    running_sidecar,
    settings_for,
    ticket_type,
    until,
    wait_rows,
    write_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path

    from tests.shadow.fault_scorer import Faults


async def offer(url: str, ids: list[str]) -> list[dict[str, Any]]:
    """Offer decisions one by one; return the per-decision results the API answered."""
    out = []
    async with aiohttp.ClientSession() as session:
        for decision_id in ids:
            body = {"decision_type": "tickets", "decision_id": decision_id, "state": {"subject": decision_id}}
            async with session.post(f"{url}/v1/decisions", json=body) as resp:
                assert resp.status == 202
                out.extend((await resp.json())["decisions"])
    return out


def reasons(tmp_path: Path) -> Counter[tuple[str, str | None]]:
    """(status, reason) counts of the proposals written."""
    return Counter((r["status"], r["reason"]) for r in read_rows(tmp_path / "records", "proposals"))


async def test_kill_switch_file_stops_mirroring(faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """The kill switch file stops mirroring while it exists.

    Decisions are dropped with ``kill_switch`` and the scorer sees no call; removing it resumes scoring.
    """
    switch = tmp_path / "KILL"
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog, kill_switch_file=switch)) as (url, app):
        mirror = app[MIRROR]
        await offer(url, ["before"])
        await wait_rows(url, 1)  # scored: its call is counted
        calls_before = faults.calls
        switch.touch()
        await until(lambda: mirror.kill_switch)  # the next poll saw the file
        answered = await offer(url, [f"k-{i}" for i in range(10)])
        assert {a["reason"] for a in answered} == {"kill_switch"}
        assert faults.calls == calls_before
        switch.unlink()
        await until(lambda: not mirror.kill_switch)
        await offer(url, ["after"])
        await wait_rows(url, 12)
    assert reasons(tmp_path) == Counter({("dropped", "kill_switch"): 10, ("scored", None): 2})


async def test_experiment_end_date_stops_mirroring(faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """After ``experiment_ends_at`` every decision is dropped as ``experiment_ended``, unscored."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url,
                                                              experiment_ends_at="2020-01-01T00:00:00Z")})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        await offer(url, [f"e-{i}" for i in range(5)])
    assert faults.calls == 0
    assert reasons(tmp_path) == Counter({("dropped", "experiment_ended"): 5})


async def test_budget_and_rate_cap(scorer_url: str, tmp_path: Path) -> None:
    """A 3-calls-per-hour budget scores 3 decisions and drops the rest as ``budget_exhausted``.

    A rate cap of 2/s drops a burst beyond 2 as ``rate_limited``.
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url, budget={"calls_per_hour": 3})})
    async with running_sidecar(settings_for(tmp_path, catalog, workers=1)) as (url, _app):
        await offer(url, [f"b-{i}" for i in range(6)])
        await wait_rows(url, 6)
    assert reasons(tmp_path) == Counter({("scored", None): 3, ("dropped", "budget_exhausted"): 3})

    capped = tmp_path / "capped"
    capped.mkdir()
    catalog = write_catalog(capped, {"tickets": ticket_type(scorer_url, sampling={"max_per_second": 2})})
    async with running_sidecar(settings_for(capped, catalog)) as (url, _app):
        answered = await offer(url, [f"r-{i}" for i in range(6)])
        await wait_rows(url, 6)
    assert Counter(a["reason"] for a in answered) == Counter({None: 2, "rate_limited": 4})
    assert reasons(capped)[("dropped", "rate_limited")] == 4


async def test_full_queue_and_shutdown_are_accounted(faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """With a 10 s scorer and one worker, a 3-item queue fills: the rest are ``queue_full``.

    The first decision's call times out after 2 s, longer than offering the ten takes even on a loaded
    machine (so no queued decision is taken meanwhile); once its row is written the sidecar stops, and
    the one then in flight and the two still queued become ``shutdown`` rows.
    """
    faults.mode = "slow"
    scorer = {"timeout_s": 2.0, "deadline_s": 10.0, "max_attempts": 1}
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url, scorer=scorer)})
    settings = settings_for(tmp_path, catalog, workers=1, queue_max_items=3)
    async with running_sidecar(settings) as (url, app):
        answered = await offer(url, [f"q-{i}" for i in range(10)])
        timeouts = app[METRICS].rows.labels("timeout")
        await until(lambda: timeouts._value.get() == 1)
    faults.release.set()
    assert Counter(a["reason"] for a in answered) == Counter({None: 4, "queue_full": 6})
    seen = reasons(tmp_path)
    assert seen[("dropped", "queue_full")] == 6
    assert seen[("dropped", "shutdown")] == 3
    assert seen[("timeout", "scorer_timeout")] == 1


async def test_queue_bytes_limit(faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """The queue is bounded by bytes too: a big decision that would pass the byte bound is ``bytes_limit``."""
    faults.mode = "slow"
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    settings = settings_for(tmp_path, catalog, workers=1, queue_max_bytes=4096)
    async with running_sidecar(settings) as (url, _app), aiohttp.ClientSession() as session:
        results = []
        for i in range(3):
            body = {"decision_type": "tickets", "decision_id": f"big-{i}", "state": {"text": "x" * 3000}}
            async with session.post(f"{url}/v1/decisions", json=body) as resp:
                results.extend((await resp.json())["decisions"])
    faults.release.set()
    assert [r["reason"] for r in results] == [None, None, "bytes_limit"]


async def test_shutdown_never_cuts_a_row_write(scorer_url: str, tmp_path: Path) -> None:
    """Stopping the sidecar while the writer is busy loses no row.

    100 dropped decisions are handed to the writer at once and the app stops right after the answer;
    all 100 must be in the records.
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    settings = settings_for(tmp_path, catalog, kill_switch=True)
    async with running_sidecar(settings) as (url, _app), aiohttp.ClientSession() as session:
        decisions = [{"decision_type": "tickets", "decision_id": f"w-{i}", "state": {"text": "x"}}
                     for i in range(100)]
        async with session.post(f"{url}/v1/decisions", json={"decisions": decisions}) as resp:
            assert (await resp.json())["dropped"] == {"kill_switch": 100}
    assert reasons(tmp_path) == Counter({("dropped", "kill_switch"): 100})
