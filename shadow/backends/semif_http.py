"""``semif_http``: the SemIf scorer over HTTP (``POST {endpoint}/invocations``), one aiohttp session."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from shadow.backends.base import ScoreResult, parse_semif_response, raise_for_status
from shadow.errors import InvalidScorerResponse, ScorerTimeout, ScorerUnavailable

DEFAULT_CONNECT_TIMEOUT_S = 1.0
DEFAULT_POOL_SIZE = 64
MAX_RESPONSE_BYTES = 4 * 1024 * 1024


def client_session(pool_size: int = DEFAULT_POOL_SIZE) -> aiohttp.ClientSession:
    """A session with a bounded pool and no default timeout (every call passes its own)."""
    connector = aiohttp.TCPConnector(limit=pool_size, enable_cleanup_closed=True)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(
        total=None, connect=DEFAULT_CONNECT_TIMEOUT_S, sock_read=None))


async def post_json(session: aiohttp.ClientSession, url: str, body: dict[str, Any],
                    limit_s: float) -> Any:
    """POST JSON and return the decoded answer, translating every failure into the error tree."""
    limit = aiohttp.ClientTimeout(total=limit_s, connect=min(limit_s, DEFAULT_CONNECT_TIMEOUT_S))
    try:
        async with session.post(url, json=body, timeout=limit) as resp:
            text = (await resp.content.read(MAX_RESPONSE_BYTES)).decode("utf-8", "replace")
            raise_for_status(resp.status, resp.headers.get("Retry-After"), text)
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise InvalidScorerResponse(f"{url}: answer is not JSON") from exc
    except TimeoutError as exc:
        raise ScorerTimeout(f"no answer from {url} within {limit_s:.3f} s") from exc
    except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
        raise ScorerUnavailable(f"{url}: {exc!r}") from exc



class SemIfHttpBackend:
    """Calls a SemIf HTTP scorer (this project's ``scorer.server`` or any compatible one)."""

    name = "semif_http"

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.url = self.endpoint + "/invocations"
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        """Open the one session."""
        self._session = client_session()

    async def score(self, request: dict[str, Any], limit_s: float) -> ScoreResult:
        """One call; the dispatcher owns retries."""
        assert self._session is not None, "start() first"
        body = await post_json(self._session, self.url, request, limit_s)
        return parse_semif_response(body, [o["id"] for o in request["options"]])

    async def close(self) -> None:
        """Close the session (and give its transports a tick to close)."""
        if self._session is not None:
            await self._session.close()
            await asyncio.sleep(0)
