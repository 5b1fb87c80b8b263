"""The numbers a verdict is decided on, gathered per decision type and candidate from the marts.

Read only through ``dashboards.marts`` frames (report vocabulary). Today's marts split latency by fleet
only and cost by model name: both are taken at the decision type's worst fleet and the candidate's model
name, and say so in ``notes``. ``calibration_of`` is what the report shows of a candidate's calibration
(not a verdict input: the ECE rule reads the ``drift`` mart's alert).
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


@dataclass(frozen=True)
class Calibration:
    """One candidate's calibration in the review week, as the ``calibration`` mart gives it."""

    labelled: int
    """Labelled decisions, one-hot ones included."""
    one_hot_excluded: int
    """Labelled decisions left out of every calibration figure: their probabilities are one-hot."""
    ece: float | None
    """The debiased ECE (None where no figure could be computed)."""
    ece_low: float | None
    ece_high: float | None

    def describe(self) -> str:
        """One line for a reader: the ECE and how many one-hot rows it leaves out.

        ``ECE: 0.031 (debiased, 95% interval 0.021 to 0.042) over 812 labelled, 37 one-hot rows left out
        (no log-probabilities)``; a key whose rows are all one-hot: ``ECE: n/a, 37 one-hot rows left out
        (...)``.
        """
        if self.ece is None or self.ece_low is None or self.ece_high is None:
            parts = ["ECE: n/a"]
        else:
            interval = f"95% interval {self.ece_low:.3f} to {self.ece_high:.3f}"
            scored = self.labelled - self.one_hot_excluded
            parts = [f"ECE: {self.ece:.3f} (debiased, {interval}) over {scored:,} labelled"]
        if self.one_hot_excluded:
            parts.append(f"{self.one_hot_excluded:,} one-hot rows left out (no log-probabilities)")
        elif self.ece is None:
            parts.append(f"{self.labelled:,} labelled")
        return ", ".join(parts)


def calibration_of(marts: Marts, decision_type: str, candidate: str) -> Calibration:
    """The review week's calibration row of one decision type and candidate (zeros and n/a without one)."""
    row = _one(marts.of_week("calibration"), decision_type, candidate)

    def figure(column: str) -> float | None:  # a column an older pipelines version lacks reads as missing
        value = None if row is None else row.get(column)
        return None if value is None or _missing(value) else float(value)

    return Calibration(
        labelled=_int(row, "labelled"),
        one_hot_excluded=int(figure("one_hot_excluded") or 0),
        ece=figure("ece_debiased"),
        ece_low=figure("ece_low"),
        ece_high=figure("ece_high"),
    )


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
