"""boto3's real sagemaker-runtime client against the server's emulation of InvokeEndpoint."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.config import Config

from scorer.engine import Engine
from scorer.server.app import init_app
from tests.scorer.harness import DECISION, ready, settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from aiohttp.test_utils import TestClient

    from contracts.semif import ScoreResponse
    from tests.typing import ClientFactory


def runtime_client(client: TestClient, attempts: int = 1) -> Any:
    """A sagemaker-runtime client pointed at the test server (dummy credentials; requests are signed)."""
    return boto3.client(
        "sagemaker-runtime",
        endpoint_url=str(client.make_url("")).rstrip("/"),
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",  # noqa: S106  (a local emulation)
        config=Config(retries={"mode": "standard", "total_max_attempts": attempts}),
    )


@pytest.fixture
async def client(model_path: Path, aiohttp_client: ClientFactory) -> TestClient:
    """A ready server with the real model."""
    c = await aiohttp_client(init_app(settings_for(model_path)))
    await ready(c)
    return c


async def test_invoke_endpoint_scores_a_decision(client: TestClient) -> None:
    """InvokeEndpoint through boto3 returns the SemIf response and the invoked variant."""
    rt = runtime_client(client)
    response = await asyncio.to_thread(
        rt.invoke_endpoint,
        EndpointName="semif-scorer",
        ContentType="application/json",
        Body=json.dumps(DECISION).encode(),
    )
    body = json.loads(response["Body"].read())
    assert [o["id"] for o in body["options"]] == ["billing", "tech"]
    assert response["InvokedProductionVariant"] == "AllTraffic"


async def test_invalid_request_maps_to_model_error(client: TestClient) -> None:
    """A 400 from the container is boto3's ModelError carrying the original status and SemIf error."""
    rt = runtime_client(client)
    with pytest.raises(rt.exceptions.ModelError) as info:
        await asyncio.to_thread(
            rt.invoke_endpoint,
            EndpointName="semif-scorer",
            ContentType="application/json",
            Body=json.dumps({**DECISION, "options": ["a", "a"]}).encode(),
        )
    error = info.value.response
    assert error["OriginalStatusCode"] == 400
    assert json.loads(error["OriginalMessage"])["error"]["field"] == "options[1].id"


async def test_unsigned_request_is_refused(client: TestClient) -> None:
    """Without a SigV4 Authorization header the emulation answers 403, as AWS would."""
    response = await client.post("/endpoints/semif-scorer/invocations", json=DECISION)
    assert response.status == 403
    assert response.headers["x-amzn-ErrorType"].startswith("MissingAuthenticationTokenException")


async def test_overload_is_service_unavailable_and_botocore_retries(
    model_path: Path, aiohttp_client: ClientFactory
) -> None:
    """A full queue is 503 ServiceUnavailable; botocore's standard mode retries it (3 attempts here).

    While the model is held busy, /ping still answers at once.
    """
    gate = threading.Event()

    class HeldEngine(Engine):
        def score(self, *args: Any, **kwargs: Any) -> ScoreResponse:
            gate.wait(30)
            return super().score(*args, **kwargs)

    def factory(settings: Any) -> Engine:
        plain = Engine.from_settings(settings)
        plain.__class__ = HeldEngine
        return plain

    c = await aiohttp_client(init_app(settings_for(model_path, queue_size=1), engine_factory=factory))
    await ready(c)
    blocker = asyncio.create_task(c.post("/invocations", json=DECISION))  # occupies the model
    await asyncio.sleep(0.2)
    queued = asyncio.create_task(c.post("/invocations", json=DECISION))  # fills the queue
    await asyncio.sleep(0.2)
    rt = runtime_client(c, attempts=3)
    try:
        started = time.perf_counter()
        assert (await c.get("/ping")).status == 200  # the busy model never blocks /ping
        assert time.perf_counter() - started < 0.5
        with pytest.raises(rt.exceptions.ServiceUnavailable) as info:
            await asyncio.to_thread(
                rt.invoke_endpoint,
                EndpointName="semif-scorer",
                ContentType="application/json",
                Body=json.dumps(DECISION).encode(),
            )
        assert info.value.response["ResponseMetadata"]["RetryAttempts"] == 2
        metrics = await (await c.get("/metrics")).text()
        assert "semif_overloaded_total 3.0" in metrics
    finally:
        gate.set()
    assert (await blocker).status == 200
    assert (await queued).status == 200


async def test_not_ready_is_429_model_not_ready(model_path: Path, aiohttp_client: ClientFactory) -> None:
    """While the model loads, InvokeEndpoint is 429 ModelNotReadyException (SageMaker's mapping of 503).

    The engine factory is held, so the model never loads during the test; /ping is 503 meanwhile.
    """
    loading = threading.Event()

    def held(_settings: Any) -> Engine:
        loading.wait(30)
        raise RuntimeError("released by the test")

    c = await aiohttp_client(init_app(settings_for(model_path), engine_factory=held))
    rt = runtime_client(c)
    try:
        assert (await c.get("/ping")).status == 503
        with pytest.raises(rt.exceptions.ModelNotReadyException) as info:
            await asyncio.to_thread(
                rt.invoke_endpoint,
                EndpointName="semif-scorer",
                ContentType="application/json",
                Body=json.dumps(DECISION).encode(),
            )
        assert info.value.response["ResponseMetadata"]["HTTPStatusCode"] == 429
        assert json.loads(info.value.response["Error"]["Message"])["error"]["code"] == "not_ready"
    finally:
        loading.set()
