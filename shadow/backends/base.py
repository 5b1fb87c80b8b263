"""The interface every scorer backend implements, and the SemIf request/response on the sidecar side.

A backend makes *one* call per `score` (the dispatcher owns retries, the breaker and the deadline) and
raises only `shadow.errors.ScorerCallError` subclasses: each backend module is the one boundary where
its client library's exceptions are translated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Protocol

from shadow.errors import (
    InvalidScorerResponse,
    ScorerCallError,
    ScorerFailed,
    ScorerOverloaded,
    ScorerRejected,
    ScorerThrottled,
)

IDENTITY_FIELDS = ("name", "sha256", "quantization", "runtime_version", "device", "instance_type",
                   "image_digest")


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
    """Check a SemIf response against the declared options and return it in their order."""
    try:
        by_id = {o["id"]: o for o in body["options"]}
        if sorted(by_id) != sorted(option_ids) or len(body["options"]) != len(option_ids):
            raise InvalidScorerResponse("response options differ from the declared options")
        probs = [float(by_id[i]["probability"]) for i in option_ids]
        logits = [float(by_id[i]["logit"]) for i in option_ids]
        model = body.get("model") or {}
        prompt = body.get("prompt") or {}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidScorerResponse(f"not a SemIf response: {exc!r}") from exc
    if not all(math.isfinite(p) and 0.0 <= p <= 1.0 for p in probs) or abs(sum(probs) - 1.0) > 1e-3:
        raise InvalidScorerResponse("probabilities are not a distribution")
    return ScoreResult(probabilities=probs, logits=logits, model=dict(model), prompt=dict(prompt),
                       tokens=int(prompt.get("prompt_tokens") or 0))


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
