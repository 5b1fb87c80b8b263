"""Build proposals rows (records v1.1, ``contracts.records``) for the sidecar's decisions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from contracts.records import PROPOSALS, RECORD_VERSION, model_identity

if TYPE_CHECKING:
    import asyncio

    from shadow.backends.base import ScoreResult
    from shadow.live_catalog import CandidateRuntime, DecisionRuntime
    from shadow.state import Prepared, State


@dataclass(slots=True)
class QueuedDecision:
    """One offered decision on its way to one candidate (each candidate gets its own)."""

    decision_id: str
    rt: DecisionRuntime
    cand: CandidateRuntime
    state: State
    received_us: int
    received_mono: float
    size: int
    sampled: bool = False
    accepted: asyncio.Future[None] | None = None  # the store's durable note, started when queued


def blank_row(d: QueuedDecision, prepared: Prepared | None, stamp: RowStamp) -> dict[str, Any]:
    """Every column, with the decision's ids, candidate and state filled and the rest null."""
    row: dict[str, Any] = dict.fromkeys(PROPOSALS.names)
    row.update(
        record_version=RECORD_VERSION, decision_id=d.decision_id, decision_type=d.rt.name,
        received_at=datetime.fromtimestamp(d.received_us / 1e6, UTC), sampled=d.sampled,
        option_ids=d.rt.dtype.option_ids, backend=d.cand.spec.backend, endpoint=d.cand.backend.endpoint,
        writer_id=stamp.writer_id, config_sha256=stamp.config_sha256, candidate=d.cand.name,
        normalization=d.cand.spec.normalization)
    if prepared is not None:
        row.update(state_sha256=prepared.sha256, state=prepared.stored)
    return row


def not_scored(row: dict[str, Any], status: str, reason: str, total_ms: float,
               attempts: int = 0) -> dict[str, Any]:
    """A row for a decision that was dropped, timed out or failed."""
    row.update(status=status, reason=reason, total_ms=total_ms, attempts=attempts)
    return row


def scored(row: dict[str, Any], result: ScoreResult, timing: Timing) -> dict[str, Any]:
    """A row for a scored decision: probabilities, the argmax, and the pinned model and prompt identity."""
    probs = result.probabilities
    best = max(range(len(probs)), key=probs.__getitem__)
    model, prompt = result.model, result.prompt
    identity, identity_sha256 = model_identity(model, prompt.get("builder"), prompt.get("template_sha256"),
                                               row["normalization"])
    row.update(
        status="scored", reason=None, probabilities=probs, logits=result.logits,
        proposal=row["option_ids"][best], proposal_probability=probs[best],
        model_name=model.get("name"), model_sha256=model.get("sha256"),
        quantization=model.get("quantization"),
        runtime_version=model.get("runtime_version"), device=model.get("device"),
        instance_type=model.get("instance_type"), image_digest=model.get("image_digest"),
        prompt_builder=prompt.get("builder"), template_sha256=prompt.get("template_sha256"),
        prompt_tokens=prompt.get("prompt_tokens"), cached_tokens=prompt.get("cached_tokens"),
        truncated=prompt.get("truncated"), queue_ms=timing.queue_ms, scorer_ms=timing.scorer_ms,
        total_ms=timing.total_ms, attempts=timing.attempts, model_identity=identity,
        model_identity_sha256=identity_sha256)
    return row


@dataclass(frozen=True, slots=True)
class RowStamp:
    """Which sidecar and which configuration wrote a row."""

    writer_id: str
    config_sha256: str


@dataclass(frozen=True, slots=True)
class Timing:
    """Where a scored decision's time went (milliseconds) and how many scorer calls it took."""

    queue_ms: float
    scorer_ms: float
    total_ms: float
    attempts: int
