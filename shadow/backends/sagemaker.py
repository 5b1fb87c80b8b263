"""``sagemaker``: boto3 ``InvokeEndpoint`` in a bounded thread pool, with the SDK's own retries off.

One attempt per `score` call: the sidecar's dispatcher owns the retry budget and the deadline. Note
botocore's ``retries={"max_attempts": N}`` counts *retries* (N=1 still makes two calls, measured in
``tests/shadow/test_backends.py``); ``total_max_attempts: 1`` is what turns the SDK's retries off.
botocore exceptions are translated here and nowhere else.
"""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from shadow.backends.base import ScoreResult, parse_semif_response, raise_for_status
from shadow.errors import InvalidScorerResponse, ScorerTimeout, ScorerUnavailable

DEFAULT_POOL_SIZE = 16
CONNECT_TIMEOUT_S = 1.0


class SageMakerBackend:
    """Calls a SageMaker endpoint (or anything serving ``/endpoints/{name}/invocations``)."""

    name = "sagemaker"

    def __init__(self, endpoint: str, region: str, endpoint_url: str | None, read_timeout_s: float,
                 pool_size: int = DEFAULT_POOL_SIZE) -> None:
        self.endpoint = endpoint
        self.region = region
        self.endpoint_url = endpoint_url
        self.read_timeout_s = read_timeout_s
        self.pool_size = pool_size
        self._client: Any = None
        self._pool: ThreadPoolExecutor | None = None

    async def start(self) -> None:
        """Build the client (SDK retries off) and the thread pool it runs in."""
        import boto3  # noqa: PLC0415  (heavy; only when a catalog uses SageMaker)
        from botocore.config import Config  # noqa: PLC0415

        config = Config(retries={"total_max_attempts": 1, "mode": "standard"},
                        connect_timeout=CONNECT_TIMEOUT_S, read_timeout=self.read_timeout_s,
                        max_pool_connections=self.pool_size)
        self._pool = ThreadPoolExecutor(max_workers=self.pool_size, thread_name_prefix="sagemaker")
        loop = asyncio.get_running_loop()
        self._client = await loop.run_in_executor(self._pool, lambda: boto3.session.Session().client(
            "sagemaker-runtime", region_name=self.region, endpoint_url=self.endpoint_url, config=config))

    async def score(self, request: dict[str, Any], limit_s: float) -> ScoreResult:
        """One ``InvokeEndpoint``; the waiting stops after ``limit_s`` (the thread at the read timeout)."""
        assert self._pool is not None, "start() first"
        body = json.dumps(request).encode()
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, self._invoke, body)
        try:
            answer = await asyncio.wait_for(future, limit_s)
        except TimeoutError as exc:
            raise ScorerTimeout(f"{self.endpoint}: no answer within {limit_s:.3f} s") from exc
        return parse_semif_response(answer, [o["id"] for o in request["options"]])

    def _invoke(self, body: bytes) -> Any:
        from botocore import exceptions as bx  # noqa: PLC0415

        try:
            resp = self._client.invoke_endpoint(EndpointName=self.endpoint, ContentType="application/json",
                                                Accept="application/json", Body=body)
            payload = resp["Body"].read()
        except bx.ClientError as exc:
            _raise_client_error(exc.response)
        except bx.ReadTimeoutError as exc:
            raise ScorerTimeout(f"{self.endpoint}: read timeout") from exc
        except (bx.EndpointConnectionError, bx.ConnectionClosedError, bx.ConnectTimeoutError) as exc:
            raise ScorerUnavailable(f"{self.endpoint}: {exc}") from exc
        try:
            return json.loads(payload)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InvalidScorerResponse(f"{self.endpoint}: answer is not JSON") from exc

    async def close(self) -> None:
        """Stop the pool without waiting for calls still in flight (their read timeout ends them)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _raise_client_error(response: dict[str, Any]) -> None:
    meta = response.get("ResponseMetadata", {})
    error = response.get("Error", {})
    code = str(error.get("Code", ""))
    status = int(response.get("OriginalStatusCode") or meta.get("HTTPStatusCode") or 500)
    if code in {"ThrottlingException", "TooManyRequestsException"}:
        status = 429
    elif code == "ServiceUnavailable":
        status = 503
    raise_for_status(status if status != 200 else 500, (meta.get("HTTPHeaders") or {}).get("retry-after"),
                     f"{code}: {error.get('Message', '')}")
