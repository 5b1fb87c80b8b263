"""The interface every scorer backend implements, and the SemIf request/response on the sidecar side.

A backend makes *one* call per `score` (the dispatcher owns retries, the breaker and the deadline) and
raises only `shadow.errors.ScorerCallError` subclasses: each backend module is the one boundary where
its client library's exceptions are translated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from contracts.semif import parse_response
from shadow.errors import (
    InvalidScorerResponse,
    ScorerCallError,
    ScorerFailed,
    ScorerOverloaded,
    ScorerRejected,
    ScorerThrottled,
)


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """One scorer answer, already checked against the declared options (same order)."""

    probabilities: list[float]
    logits: list[float] | None
    model: dict[str, Any] = field(default_factory=dict)
    prompt: dict[str, Any] = field(default_factory=dict)
    tokens: int = 0


class Backend(Protocol):
    """A scorer the dispatcher can call."""

    name: str
    endpoint: str

    async def start(self) -> None:
        """Open clients, load models."""

    async def score(self, request: dict[str, Any], limit_s: float) -> ScoreResult:
        """Make one call that may take ``limit_s`` seconds; raise a `ScorerCallError` on failure."""

    async def close(self) -> None:
        """Release clients and threads."""


def parse_semif_response(body: Any, option_ids: list[str]) -> ScoreResult:
    """Check a SemIf response (``contracts.semif.ScoreResponse``) against the declared options."""
    try:
        response = parse_response(body)
        scores = response.in_order(option_ids)
    except ValueError as exc:  # pydantic's ValidationError is one
        raise InvalidScorerResponse(f"not a SemIf response: {_first_line(exc)}") from exc
    probs = [s.probability for s in scores]
    if not all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in probs) or abs(sum(probs) - 1.0) > 1e-3:
        raise InvalidScorerResponse("probabilities are not a distribution")
    return ScoreResult(probabilities=probs, logits=[s.logit for s in scores],
                       model=response.model.model_dump(mode="json", exclude_unset=True),
                       prompt=response.prompt.model_dump(mode="json", exclude_unset=True),
                       tokens=response.prompt.prompt_tokens)


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def raise_for_status(status: int, retry_after: str | None, text: str) -> None:
    """Translate a non-200 HTTP answer into the error tree (503 and 429 are retryable)."""
    if status == 200:
        return
    detail = f"HTTP {status}: {text[:200]}"
    if status == 503:
        raise ScorerOverloaded(detail, retry_after=parse_retry_after(retry_after))
    if status == 429:
        raise ScorerThrottled(detail, retry_after=parse_retry_after(retry_after))
    if 400 <= status < 500:
        raise ScorerRejected(detail)
    raise ScorerFailed(detail)


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds form only)."""
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None


__all__ = ["Backend", "ScoreResult", "ScorerCallError", "parse_semif_response", "raise_for_status"]
