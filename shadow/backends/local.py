"""``local``: the in-process SemIf engine, in one dedicated worker thread.

`scorer.engine.Engine` is not thread-safe, so the backend owns one engine and one single-thread
executor: calls are serialized there and the event loop never waits on llama.cpp.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from shadow.backends.base import ScoreResult, parse_semif_response
from shadow.errors import ScorerFailed, ScorerRejected, ScorerTimeout

if TYPE_CHECKING:
    from contracts.semif import ScoreResponse
    from scorer.engine import Engine
    from scorer.settings import ScorerSettings


class LocalBackend:
    """Scores with `scorer.engine.Engine` loaded from `ScorerSettings` (``SCORER_*``)."""

    name = "local"
    endpoint = "local"

    def __init__(self, settings: ScorerSettings) -> None:
        self.settings = settings
        self._engine: Engine | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="semif-engine")

    async def start(self) -> None:
        """Load the model in the engine's thread."""
        from scorer.engine import Engine  # noqa: PLC0415  (loads llama.cpp)

        loop = asyncio.get_running_loop()
        self._engine = await loop.run_in_executor(self._thread, Engine.from_settings, self.settings)

    async def score(self, request: dict[str, Any], limit_s: float) -> ScoreResult:
        """Score in the engine thread; stop waiting after ``limit_s`` (the engine finishes that call)."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._thread, self._score, request)
        try:
            body = await asyncio.wait_for(future, limit_s)
        except TimeoutError as exc:
            raise ScorerTimeout(f"local engine: no answer within {limit_s:.3f} s") from exc
        return parse_semif_response(body, [o["id"] for o in request["options"]])

    def _score(self, request: dict[str, Any]) -> ScoreResponse:
        from contracts.errors import WireError  # noqa: PLC0415
        from contracts.semif import parse_request  # noqa: PLC0415
        from scorer.errors import ScorerError  # noqa: PLC0415

        assert self._engine is not None, "start() first"
        try:
            return self._engine.score(parse_request(request))
        except WireError as exc:
            raise ScorerRejected(f"{exc.code}: {exc.message}") from exc
        except ScorerError as exc:
            raise ScorerFailed(str(exc)) from exc

    async def close(self) -> None:
        """Close the engine in its own thread, then stop the thread."""
        if self._engine is not None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._thread, self._engine.close)
        self._thread.shutdown(wait=True)
