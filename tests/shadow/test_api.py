"""The mirror API: 202 for decisions, durable outcomes, JSON errors naming the field, auth, metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from semif_shadow.logs import JsonFormatter
from tests.shadow.harness import post, read_rows, running_sidecar, settings_for, ticket_type, write_catalog

if TYPE_CHECKING:
    from pathlib import Path


async def test_decisions_batch_and_outcomes_are_recorded(scorer_url: str, tmp_path: Path) -> None:
    """A batch answers 202 per decision.

    An outcome answers 200 once stored; both appear in the records with the state redacted (email removed,
    customer id HMAC-hashed). A type without state rules keeps a string state as sent.
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url),
                                       "notes": ticket_type(scorer_url, state={"store": True}, proxy=None)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        state = {"subject": "refund", "email": "a@b.c", "customer_id": 42}
        status, body = await post(f"{url}/v1/decisions", {"decisions": [
            {"decision_type": "tickets", "decision_id": "b-1", "state": state},
            {"decision_type": "notes", "decision_id": "b-2", "state": "free text"}]})
        assert status == 202
        assert body["queued"] == 2
        assert [d["decision_id"] for d in body["decisions"]] == ["b-1", "b-2"]
        status, body = await post(f"{url}/v1/outcomes", {"outcomes": [
            {"decision_type": "tickets", "decision_id": "b-1", "outcome": "review"}]})
        assert (status, body) == (200, {"recorded": 1})
    outcomes = read_rows(tmp_path / "records", "outcomes")  # published when the store closes
    assert [(o["decision_id"], o["outcome"], o["source"]) for o in outcomes] == [("b-1", "review", "api")]
    rows = {r["decision_id"]: r for r in read_rows(tmp_path / "records", "proposals")}
    assert rows["b-1"]["status"] == "scored"
    assert "a@b.c" not in rows["b-1"]["state"]
    assert '"customer_id":"hmac-sha256:' in rows["b-1"]["state"]
    assert rows["b-2"]["state"] == "free text"
    # The fault scorer's fixed logits: -0.1 per character of the option text, -0.01 per position.
    logits = [-0.7, -1.71, -1.82]  # "Billing", "Technical support", "Needs human review"
    weights = [math.exp(x) for x in logits]
    assert rows["b-1"]["proposal"] == "billing"
    assert rows["b-1"]["logits"] == pytest.approx(logits, abs=1e-12)
    assert rows["b-1"]["probabilities"] == pytest.approx([w / sum(weights) for w in weights], abs=1e-12)
    assert (rows["b-1"]["model_name"], rows["b-1"]["model_sha256"], rows["b-1"]["runtime_version"]) == (
        "fault-injecting-scorer", "f" * 64, "fault/1")
    assert rows["b-1"]["config_sha256"] == rows["b-2"]["config_sha256"]


@pytest.mark.parametrize(("payload", "field", "status"), [
    ({"decision_type": "tickets", "state": {"text": "x"}}, "decision_id", 400),
    ({"decisions": [{"decision_type": "tickets", "decision_id": "a", "state": {"text": "x"}},
                    {"decision_type": "nope", "decision_id": "b", "state": {"text": "x"}}]},
     "decisions[1].decision_type", 400),
    ({"decisions": [{"decision_type": "tickets", "decision_id": "a", "state": 5}]},
     "decisions[0].state", 400),
    ({"decision_type": "tickets", "decision_id": "a", "state": {"text": "x"}, "extra": 1}, "extra", 400),
    ({"decision_type": "tickets", "decision_id": "x" * 129, "state": {"text": "x"}}, "decision_id", 400),
    ({"decisions": []}, "decisions", 400),
    ({"decision_type": "tickets", "decision_id": "a", "state": "email a@b.c"}, "state", 400),
    ({"decisions": [{"decision_type": "tickets", "decision_id": "a", "state": {"text": "x"}},
                    {"decision_type": "tickets", "decision_id": "b", "state": "email a@b.c"}]},
     "decisions[1].state", 400),
])
async def test_bad_decisions_get_400_naming_the_field(payload: Any, field: str, status: int,
                                                      scorer_url: str, tmp_path: Path) -> None:
    """Schema violations answer a JSON error whose ``field`` points at the culprit; nothing is queued.

    So does a string state for a type with state rules: ``remove`` and ``hash`` need an object's fields,
    and a string would be stored raw (the email in it reaching the records).
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        got_status, body = await post(f"{url}/v1/decisions", payload)
    assert got_status == status
    assert body["error"]["code"] == "invalid_request"
    assert body["error"]["field"] == field
    assert read_rows(tmp_path / "records", "proposals") == []


async def test_errors_for_bad_json_big_bodies_and_unknown_paths(scorer_url: str, tmp_path: Path) -> None:
    """Bad JSON is a 400 on ``body``; a body over the cap is a JSON 413; unknown paths are JSON 404s."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog, max_body_bytes=4096)) as (url, _app):
        status, body = await post(f"{url}/v1/decisions", None, data=b"{nope")
        assert (status, body["error"]["field"]) == (400, "body")
        status, body = await post(f"{url}/v1/decisions", None, data=b"x" * 5000)
        assert (status, body["error"]["code"]) == (413, "body_too_large")
        status, body = await post(f"{url}/v2/whatever", {})
        assert (status, body["error"]["code"]) == (404, "not_found")


async def test_an_outcome_outside_the_options_is_recorded_not_refused(
        scorer_url: str, tmp_path: Path) -> None:
    """Production doing something that is no option is recorded with ``in_options`` false, and counted.

    Options are recorded with ``in_options`` true, in the same body.
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        status, body = await post(f"{url}/v1/outcomes", {"outcomes": [
            {"decision_type": "tickets", "decision_id": "o-1", "outcome": "legal"},
            {"decision_type": "tickets", "decision_id": "o-2", "outcome": "billing"}]})
        assert (status, body) == (200, {"recorded": 2})
        async with aiohttp.ClientSession() as s, s.get(f"{url}/metrics") as resp:
            text = await resp.text()
    assert 'shadow_outcomes_outside_options_total{decision_type="tickets",source="api"} 1.0' in text
    rows = read_rows(tmp_path / "records", "outcomes")
    assert sorted((r["decision_id"], r["outcome"], r["in_options"]) for r in rows) == [
        ("o-1", "legal", False), ("o-2", "billing", True)]


async def test_bearer_token_per_decision_type(scorer_url: str, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A type with ``auth_token_env`` refuses requests without the token (401) and takes them with it."""
    monkeypatch.setenv("TICKETS_TOKEN", "s3cret")
    dtype = ticket_type(scorer_url, auth_token_env="TICKETS_TOKEN")  # noqa: S106  (an env var's name)
    catalog = write_catalog(tmp_path, {"tickets": dtype})
    decision = {"decision_type": "tickets", "decision_id": "a-1", "state": {"text": "x"}}
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        status, body = await post(f"{url}/v1/decisions", decision)
        assert (status, body["error"]["code"]) == (401, "unauthorized")
        status, _ = await post(f"{url}/v1/decisions", decision, headers={"Authorization": "Bearer wrong"})
        assert status == 401
        status, _ = await post(f"{url}/v1/decisions", decision, headers={"Authorization": "Bearer s3cret"})
        assert status == 202


async def test_metrics_and_healthz(scorer_url: str, tmp_path: Path) -> None:
    """/metrics exports offered, sampled, scored and dropped{reason}; /healthz reports the queue."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url, sampling={"rate": 0.5})})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app), aiohttp.ClientSession() as s:
        for i in range(40):
            decision = {"decision_type": "tickets", "decision_id": f"m-{i}", "state": {"text": "x"}}
            await post(f"{url}/v1/decisions", decision)
        async with s.get(f"{url}/healthz") as resp:
            health = await resp.json()
        assert health["status"] == "ok"
        assert health["kill_switch"] is False
        async with s.get(f"{url}/metrics") as resp:
            text = await resp.text()
    assert 'shadow_offered_total{candidate="default",decision_type="tickets"} 40.0' in text
    assert 'shadow_dropped_total{candidate="default",decision_type="tickets",reason="not_sampled"}' in text
    assert "shadow_queue_depth" in text
    assert "shadow_breaker_state" in text
    rows = read_rows(tmp_path / "records", "proposals")
    sampled = sum(r["sampled"] for r in rows)
    assert len(rows) == 40
    assert f'shadow_sampled_total{{candidate="default",decision_type="tickets"}} {float(sampled)}' in text
    assert all(r["reason"] == "not_sampled" for r in rows if not r["sampled"])


async def test_one_json_log_line_per_decision_without_state(scorer_url: str, tmp_path: Path,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """Each decision, scored or dropped, logs one JSON line with its ids and outcome, and no state."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    caplog.set_level(logging.INFO, logger="shadow.decisions")
    async with running_sidecar(settings_for(tmp_path, catalog, queue_max_items=1, workers=1)) as (url, _app):
        await post(f"{url}/v1/decisions", {"decisions": [
            {"decision_type": "tickets", "decision_id": f"log-{i}", "state": {"subject": "secret subject"}}
            for i in range(3)]})
        await asyncio.sleep(0.2)
    rendered = [JsonFormatter().format(r) for r in caplog.records]  # as the command writes them
    lines = [json.loads(text) for text, r in zip(rendered, caplog.records, strict=True)
             if r.name == "shadow.decisions"]
    assert sorted(line["decision_id"] for line in lines) == ["log-0", "log-1", "log-2"]
    assert {line["decision_type"] for line in lines} == {"tickets"}
    assert {line["status"] for line in lines} <= {"scored", "dropped"}
    assert {line["event"] for line in lines} == {"decision"}
    assert all("secret subject" not in text for text in rendered)
