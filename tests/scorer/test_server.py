"""The scorer server on loopback with the real model: readiness, SemIf and chat, overload, errors."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import re
import threading
import zlib
from typing import TYPE_CHECKING, Any

import pytest
from llama_cpp import Llama

from scorer.engine import Engine
from scorer.server.app import init_app
from tests.scorer.harness import DECISION, ready, settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

    from scorer.settings import ScorerSettings
    from tests.typing import ClientFactory


@pytest.fixture
async def client(model_path: Path, aiohttp_client: ClientFactory) -> TestClient:
    """A ready server with the real model."""
    c = await aiohttp_client(init_app(settings_for(model_path)))
    await ready(c)
    return c


async def test_ping_is_503_until_the_model_is_loaded(model_path: Path, aiohttp_client: ClientFactory) -> None:
    """/ping answers 503 not_ready while loading (and SemIf requests too), then 200."""
    release = threading.Event()

    def slow_factory(settings: ScorerSettings) -> Engine:
        release.wait(30)
        return Engine.from_settings(settings)

    c = await aiohttp_client(init_app(settings_for(model_path), engine_factory=slow_factory))
    response = await c.get("/ping")
    assert response.status == 503
    assert (await response.json())["error"]["code"] == "not_ready"
    early = await c.post("/invocations", json=DECISION)
    assert early.status == 503
    assert early.headers["Retry-After"] == "1"
    release.set()
    await ready(c)
    assert (await c.post("/invocations", json=DECISION)).status == 200


async def test_semif_request_is_scored(client: TestClient) -> None:
    """A SemIf body gets the SemIf response: request order, probabilities summing to 1, identity."""
    response = await client.post("/invocations", json=DECISION)
    assert response.status == 200
    body = await response.json()
    assert body["decision_id"] == "d-1"
    assert [o["id"] for o in body["options"]] == ["billing", "tech"]
    assert abs(sum(o["probability"] for o in body["options"]) - 1) < 1e-6
    assert body["model"]["architecture"] == "gemma3"
    assert body["timing_ms"]["queue"] >= 0


async def test_chat_body_is_answered_like_the_standard_container(
    client: TestClient, model_path: Path
) -> None:
    """A messages body gets choices[0].message.content: llama-cpp-python's greedy reply to the same turns."""
    response = await client.post(
        "/invocations",
        json={"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8, "temperature": 0},
    )
    assert response.status == 200
    body = await response.json()
    # The reference: llama-cpp-python's own greedy completion of Gemma's turn format, written out here.
    llm = Llama(str(model_path), n_ctx=1024, n_threads=2, verbose=False)
    try:
        ref = llm.create_completion(
            "<start_of_turn>user\nSay hello.<end_of_turn>\n<start_of_turn>model\n",
            max_tokens=8,
            temperature=0,
        )
    finally:
        llm.close()
    assert body["choices"][0]["message"]["content"] == ref["choices"][0]["text"]
    assert body["choices"][0]["finish_reason"] == ref["choices"][0]["finish_reason"]
    assert body["usage"]["completion_tokens"] == ref["usage"]["completion_tokens"]
    assert body["usage"]["prompt_tokens"] == ref["usage"]["prompt_tokens"]


async def test_chat_stream_is_server_sent_events(client: TestClient) -> None:
    """stream=true answers text/event-stream chunks ending with data: [DONE], same text as non-streamed."""
    chat = {"messages": [{"role": "user", "content": "Count to three."}], "max_tokens": 6}
    plain = await (await client.post("/invocations", json=chat)).json()
    response = await client.post("/invocations", json={**chat, "stream": True})
    assert response.status == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    events = [line[6:] for line in (await response.text()).splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == plain["choices"][0]["message"]["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == plain["choices"][0]["finish_reason"]


async def test_burst_beyond_the_queue_gets_503_with_retry_after(
    model_path: Path, aiohttp_client: ClientFactory
) -> None:
    """More concurrent requests than the queue holds: some 503 overloaded at once, none 500, all answered."""
    c = await aiohttp_client(init_app(settings_for(model_path, queue_size=2)))
    await ready(c)

    async def one(i: int) -> tuple[int, dict[str, Any], str | None]:
        r = await c.post("/invocations", json={**DECISION, "decision_id": f"b-{i}"})
        return r.status, await r.json(), r.headers.get("Retry-After")

    results = await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(24))), timeout=120)
    statuses = [s for s, _, _ in results]
    assert set(statuses) <= {200, 503}
    assert statuses.count(200) >= 3
    assert statuses.count(503) >= 10
    for status, body, retry_after in results:
        if status == 503:
            assert body["error"]["code"] == "overloaded"
            assert retry_after == "1"
    metrics = await (await c.get("/metrics")).text()
    assert f"semif_overloaded_total {float(statuses.count(503))}" in metrics


BAD_BODIES = [
    ("malformed JSON", b"{not json", "application/json", 400, "body"),
    ("JSON array", b"[1]", "application/json", 400, "body"),
    ("empty options", json.dumps({**DECISION, "options": []}).encode(), "application/json", 400, "options"),
    (
        "257 options",
        json.dumps({**DECISION, "options": [f"o{i}" for i in range(257)]}).encode(),
        "application/json",
        400,
        "options",
    ),
    (
        "duplicate ids",
        json.dumps({**DECISION, "options": ["a", "b", "a"]}).encode(),
        "application/json",
        400,
        "options[2].id",
    ),
    ("unknown field", json.dumps({**DECISION, "top_k": 3}).encode(), "application/json", 400, "top_k"),
    (
        "bad chat role",
        json.dumps({"messages": [{"role": "robot", "content": "x"}]}).encode(),
        "application/json",
        400,
        "messages[0].role",
    ),
    ("wrong content type", json.dumps(DECISION).encode(), "text/plain", 415, "Content-Type"),
    (
        "oversized body",
        json.dumps({**DECISION, "state": "x" * 2_000_000}).encode(),
        "application/json",
        413,
        "body",
    ),
]


@pytest.mark.parametrize(
    ("case", "body", "content_type", "status", "field"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES]
)
async def test_bad_requests_are_4xx_naming_the_field(
    client: TestClient, case: str, body: bytes, content_type: str, status: int, field: str
) -> None:
    """Each bad body is a 4xx JSON error with the offending field; the server keeps serving."""
    response = await client.post(
        "/invocations", data=io.BytesIO(body), headers={"Content-Type": content_type}
    )
    assert response.status == status, case
    error = (await response.json())["error"]
    assert error["field"] == field
    assert (await client.get("/ping")).status == 200


_SEMIF = json.dumps(DECISION).encode()
ENCODED = [
    ("whole gzip", gzip.compress(_SEMIF), "gzip", 200, None),
    ("whole deflate", zlib.compress(_SEMIF), "deflate", 200, None),
    ("gzip cut short", gzip.compress(_SEMIF)[:-9], "gzip", 400, "body"),
    ("deflate cut short", zlib.compress(_SEMIF)[:30], "deflate", 400, "body"),
    ("empty gzip", b"", "gzip", 400, "body"),
    ("gzip bomb", gzip.compress(bytes(32 << 20)), "gzip", 413, "body"),
    ("brotli", _SEMIF, "br", 415, "Content-Encoding"),
]


async def test_compressed_bodies_decode_under_the_cap(client: TestClient) -> None:
    """A body in gzip or deflate is scored; one cut short is a 400, a bomb a 413 (both on ``body``).

    An unknown coding is a 415 on ``Content-Encoding``. aiohttp's own decoder is off: it hung, or gave a
    plain-text 400, on a stream cut short. One server for every case (the model loads once).
    """
    for case, body, coding, status, field in ENCODED:
        response = await client.post("/invocations", data=io.BytesIO(body),
                                     headers={"Content-Type": "application/json", "Content-Encoding": coding})
        assert response.status == status, case
        answer = await response.json()
        if field is None:
            assert answer["decision_id"] == "d-1", case
        else:
            assert answer["error"]["field"] == field, case


async def test_prompt_too_long_is_a_400(model_path: Path, aiohttp_client: ClientFactory) -> None:
    """Options that alone overflow the context are a 400 prompt_too_long naming options."""
    c = await aiohttp_client(init_app(settings_for(model_path, n_ctx=256)))
    await ready(c)
    options = [
        {"id": f"o{i}", "text": f"option number {i} with a rather long description"} for i in range(40)
    ]
    response = await c.post("/invocations", json={**DECISION, "options": options})
    assert response.status == 400
    error = (await response.json())["error"]
    assert (error["code"], error["field"]) == ("prompt_too_long", "options")
    needed = re.fullmatch(r"question and options need (\d+) tokens; the context holds 256", error["message"])
    assert needed is not None, error["message"]
    assert int(needed[1]) > 40 * 8  # forty options of at least eight tokens each


async def test_metrics_expose_requests_queue_and_tokens(client: TestClient) -> None:
    """/metrics counts requests by status, scoring time, tokens computed vs cached, and load time."""
    for i in range(3):
        assert (await client.post("/invocations", json={**DECISION, "decision_id": f"m-{i}"})).status == 200
    text = await (await client.get("/metrics")).text()
    assert 'semif_requests_total{route="/invocations",status="200"} 3.0' in text
    assert 'semif_score_seconds_count{kind="score"} 3.0' in text
    cached = next(line for line in text.splitlines() if line.startswith("semif_tokens_cached_total"))
    assert float(cached.split()[-1]) > 0
    assert "semif_model_load_seconds" in text
    assert "semif_queue_depth 0.0" in text


async def test_metrics_count_logit_memo_hits(model_path: Path, aiohttp_client: ClientFactory) -> None:
    """``SCORER_LOGIT_MEMO``: one prompt under three normalizations, decoded once; /metrics counts 2 hits."""
    c = await aiohttp_client(init_app(settings_for(model_path, logit_memo=4)))
    await ready(c)
    bodies = []
    for i, normalization in enumerate(["none", "per_token", "none"]):
        body = {**DECISION, "decision_id": f"memo-{i}", "scoring": {"normalization": normalization}}
        response = await c.post("/invocations", json=body)
        assert response.status == 200
        bodies.append(await response.json())
    text = await (await c.get("/metrics")).text()
    assert "semif_memo_hits_total 2.0" in text
    reused = [b["prompt"]["cached_tokens"] == b["prompt"]["prompt_tokens"] for b in bodies]
    assert reused == [False, True, True]
    assert bodies[2]["options"] == bodies[0]["options"]
