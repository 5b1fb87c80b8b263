"""The numbers a verdict is decided on, gathered per decision type and candidate from the marts.

Read only through ``dashboards.marts`` frames (report vocabulary). Today's marts split latency by fleet
only and cost by model name: both are taken at the decision type's worst fleet and the candidate's model
name, and say so in ``notes``. ``Maturity`` says whether the review week's outcomes are final (the marts'
``mature`` column), when they will be, and the observed outcome delays (``label_delay``); ``Health`` is
what the health checks (``health``) read.

The precision and severe-error rules read a ``Ledger``: the counts at the candidate's policy, cumulative
over the mature weeks (``policy_evidence``), importable from here.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dashboards.marts import (
    ALL,
    CANDIDATE,
    CANDIDATE_NAME,
    count_of,
    has_value,
    identity_of,
    is_missing,
    row_of,
)
from dashboards.verdict.policy_evidence import (
    Ledger,
    ledger_of,
    ledger_row,
    policy_key_of,
    scored_accepted,
    week_ledger,
)
from pipelines.ledger import NO_POLICY
from pipelines.weeks import as_utc, parse_week

if TYPE_CHECKING:
    import pandas as pd

    from dashboards.marts import Marts
    from dashboards.policies import Replayed

__all__ = [
    "NO_POLICY",
    "DriftReference",
    "Evidence",
    "Health",
    "Ledger",
    "Maturity",
    "Shift",
    "at_coverage",
    "gather",
    "health_of",
    "ledger_of",
    "maturity_of",
    "policy_key_of",
    "week_ledger",
]
"""The evidence's names, the ledger's included (importable from here)."""


@dataclass(frozen=True)
class Maturity:
    """Whether the review week's outcomes are final, and what the outcome delays say of the lag."""

    mature: bool
    week: str
    matures_at: str | None = None
    lag_days: float | None = None
    delay_p99_hours: dict[str, float] = field(default_factory=dict)
    """Observed p99 outcome delay per source (``label_delay`` mart) of ``delay_week``."""
    delay_week: str | None = None
    """The week the delays are read from: the latest whose row was computed at least ``SETTLED_DAYS`` after
    it ended (its slow outcomes in), else the most settled there is (``delay_settled`` false)."""
    delay_settled: bool = True

    def describe(self) -> str:
        """``outcomes of 2026-W48 final`` or ``outcomes of 2026-W48 not final: it matures at ...``."""
        if self.mature:
            return f"outcomes of {self.week} final"
        when = (
            f"it matures at {self.matures_at}"
            if self.matures_at
            else "it matures once the maturity lag passes"
        )
        return f"outcomes of {self.week} not final yet ({when}; rerun pipelines and the review then)"


@dataclass(frozen=True)
class Shift:
    """Confidence of the labelled and unlabelled scored decisions (``evidence`` mart)."""

    labelled: int
    unlabelled: int
    labelled_mean: float
    labelled_sd: float
    unlabelled_mean: float
    unlabelled_sd: float

    @property
    def effect_size(self) -> float:
        """Cohen's d: the difference of means over the pooled standard deviation (0 when both are 0)."""
        n1, n0 = self.labelled, self.unlabelled
        pooled = math.sqrt(
            ((n1 - 1) * self.labelled_sd**2 + (n0 - 1) * self.unlabelled_sd**2) / max(n1 + n0 - 2, 1)
        )
        gap = self.labelled_mean - self.unlabelled_mean
        return 0.0 if pooled == 0 and gap == 0 else gap / pooled if pooled else math.copysign(math.inf, gap)


@dataclass(frozen=True)
class Health:
    """What the health checks read (``health``)."""

    candidate_name: str
    funnel: dict[str, tuple[int, int, int]]
    """Every candidate of the decision type this week: name -> (offered, sampled, labelled)."""
    paired: dict[str, int] = field(default_factory=dict)
    """Other candidate name -> decisions both scored and that have an outcome (``paired`` mart)."""
    label_shift: Shift | None = None


@dataclass(frozen=True)
class DriftReference:
    """Whether the drift figures have anything to compare with."""

    ece_reference_weeks: int
    psi_reference: bool


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
    """Accepted / scored at the policy this week (one definition for every rule)."""
    severe_errors: int
    ece_alert: bool
    psi_bands: tuple[str, ...]
    p99_ms: float
    cost_per_accepted: float
    at_min_coverage: tuple[int, int] | None
    """``(accepted, accepted_correct)`` at the highest threshold reaching the minimum coverage (report)."""
    ledger: Ledger
    maturity: Maturity
    health: Health
    drift: DriftReference
    notes: tuple[str, ...] = field(default=())
    policy: Replayed | None = None
    """The candidate identity's policy replayed on the review week, if one was given."""

    @property
    def week(self) -> str:
        """The review week."""
        return self.maturity.week



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
    agreement = row_of(marts.of_week("agreement"), decision_type, candidate)
    selective = row_of(marts.of_week("selective"), decision_type, candidate)
    drift = row_of(marts.of_week("drift"), decision_type, candidate)
    latency = marts.of_week("latency")
    latency = latency[latency["decision_type"] == decision_type]
    cost = marts.of_week("cost")
    cost = cost[
        (cost["decision_type"] == decision_type) & (cost["model_name"] == identity_of(candidate).model_name)
    ]
    priced = int(cost["scored"].sum())
    bands = (
        ()
        if drift is None
        else tuple(str(drift[c]) for c in ("confidence_psi_band", "mix_psi_band") if not is_missing(drift[c]))
    )
    key = NO_POLICY if policy is None else policy_key_of(policy)
    row = ledger_row(marts, decision_type, candidate, key)
    ledger = ledger_of(row, key) if row is not None else week_ledger(agreement, selective, policy)
    scored_at, accepted_at = scored_accepted(row, selective, policy)
    return Evidence(
        decision_type=decision_type,
        candidate=candidate,
        scored=count_of(agreement, "scored"),
        labelled=count_of(agreement, "labelled"),
        accepted=count_of(selective, "accepted"),
        accepted_labelled=count_of(selective, "accepted_labelled"),
        accepted_correct=count_of(selective, "accepted_correct"),
        coverage=accepted_at / scored_at if scored_at else 0.0,
        severe_errors=count_of(agreement, "severe_errors"),
        ece_alert=drift is not None and bool(drift["ece_alert"]),
        psi_bands=bands,
        p99_ms=float(latency["scorer_p99_ms"].max()) if not latency.empty else math.nan,
        # cost per scored decision / coverage, both at the policy (as the precision rules)
        cost_per_accepted=float(cost["cost_usd"].sum()) / priced * scored_at / accepted_at
        if priced and accepted_at
        else math.nan,
        at_min_coverage=at_coverage(marts, decision_type, candidate, min_coverage),
        ledger=ledger,
        maturity=maturity_of(marts, decision_type, row if row is not None else selective),
        # the labelled-vs-unlabelled confidence does not depend on the policy: any row of the key has it
        health=health_of(
            marts,
            decision_type,
            candidate,
            row if row is not None else ledger_row(marts, decision_type, candidate, NO_POLICY),
        ),
        drift=DriftReference(
            ece_reference_weeks=count_of(drift, "reference_ece_weeks")
            if has_value(drift, "reference_ece_weeks")
            else 0,
            psi_reference=has_value(drift, "confidence_psi") and not is_missing(drift["confidence_psi"]),  # type: ignore[index]
        ),
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



def maturity_of(marts: Marts, decision_type: str, row: pd.Series | None) -> Maturity:
    """The review week's maturity (the row's ``mature``; marts without the column read as mature).

    The outcome delays come from a week old enough for its slow outcomes to have arrived (``settled``): a
    recent week's p99 is cut off at its run's ``as_of`` and reads low.
    """
    mature = not has_value(row, "mature") or bool(row["mature"])  # type: ignore[index]
    matures_at = str(row["matures_at"]) if has_value(row, "matures_at") else None  # type: ignore[index]
    frame = marts.frames.get("label_delay")
    if frame is None or frame.empty or "p99_hours" not in frame:
        return Maturity(mature, marts.week, matures_at)
    delays = frame[(frame["decision_type"] == decision_type) & (frame["week"] <= marts.week)]
    if delays.empty:
        return Maturity(mature, marts.week, matures_at)
    week, is_settled = settled(delays)
    delays = delays[delays["week"] == week]
    lag = float(delays["maturity_lag_days"].iloc[0])
    p99 = {str(r.source): float(r.p99_hours) for r in delays.itertuples() if not is_missing(r.p99_hours)}
    return Maturity(mature, marts.week, matures_at, lag, p99, week, is_settled)


SETTLED_DAYS = 14
"""Days after its end a week's outcome delays are read as complete enough for the maturity warning."""


def settled(delays: pd.DataFrame) -> tuple[str, bool]:
    """The latest week computed ``SETTLED_DAYS`` after it ended (``True``), else the most settled one."""
    weeks = sorted(set(delays["week"]))
    if "as_of" not in delays:
        return weeks[-1], False
    age: dict[str, float] = {}
    for r in delays.itertuples():
        week = str(r.week)
        ended = as_utc(parse_week(week) + dt.timedelta(weeks=1))
        days = (r.as_of - ended).total_seconds() / 86_400
        age[week] = max(age.get(week, -math.inf), days)
    ready = [w for w in weeks if age[w] >= SETTLED_DAYS]
    return (ready[-1], True) if ready else (max(weeks, key=lambda w: age[w]), False)


def health_of(marts: Marts, decision_type: str, candidate: str, row: pd.Series | None) -> Health:
    """The funnel of every candidate of the type, the paired counts and the label shift of this one."""
    name = identity_of(candidate).name or "default"
    funnel = marts.of_week("funnel")
    funnel = funnel[funnel["decision_type"] == decision_type]
    counts = (
        {
            str(r[CANDIDATE_NAME]): (count_of(r, "offered"), count_of(r, "sampled"), count_of(r, "labelled"))
            for _, r in funnel.iterrows()
        }
        if CANDIDATE_NAME in funnel
        else {}
    )
    paired: dict[str, int] = {}
    frame = marts.of_week_if_built("paired")
    if frame is not None and not frame.empty:
        rows = frame[(frame["decision_type"] == decision_type) & (frame["model_key_a"] == ALL)]
        for r in rows.itertuples():
            if name in (r.candidate_a, r.candidate_b):
                paired[str(r.candidate_b if r.candidate_a == name else r.candidate_a)] = int(r.paired)
    shift = None
    if row is not None and not is_missing(row["labelled_confidence_mean"]):
        shift = Shift(
            count_of(row, "labelled"),
            count_of(row, "unlabelled"),
            float(row["labelled_confidence_mean"]),
            float(row["labelled_confidence_sd"]),
            0.0
            if is_missing(row["unlabelled_confidence_mean"])
            else float(row["unlabelled_confidence_mean"]),
            0.0 if is_missing(row["unlabelled_confidence_sd"]) else float(row["unlabelled_confidence_sd"]),
        )
    elif row is not None:
        shift = Shift(count_of(row, "labelled"), count_of(row, "unlabelled"), 0.0, 0.0, 0.0, 0.0)
    return Health(name, counts, paired, shift)
