"""The chat backend against llama-cpp-python's own OpenAI-compatible server on loopback (the embedded model).

Each answer mode the server supports ends every decision ``scored`` with option probabilities from the
answer's log-probabilities; the mode it rejects (``json_schema``: it knows only ``json_object``) is a clear
error on the first call.
"""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import time
import urllib.request
from typing import TYPE_CHECKING, Any

import aiohttp
import pytest

from shadow.backends.chat import AnswerModeRejected, ChatBackend
from shadow.backends.chat_logprobs import option_distribution
from tests.harness import free_port
from tests.shadow.harness import (
    TICKET_OPTIONS,
    offer_and_collect,
    rows_by_id,
    running_sidecar,
    settings_for,
    ticket_type,
    wait_rows,
    write_catalog,
)

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

REQUEST = {"question": "Which team should handle this ticket?", "options": TICKET_OPTIONS,
           "state": {"subject": "My invoice is wrong"}}


@pytest.fixture(scope="module")
def chat_server(model_path: Path) -> Iterator[str]:
    """`python -m llama_cpp.server` serving the embedded Gemma 3 270M with the gemma chat format."""
    port = free_port()
    proc = subprocess.Popen(  # noqa: S603  (this interpreter, fixed arguments)
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--chat_format", "gemma",
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "1024"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert proc.poll() is None, f"llama_cpp.server exited with {proc.returncode}"
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as answer:  # noqa: S310 (loopback)
                    if answer.status == 200:
                        break
            except OSError:
                assert time.monotonic() < deadline, "llama_cpp.server did not answer within 180 s"
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def test_grammar_mode_scores_every_decision_with_probabilities_from_logprobs(
    chat_server: str, tmp_path: Path
) -> None:
    """Through the sidecar: 3 of 3 decisions scored, probabilities summing to 1 and not one-hot."""
    scorer = {"backend": "chat", "endpoint": chat_server, "answer_mode": "grammar", "top_logprobs": 20,
              "max_tokens": 8, "timeout_s": 280, "deadline_s": 600, "max_attempts": 1}
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(chat_server, scorer=scorer)})
    ids = ["g-1", "g-2", "g-3"]
    # one worker: llama_cpp.server answers one request at a time, and a queued call's wait would count
    # against its timeout
    async with running_sidecar(settings_for(tmp_path, catalog, workers=1)) as (url, _app):
        await offer_and_collect(url, ids, wait_s=0)
        await wait_rows(url, len(ids), timeout_s=900)
    rows = rows_by_id(tmp_path)
    assert [rows[i]["status"] for i in ids] == ["scored"] * 3, [rows[i]["reason"] for i in ids]
    for i in ids:
        row = rows[i]
        assert math.isclose(sum(row["probabilities"]), 1.0, abs_tol=1e-9)
        assert max(row["probabilities"]) < 1.0
        assert all(math.isfinite(x) for x in row["logits"])
        assert row["prompt_builder"] == "chat/2;grammar;logprobs"
        identity = json.loads(row["model_identity"])["model"]
        assert identity["answer_mode"] == "grammar"
        assert identity["server"] == "uvicorn"
        assert identity["name"].endswith(".gguf")


@pytest.mark.slow
async def test_json_object_mode_answers_one_option_with_probabilities(chat_server: str) -> None:
    """``{"answer": <id>}`` under llama-cpp-python's JSON-schema grammar.

    The row says where its numbers are from.
    """
    backend = ChatBackend(chat_server, None, 24, "json_object", 20)
    await backend.start()
    try:
        result = await backend.score(dict(REQUEST), 600)
    finally:
        await backend.close()
    assert math.isclose(sum(result.probabilities), 1.0, abs_tol=1e-9)
    # after the forced `{"answer": "` the small model rarely ranks a second id in its top 20: the row then
    # stays one-hot and says so
    source = result.prompt["builder"].rpartition(";")[2]
    assert (source == "logprobs") == (max(result.probabilities) < 1.0)


async def test_a_mode_the_server_rejects_is_a_clear_error_on_the_first_call(chat_server: str) -> None:
    """llama_cpp.server refuses ``response_format`` ``json_schema``: AnswerModeRejected names the mode."""
    backend = ChatBackend(chat_server, None, 8, "json_schema", 5)
    await backend.start()
    try:
        with pytest.raises(AnswerModeRejected, match=r"rejected answer_mode 'json_schema'.*json_object"):
            await backend.score(dict(REQUEST), 60)
    finally:
        await backend.close()


async def test_a_refused_answer_mode_is_logged_once_with_the_fix_and_counted(
    chat_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Through the sidecar, 12 decisions all refused: one warning with the server's message and the fix.

    llama_cpp.server answers ``json_schema`` with a 500 and its own message; every decision ends
    ``error / scorer_rejected``, the refusal is logged once for the candidate (not once per decision) and
    counted once per call in ``shadow_scorer_refused_total``.
    """
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1,
            "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {}}}}
    async with aiohttp.ClientSession() as session, \
            session.post(f"{chat_server}/v1/chat/completions", json=body) as refused:
        assert refused.status == 500
        server_says = (await refused.text())[:120]  # the server's own words, asked without the sidecar
    scorer = {"backend": "chat", "endpoint": chat_server, "answer_mode": "json_schema", "timeout_s": 60,
              "deadline_s": 120, "max_attempts": 1}
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(chat_server, scorer=scorer)})
    ids = [f"r-{i}" for i in range(12)]
    caplog.set_level(logging.WARNING, logger="shadow.scorer")
    async with running_sidecar(settings_for(tmp_path, catalog, workers=2)) as (url, _app):
        await offer_and_collect(url, ids, wait_s=0)
        await wait_rows(url, len(ids), timeout_s=120)
        async with aiohttp.ClientSession() as session, session.get(f"{url}/metrics") as answer:
            metrics = await answer.text()
    rows = rows_by_id(tmp_path)
    assert {(rows[i]["status"], rows[i]["reason"]) for i in ids} == {("error", "scorer_rejected")}
    told = [r.getMessage() for r in caplog.records if r.name == "shadow.scorer"]
    assert len(told) == 1, told
    assert server_says in told[0]
    assert "set the scorer's answer_mode to one the server supports" in told[0]
    assert "json_object: llama-cpp-python's server" in told[0]
    counted = [line for line in metrics.splitlines()
               if line.startswith("shadow_scorer_refused_total{") and 'cause="AnswerModeRejected"' in line]
    assert len(counted) == 1, counted
    assert float(counted[0].rsplit(" ", 1)[1]) == len(ids)


def test_options_sharing_a_first_token_are_split_by_the_next_token() -> None:
    """``bill`` / ``billing`` share the token ``bill``: the closing quote's alternatives split them."""
    def token(text: str, logprob: float, alternatives: dict[str, float]) -> dict[str, Any]:
        return {"token": text, "logprob": logprob,
                "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alternatives.items()]}

    tokens = [
        token('{"answer": "', 0.0, {}),
        token("bill", math.log(0.6), {"bill": math.log(0.6), "tech": math.log(0.2), "Hello": math.log(0.2)}),
        token('"', math.log(0.3), {'"': math.log(0.3), "ing": math.log(0.6), "x": math.log(0.1)}),
        token("}", 0.0, {}),
    ]
    probs = option_distribution(tokens, len('{"answer": "'), ["bill", "billing", "tech"], '"')
    assert probs is not None
    # reachable at the first step: bill 0.6, tech 0.2 (Hello dropped); then '"' 0.3 vs "ing" 0.6 ("x" dropped)
    assert probs == pytest.approx([0.75 * 1 / 3, 0.75 * 2 / 3, 0.25])
