# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Rows as the sidecar hands them to the store (records columns)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from datetime import datetime

BASE_US = 1_796_000_000_000_000  # 2026-11-30 in microseconds
OPTIONS = ["billing", "technical", "sales"]


def proposal_row(decision_id: str, *, decision_type: str = "route", received_at: int | datetime = BASE_US,
                 status: str = "scored", **extra: Any) -> dict[str, Any]:
    """A scored proposals row (or with ``status``/``reason`` overridden)."""
    row: dict[str, Any] = {
        "decision_id": decision_id, "decision_type": decision_type, "received_at": received_at,
        "sampled": True, "status": status, "option_ids": OPTIONS,
        "probabilities": [0.6, 0.3, 0.1], "logits": [-0.5, -1.2, -2.3], "proposal": "billing",
        "proposal_probability": 0.6, "backend": "local", "endpoint": "in-process",
        "model_name": "gemma-3-270m", "model_sha256": "a" * 64, "prompt_tokens": 120, "cached_tokens": 96,
        "truncated": False, "queue_ms": 1.5, "scorer_ms": 40.0, "total_ms": 42.0, "attempts": 1,
        "state_sha256": "b" * 64, "config_sha256": "c" * 64,
    }
    if status != "scored":
        row.update(probabilities=None, logits=None, proposal=None, proposal_probability=None)
    row.update(extra)
    return row


def outcome_row(decision_id: str, *, decision_type: str = "route", outcome_at: int = BASE_US + 1_000,
                outcome: str = "billing") -> dict[str, Any]:
    """An outcomes row reported by the proxy."""
    return {"decision_id": decision_id, "decision_type": decision_type, "outcome": outcome,
            "outcome_at": outcome_at, "source": "api"}
