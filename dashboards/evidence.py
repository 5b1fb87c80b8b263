"""The numbers a verdict is decided on, gathered per decision type and candidate from the marts.

Read only through ``dashboards.marts`` frames (report vocabulary). Today's marts split latency by fleet
only and cost by model name: both are taken at the decision type's worst fleet and the candidate's model
name, and say so in ``notes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dashboards.marts import CANDIDATE, identity_of

if TYPE_CHECKING:
    import pandas as pd

    from dashboards.marts import Marts
    from dashboards.policies import Replayed


@dataclass(frozen=True)
class Evidence:
    """One decision type and candidate in the review week."""

    decision_type: str
    candidate: str
    scored: int
    labelled: int
    accepted: int
    accepted_labelled: int
    accepted_correct: int
    coverage: float
    severe_errors: int
    ece_alert: bool
    psi_bands: tuple[str, ...]
    p99_ms: float
    cost_per_accepted: float
    at_min_coverage: tuple[int, int] | None
    """``(accepted, accepted_correct)`` at the highest threshold reaching the minimum coverage."""
    notes: tuple[str, ...] = field(default=())
    policy: Replayed | None = None
    """The candidate identity's policy replayed on the review week, if one was given."""


def _one(frame: pd.DataFrame, decision_type: str, candidate: str) -> pd.Series | None:
    rows = frame[(frame["decision_type"] == decision_type) & (frame[CANDIDATE] == candidate)]
    return None if rows.empty else rows.iloc[0]


def _int(row: pd.Series | None, column: str) -> int:
    return 0 if row is None or _missing(row[column]) else int(row[column])


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def at_coverage(marts: Marts, decision_type: str, candidate: str, coverage: float) -> tuple[int, int] | None:
    """Accepted and correct at the highest global threshold whose coverage reaches ``coverage``."""
    frame = marts.of_week("risk_coverage")
    rows = frame[
        (frame["decision_type"] == decision_type)
        & (frame[CANDIDATE] == candidate)
        & (frame["coverage"] >= coverage)
    ]
    if rows.empty:
        return None
    best = rows.sort_values("threshold").iloc[-1]
    return int(best["accepted"]), int(best["accepted_correct"])


def gather(
    marts: Marts, decision_type: str, candidate: str, min_coverage: float, policy: Replayed | None = None
) -> Evidence:
    """The evidence for one decision type and candidate in the review week (``policy``: its replay)."""
    agreement = _one(marts.of_week("agreement"), decision_type, candidate)
    selective = _one(marts.of_week("selective"), decision_type, candidate)
    drift = _one(marts.of_week("drift"), decision_type, candidate)
    latency = marts.of_week("latency")
    latency = latency[latency["decision_type"] == decision_type]
    cost = marts.of_week("cost")
    cost = cost[
        (cost["decision_type"] == decision_type) & (cost["model_name"] == identity_of(candidate).model_name)
    ]
    accepted = int(cost["accepted"].sum())
    bands = (
        ()
        if drift is None
        else tuple(str(drift[c]) for c in ("confidence_psi_band", "mix_psi_band") if not _missing(drift[c]))
    )
    return Evidence(
        decision_type=decision_type,
        candidate=candidate,
        scored=_int(agreement, "scored"),
        labelled=_int(agreement, "labelled"),
        accepted=_int(selective, "accepted"),
        accepted_labelled=_int(selective, "accepted_labelled"),
        accepted_correct=_int(selective, "accepted_correct"),
        coverage=0.0 if selective is None else float(selective["coverage"]),
        severe_errors=_int(agreement, "severe_errors"),
        ece_alert=drift is not None and bool(drift["ece_alert"]),
        psi_bands=bands,
        p99_ms=float(latency["scorer_p99_ms"].max()) if not latency.empty else math.nan,
        cost_per_accepted=float(cost["cost_usd"].sum()) / accepted if accepted else math.nan,
        at_min_coverage=at_coverage(marts, decision_type, candidate, min_coverage),
        notes=(
            "latency: the decision type's worst fleet (today's marts do not split latency by candidate)",
            "cost: every row of the candidate's model name (today's marts price by model name)",
            (
                f"precision and coverage: policy chosen on {policy.policy.chosen_on}, "
                f"replayed on {marts.week}"
                if policy is not None and not policy.in_sample
                else "precision and coverage: thresholds chosen and evaluated on the same week (in-sample)"
            ),
        ),
        policy=policy,
    )
