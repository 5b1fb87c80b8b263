"""Candidates: every sampled decision goes to the champion and each challenger, each in its own lane."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import aiohttp

from tests.shadow.fault_scorer import Faults, fault_app
from tests.shadow.harness import (
    read_rows,
    running_sidecar,
    serve,
    settings_for,
    ticket_type,
    wait_rows,
    write_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path

N = 30
SLOW = {"timeout_s": 1.0, "deadline_s": 1.5, "max_attempts": 1}


def _decisions(prefix: str) -> dict[str, Any]:
    return {"decisions": [{"decision_type": "tickets", "decision_id": f"{prefix}-{i}",
                           "state": {"subject": f"ticket {i}"}} for i in range(N)]}


def _metric(text: str, series: str) -> float:
    """The value of one exact series in a Prometheus text exposition (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def test_a_slow_challenger_never_delays_the_champion(scorer_url: str, tmp_path: Path) -> None:
    """A healthy champion beside a challenger whose scorer answers in 2 s, on the same 30 decisions.

    The champion's rows are all scored in one attempt, and no champion row waited behind the
    challenger: each champion total_ms is under the challenger's 1 s call timeout, while the
    challenger's own queue waited behind its slow calls (its largest queue_ms is over that timeout).
    The challenger's timeouts are its own rows and its own ``candidate``-labelled drop counts.
    """
    slow = Faults(mode="slow", delay_s=2.0)
    async with serve(fault_app(slow)) as slow_url:
        dtype = ticket_type(scorer_url, candidates={"slow": {"backend": "semif_http", "endpoint": slow_url,
                                                             "normalization": "pmi", **SLOW}})
        catalog = write_catalog(tmp_path, {"tickets": dtype})
        async with running_sidecar(settings_for(tmp_path, catalog, workers=2)) as (url, _app), \
                aiohttp.ClientSession() as session:
            async with session.post(f"{url}/v1/decisions", json=_decisions("c")) as resp:
                assert resp.status == 202
                assert (await resp.json())["queued"] == N
            await wait_rows(url, 2 * N)
            async with session.get(f"{url}/metrics") as resp:
                text = await resp.text()
        slow.release.set()
    rows = read_rows(tmp_path / "records", "proposals")
    assert Counter((r["decision_id"], r["candidate"]) for r in rows) == Counter(
        {(f"c-{i}", c): 1 for i in range(N) for c in ("default", "slow")})
    champion = [r for r in rows if r["candidate"] == "default"]
    challenger = [r for r in rows if r["candidate"] == "slow"]
    assert {(r["status"], r["attempts"], r["normalization"]) for r in champion} == {("scored", 1, "none")}
    assert max(r["total_ms"] for r in champion) < SLOW["timeout_s"] * 1000
    assert {r["status"] for r in challenger} == {"timeout"}
    assert {r["normalization"] for r in challenger} == {"pmi"}
    assert max(r["queue_ms"] for r in challenger) > SLOW["timeout_s"] * 1000
    assert all(r["sampled"] for r in rows)
    reasons = Counter(r["reason"] for r in challenger)
    assert reasons["scorer_timeout"] > 0
    for reason, count in reasons.items():
        series = f'shadow_dropped_total{{candidate="slow",decision_type="tickets",reason="{reason}"}}'
        assert _metric(text, series) == count
    assert 'shadow_dropped_total{candidate="default"' not in text
    assert _metric(text, 'shadow_scored_total{candidate="default",decision_type="tickets"}') == N
    assert _metric(text, 'shadow_scored_total{candidate="slow",decision_type="tickets"}') == 0
    assert _metric(text, 'shadow_breaker_state{candidate="default",endpoint="' + scorer_url + '"}') == 0


async def test_candidates_see_the_same_sample_and_keep_their_identities(scorer_url: str,
                                                                         tmp_path: Path) -> None:
    """Sampling picks one decision set for every candidate, so their rows pair up decision by decision.

    Two candidates on one scorer differ only in normalization: each row carries its candidate's, and
    their model identities differ. The API's answer reports the champion's admission.
    """
    dtype = ticket_type(scorer_url, sampling={"rate": 0.5}, champion="per_char",
                        scorer={"normalization": "per_char"},
                        candidates={"pmi": {"backend": "semif_http", "endpoint": scorer_url,
                                            "normalization": "pmi"}})
    catalog = write_catalog(tmp_path, {"tickets": dtype})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app), \
            aiohttp.ClientSession() as session:
        async with session.post(f"{url}/v1/decisions", json=_decisions("p")) as resp:
            answer = await resp.json()
        await wait_rows(url, 2 * N)
    rows = read_rows(tmp_path / "records", "proposals")
    by = {c: {r["decision_id"]: r for r in rows if r["candidate"] == c} for c in ("per_char", "pmi")}
    assert len(rows) == 2 * N
    assert set(by["per_char"]) == set(by["pmi"]) == {f"p-{i}" for i in range(N)}
    sampled = {i for i, r in by["per_char"].items() if r["sampled"]}
    assert 0 < len(sampled) < N
    assert sampled == {i for i, r in by["pmi"].items() if r["sampled"]}
    assert {d["decision_id"] for d in answer["decisions"] if d["queued"]} == sampled
    for candidate, rows_of in by.items():
        assert {r["status"] for i, r in rows_of.items() if i in sampled} == {"scored"}
        assert {r["normalization"] for r in rows_of.values()} == {candidate}
    identities = {c: {r["model_identity_sha256"] for r in rows_of.values() if r["status"] == "scored"}
                  for c, rows_of in by.items()}
    assert len(identities["per_char"]) == len(identities["pmi"]) == 1
    assert identities["per_char"] != identities["pmi"]


async def test_each_candidate_spends_its_own_budget_and_shares_the_rate_cap(scorer_url: str,
                                                                             tmp_path: Path) -> None:
    """The type's budget is counted per candidate; its rate cap is one admission for all of them.

    With 3 calls an hour and a challenger, each candidate scores 3 of 6 decisions (a shared counter
    would score 3 in all). With a cap of 2 per second, the same 2 decisions are scored by both.
    """
    challenger = {"backend": "semif_http", "endpoint": scorer_url, "normalization": "pmi"}
    dtype = ticket_type(scorer_url, budget={"calls_per_hour": 3}, candidates={"b": challenger})
    catalog = write_catalog(tmp_path, {"tickets": dtype})
    six = {"decisions": [{"decision_type": "tickets", "decision_id": f"d-{i}", "state": {"text": "x"}}
                         for i in range(6)]}
    async with running_sidecar(settings_for(tmp_path, catalog, workers=1)) as (url, _app), \
            aiohttp.ClientSession() as session:
        async with session.post(f"{url}/v1/decisions", json=six) as resp:
            assert (await resp.json())["queued"] == 6
        await wait_rows(url, 12)
    rows = read_rows(tmp_path / "records", "proposals")
    got = Counter((r["candidate"], r["status"], r["reason"]) for r in rows)
    assert got == Counter({(c, s, r): 3 for c in ("default", "b")
                           for s, r in (("scored", None), ("dropped", "budget_exhausted"))})

    capped = tmp_path / "capped"
    capped.mkdir()
    dtype = ticket_type(scorer_url, sampling={"max_per_second": 2}, candidates={"b": challenger})
    catalog = write_catalog(capped, {"tickets": dtype})
    async with running_sidecar(settings_for(capped, catalog)) as (url, _app), \
            aiohttp.ClientSession() as session:
        async with session.post(f"{url}/v1/decisions", json=six) as resp:
            assert (await resp.json())["queued"] == 2
        await wait_rows(url, 12)
    rows = read_rows(capped / "records", "proposals")
    scored = {c: {r["decision_id"] for r in rows if r["candidate"] == c and r["status"] == "scored"}
              for c in ("default", "b")}
    assert len(scored["default"]) == 2
    assert scored["default"] == scored["b"]
    assert Counter(r["reason"] for r in rows if r["status"] != "scored") == Counter({"rate_limited": 8})
