"""The numbers a verdict is decided on, gathered per decision type and candidate from the marts.

Read only through ``dashboards.marts`` frames (report vocabulary). Today's marts split latency by fleet
only and cost by model name: both are taken at the decision type's worst fleet and the candidate's model
name, and say so in ``notes``. ``calibration_of`` is what the report shows of a candidate's calibration
(not a verdict input: the ECE rule reads the ``drift`` mart's alert).

The precision and severe-error rules read a ``Ledger``: the ``evidence`` mart's row of the candidate at
its policy (the policy file's sha256, first 12 hex, or ``none``: the week's own thresholds), whose counts
are cumulative over the mature weeks since the ledger last reset (``pipelines/ledger.py``). Marts without
that row (an older pipelines version, or a policy the pipelines run was not given) fall back to the review
week's counts alone, as one look, and say so. ``Maturity`` says whether the review week's outcomes are
final (the marts' ``mature`` column), when they will be, and the observed outcome delays (``label_delay``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dashboards.marts import ALL, CANDIDATE, CANDIDATE_NAME, identity_of

if TYPE_CHECKING:
    import pandas as pd

    from dashboards.marts import Marts
    from dashboards.policies import Replayed

NO_POLICY = "none"
"""The ledger's policy key of the week's own per-option thresholds (``pipelines.ledger.NO_POLICY``)."""


@dataclass(frozen=True)
class Ledger:
    """Cumulative mature labelled counts at the candidate's policy (the ``evidence`` mart's ledger)."""

    policy: str
    accepted_labelled: int
    accepted_correct: int
    severe_errors: int
    weeks: int
    """Mature weeks with decisions counted since the last reset."""
    looks: int
    first_week: str | None
    counted_through: str | None
    """The last mature week the counts hold (None: none yet)."""
    reset_reason: str
    reset_week: str | None
    reset_from: str | None
    provisional_labelled: int = 0
    """Labelled accepted decisions of weeks not yet mature (not in the counts)."""
    provisional_correct: int = 0
    from_mart: bool = True
    """False: the review week's counts alone (no ledger row), one look."""
    in_sample: bool = False

    @property
    def provisional_precision(self) -> float:
        """Precision of the weeks not yet mature (0 without any)."""
        return self.provisional_correct / self.provisional_labelled if self.provisional_labelled else 0.0

    def describe(self) -> str:
        """Where the counts come from.

        E.g. ``ledger at policy 1a2b3c4d5e6f: 2026-W44..2026-W47 (3 weeks, 4 looks; first look at 2026-W44)``.
        """
        policy = "the week's own thresholds" if self.policy == NO_POLICY else f"policy {self.policy}"
        if not self.from_mart:
            return (
                f"{policy}, this week's labels only (no evidence ledger for it: pass the policy to "
                "`pipelines run --policy` to accumulate)"
            )
        span = f"{self.first_week}..{self.counted_through}" if self.first_week else "no mature week yet"
        reset = self.reset_reason + (f" from {self.reset_from}" if self.reset_from else "")
        return (
            f"ledger at {policy}: {span} ({self.weeks} weeks, {self.looks} looks; {reset} at "
            f"{self.reset_week})"
        )


@dataclass(frozen=True)
class Maturity:
    """Whether the review week's outcomes are final, and what the outcome delays say of the lag."""

    mature: bool
    week: str
    matures_at: str | None = None
    lag_days: float | None = None
    delay_p99_hours: dict[str, float] = field(default_factory=dict)
    """Observed p99 outcome delay per source in the week (``label_delay`` mart)."""

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
    """What the health checks read (``dashboards.health``)."""

    candidate_name: str
    funnel: dict[str, tuple[int, int, int]]
    """Every candidate of the decision type this week: name -> (offered, scored, labelled)."""
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
    key = NO_POLICY if policy is None else policy_key_of(policy)
    row = _ledger_row(marts, decision_type, candidate, key)
    ledger = ledger_of(row, key) if row is not None else week_ledger(agreement, selective, policy)
    scored_at, accepted_at = _scored_accepted(row, selective, policy)
    return Evidence(
        decision_type=decision_type,
        candidate=candidate,
        scored=_int(agreement, "scored"),
        labelled=_int(agreement, "labelled"),
        accepted=_int(selective, "accepted"),
        accepted_labelled=_int(selective, "accepted_labelled"),
        accepted_correct=_int(selective, "accepted_correct"),
        coverage=accepted_at / scored_at if scored_at else 0.0,
        severe_errors=_int(agreement, "severe_errors"),
        ece_alert=drift is not None and bool(drift["ece_alert"]),
        psi_bands=bands,
        p99_ms=float(latency["scorer_p99_ms"].max()) if not latency.empty else math.nan,
        cost_per_accepted=float(cost["cost_usd"].sum()) / accepted if accepted else math.nan,
        at_min_coverage=at_coverage(marts, decision_type, candidate, min_coverage),
        ledger=ledger,
        maturity=maturity_of(marts, decision_type, row if row is not None else selective),
        # the labelled-vs-unlabelled confidence does not depend on the policy: any row of the key has it
        health=health_of(
            marts,
            decision_type,
            candidate,
            row if row is not None else _ledger_row(marts, decision_type, candidate, NO_POLICY),
        ),
        drift=DriftReference(
            ece_reference_weeks=_int(drift, "reference_ece_weeks")
            if _has(drift, "reference_ece_weeks")
            else 0,
            psi_reference=_has(drift, "confidence_psi") and not _missing(drift["confidence_psi"]),  # type: ignore[index]
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


def policy_key_of(policy: Replayed) -> str:
    """The ledger key of a replayed policy: its file's sha256, first 12 hex (``pipelines.ledger``)."""
    return policy.sha256[:12]


def _week(marts: Marts, mart: str) -> pd.DataFrame | None:
    """The review week's rows of an optional mart (None when the marts were built without it)."""
    return marts.of_week(mart) if mart in marts.frames else None


def _has(row: pd.Series | None, column: str) -> bool:
    return row is not None and column in row.index and not _missing(row[column])


def _ledger_row(marts: Marts, decision_type: str, candidate: str, key: str) -> pd.Series | None:
    frame = _week(marts, "evidence")
    if frame is None or frame.empty or "policy" not in frame:
        return None
    rows = frame[
        (frame["decision_type"] == decision_type) & (frame[CANDIDATE] == candidate) & (frame["policy"] == key)
    ]
    return None if rows.empty or _missing(rows.iloc[0]["looks"]) else rows.iloc[0]


def ledger_of(row: pd.Series, key: str) -> Ledger:
    """The ledger an ``evidence`` row holds."""

    def text(column: str) -> str | None:
        return None if _missing(row[column]) else str(row[column])

    return Ledger(
        policy=key,
        accepted_labelled=_int(row, "ledger_accepted_labelled"),
        accepted_correct=_int(row, "ledger_accepted_correct"),
        severe_errors=_int(row, "ledger_severe_errors"),
        weeks=_int(row, "weeks_covered"),
        looks=_int(row, "looks"),
        first_week=text("ledger_first_week"),
        counted_through=text("counted_through"),
        reset_reason=text("reset_reason") or "first look",
        reset_week=text("reset_week"),
        reset_from=text("reset_from"),
        provisional_labelled=_int(row, "provisional_accepted_labelled"),
        provisional_correct=_int(row, "provisional_accepted_correct"),
        in_sample=key == NO_POLICY,
    )


def week_ledger(agreement: pd.Series | None, selective: pd.Series | None, policy: Replayed | None) -> Ledger:
    """No ledger row: the review week's own counts as a ledger of one look (said in ``describe``)."""
    if policy is not None:
        labelled, correct = policy.count("accepted_labelled"), policy.count("accepted_correct")
        severe, key = policy.count("severe_errors"), policy_key_of(policy)
    else:
        labelled, correct = _int(selective, "accepted_labelled"), _int(selective, "accepted_correct")
        severe, key = _int(agreement, "severe_errors"), NO_POLICY
    return Ledger(
        key,
        labelled,
        correct,
        severe,
        weeks=1,
        looks=1,
        first_week=None,
        counted_through=None,
        reset_reason="no ledger",
        reset_week=None,
        reset_from=None,
        from_mart=False,
        in_sample=policy is None,
    )


def _scored_accepted(
    row: pd.Series | None, selective: pd.Series | None, policy: Replayed | None
) -> tuple[int, int]:
    """Scored and accepted at the policy this week: the ledger row, else the replay, else ``selective``."""
    if row is not None:
        return _int(row, "scored"), _int(row, "accepted")
    if policy is not None:
        return policy.count("scored"), policy.count("accepted")
    return _int(selective, "scored"), _int(selective, "accepted")


def maturity_of(marts: Marts, decision_type: str, row: pd.Series | None) -> Maturity:
    """The review week's maturity (the row's ``mature``; marts without the column read as mature)."""
    mature = not _has(row, "mature") or bool(row["mature"])  # type: ignore[index]
    matures_at = str(row["matures_at"]) if _has(row, "matures_at") else None  # type: ignore[index]
    delays = _week(marts, "label_delay")
    if delays is None or delays.empty or "p99_hours" not in delays:
        return Maturity(mature, marts.week, matures_at)
    delays = delays[delays["decision_type"] == decision_type]
    lag = float(delays["maturity_lag_days"].iloc[0]) if not delays.empty else None
    p99 = {str(r.source): float(r.p99_hours) for r in delays.itertuples() if not _missing(r.p99_hours)}
    return Maturity(mature, marts.week, matures_at, lag, p99)


def health_of(marts: Marts, decision_type: str, candidate: str, row: pd.Series | None) -> Health:
    """The funnel of every candidate of the type, the paired counts and the label shift of this one."""
    name = identity_of(candidate).name or "default"
    funnel = marts.of_week("funnel")
    funnel = funnel[funnel["decision_type"] == decision_type]
    counts = (
        {
            str(r[CANDIDATE_NAME]): (_int(r, "offered"), _int(r, "scored"), _int(r, "labelled"))
            for _, r in funnel.iterrows()
        }
        if CANDIDATE_NAME in funnel
        else {}
    )
    paired: dict[str, int] = {}
    frame = _week(marts, "paired")
    if frame is not None and not frame.empty:
        rows = frame[(frame["decision_type"] == decision_type) & (frame["model_key_a"] == ALL)]
        for r in rows.itertuples():
            if name in (r.candidate_a, r.candidate_b):
                paired[str(r.candidate_b if r.candidate_a == name else r.candidate_a)] = int(r.paired)
    shift = None
    if row is not None and not _missing(row["labelled_confidence_mean"]):
        shift = Shift(
            _int(row, "labelled"),
            _int(row, "unlabelled"),
            float(row["labelled_confidence_mean"]),
            float(row["labelled_confidence_sd"]),
            0.0 if _missing(row["unlabelled_confidence_mean"]) else float(row["unlabelled_confidence_mean"]),
            0.0 if _missing(row["unlabelled_confidence_sd"]) else float(row["unlabelled_confidence_sd"]),
        )
    elif row is not None:
        shift = Shift(_int(row, "labelled"), _int(row, "unlabelled"), 0.0, 0.0, 0.0, 0.0)
    return Health(name, counts, paired, shift)
