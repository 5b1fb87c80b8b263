"""The audited gate: is the candidate's correctness within the margin of production's, on the same decisions?

Read from the ``audit_strata`` mart (each week's audit sample: per stratum its labelled decisions, its
audited decisions, and over those the candidate scored, who was right). The gate's statistic is the paired
difference (candidate right minus production right on each audited decision, ``docs/review.md``):

- **Pooled over weeks.** Every week up to the review week whose sample has an audit in each stratum is one
  set of strata of a stratified sample (weeks whose sample still has an unaudited stratum are left out and
  named). The estimate is the stratified mean of the difference over the decisions the candidate scored;
  its lower bound is MOVER over continuity-corrected Wilson intervals per stratum with the two sides'
  correlation (Zou & Donner 2008; Newcombe 1998), the same formula as the ``audited_difference`` mart's.
- **Spent over looks.** The review of the k-th week with audits of this candidate is look k; it tests at
  ``alpha_k = alpha * 6 / (pi^2 k^2)`` (alpha = ``(1 - confidence) / 2``), so over every look there will
  ever be, the chance that a candidate worse by the margin passes at least once is at most
  ``sum_k alpha_k = alpha`` (a union bound over looks: valid for any number of looks and any stopping).
- **Auditor error.** From the double audits of the pooled weeks (``auditor_agreement``): two auditors
  each wrong with rate e (apart) disagree with probability at least 2e(1 - e), so e is at most
  ``(1 - sqrt(1 - 2 d))/2`` for a disagreement rate d (``auditor_error``: from d's estimate, and from its
  Wilson upper limit at the look's level, shown). An auditor's error, wrong answers spread over the other
  options, moves the expected difference towards zero (right on one side becomes wrong on it, or both
  wrong) by at most a share 2e of it (e k/(k - 1) with k options): the gate asks
  ``low >= -margin (1 - 2 e)``. The absolute correctness figures move by up to e: where the estimate
  exceeds half the margin, the gate waits and says so, whatever the bound (the auditors' disagreements
  are listed in ``auditor_disagreements``).
- **Fail closed.** Where a decision type has an audit sample, the gate applies: a review week whose sample
  has a stratum without audits, a candidate without audited decisions, or a bound below ``-margin`` fails
  it, with the reason and the audits still needed. Without any audit sample of the type there is no gate
  (the review says agreement is all there is) unless ``require_audits`` is set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np

from dashboards.intervals import wilson, wilson_cc
from dashboards.marts import CANDIDATE
from dashboards.verdict.checks import Check
from dashboards.verdict.rules import AUDITED

if TYPE_CHECKING:
    import pandas as pd

    from dashboards.config import ReviewConfig
    from dashboards.marts import Marts

RULE = AUDITED
STRATUM_COUNTS = ("stratum_decisions", "audited", "units")
STRATUM_SUMS = ("model_right", "production_right", "right_vs_wrong", "wrong_vs_right")


def look_alpha(alpha: float, look: int) -> float:
    """The level of look ``look`` (1, 2, ...): ``alpha * 6 / (pi^2 look^2)``, summing to ``alpha``."""
    return alpha * 6 / (math.pi**2 * look**2)


@dataclass(frozen=True)
class Paired:
    """The pooled paired difference: estimate, bounds at ``z``, and both sides' correctness."""

    diff: float
    low: float
    high: float
    candidate: float
    production: float
    audited: int
    disagreements_audited: float
    """Audited decisions where the candidate's proposal differs from production's outcome: what the bound's
    width rests on."""


def paired(strata: pd.DataFrame, z: float) -> Paired:
    """The difference over the candidate's scored decisions of every stratum row (``audit_strata``).

    Each stratum's two shares are over its discordant decisions (where one can be right and the other
    wrong), weighted by the stratum's part of the candidate's decisions times its discordant share.
    """
    rows = strata[(strata["units"] > 0) & (strata["audited"] > 0)]
    n, k = rows["units"].to_numpy(float), rows["discordant"].to_numpy(float)
    big = rows["stratum_decisions"].to_numpy(float) * n / rows["audited"].to_numpy(float)
    w, total = big / big.sum(), big.sum()
    rr, ww = rows["right_vs_wrong"].to_numpy(float), rows["wrong_vs_right"].to_numpy(float)
    candidate = float(np.sum(w * rows["model_right"].to_numpy(float) / n))
    production = float(np.sum(w * rows["production_right"].to_numpy(float) / n))
    audited = int(n.sum())
    diff = float(np.sum(w * (rr - ww) / n))
    extra = float(np.sum(w * ((rr - ww) / n - diff) ** 2)) / total
    some = k > 0
    w, n, k, rr, ww = w[some], n[some], k[some], rr[some], ww[some]
    r, v, q = rr / k, ww / k, k / n
    (r_lo, r_hi), (v_lo, v_hi) = wilson_cc(r, k, z), wilson_cc(v, k, z)
    u = w * q
    a_below, a_above = float(np.sum((u * (r - r_lo)) ** 2)), float(np.sum((u * (r_hi - r)) ** 2))
    b_below, b_above = float(np.sum((u * (v - v_lo)) ** 2)), float(np.sum((u * (v_hi - v)) ** 2))
    var_a, var_b = float(np.sum(u * u * r * (1 - r) / k)), float(np.sum(u * u * v * (1 - v) / k))
    cov = -float(np.sum(u * u * r * v / k))
    rho = max(min(cov / math.sqrt(var_a * var_b), 1.0), -1.0) if var_a > 0 and var_b > 0 else 0.0
    extra += float(np.sum(w * w * (r - v) ** 2 * q * (1 - q) / n))
    down = a_below + b_above - 2 * rho * math.sqrt(a_below * b_above) + z * z * extra
    up = a_above + b_below - 2 * rho * math.sqrt(a_above * b_below) + z * z * extra
    low, high = diff - math.sqrt(max(down, 0.0)), diff + math.sqrt(max(up, 0.0))
    return Paired(diff, low, high, candidate, production, audited, float(k.sum()))


@dataclass(frozen=True)
class Pool:
    """The weeks the gate pools for one candidate, the weeks left out, and the look's number."""

    strata: pd.DataFrame
    weeks: tuple[str, ...]
    incomplete: tuple[str, ...]
    look: int


def pool(marts: Marts, decision_type: str, candidate: str) -> Pool | None:
    """The candidate's audit strata up to the review week (``None``: the type has no audit sample)."""
    frame = marts.frames.get("audit_strata")
    if frame is None or frame.empty:
        return None
    frame = frame[(frame["decision_type"] == decision_type) & (frame["week"] <= marts.week)]
    if frame.empty:
        return None
    mine = frame[frame[CANDIDATE] == candidate]
    by_week = mine.groupby(["week", "sample_id"])["audited"].min()
    complete = {w for (w, _), least in by_week.items() if least > 0}
    incomplete = tuple(sorted({w for (w, _), least in by_week.items() if least == 0}))
    weeks = tuple(sorted(complete - set(incomplete)))
    return Pool(mine[mine["week"].isin(weeks)], weeks, incomplete, len({w for w, _ in by_week.index}))


@dataclass(frozen=True)
class AuditorError:
    """The per-auditor error rate the double audits imply: estimate and upper limit (``None``: no pairs)."""

    pairs: int
    disagreed: int
    estimate: float
    upper: float


def _error_of(rate: float) -> float:
    """The largest per-auditor error e consistent with disagreement rate ``rate``: 2e(1 - e) <= rate."""
    return (1 - math.sqrt(max(1 - 2 * min(rate, 0.5), 0.0))) / 2


def auditor_error(marts: Marts, decision_type: str, weeks: tuple[str, ...], z: float) -> AuditorError | None:
    """The auditor error rate of ``weeks``' double audits of the type (``None`` without any pair)."""
    frame = marts.frames.get("auditor_agreement")
    if frame is None or frame.empty:
        return None
    rows = frame[(frame["decision_type"] == decision_type) & frame["week"].isin(weeks)]
    pairs = int(rows["double_audited"].sum())
    if not pairs:
        return None
    disagreed = pairs - int(rows["agreed"].sum())
    _, upper = wilson(np.array([disagreed / pairs]), np.array([float(pairs)]), z)
    return AuditorError(pairs, disagreed, _error_of(disagreed / pairs), _error_of(float(upper[0])))


def _needed(p: Paired, margin: float) -> str:
    """How many more audited disagreements would lift the bound to ``-margin`` at today's estimate."""
    if p.diff <= -margin:
        return "the estimate itself is below the margin: more audits will not lift the bound"
    scale = ((p.diff - p.low) / (p.diff + margin)) ** 2
    return (f"about {math.ceil(p.disagreements_audited * (scale - 1)):,} more audited decisions where the "
            f"two differ would lift it at today's estimate")


def gate(marts: Marts, decision_type: str, candidate: str, config: ReviewConfig) -> Check | None:
    """The audited gate for ``candidate`` (``None``: no audit sample of the type and none required)."""
    found = pool(marts, decision_type, candidate)
    if found is None:
        if config.require_audits:
            return Check(RULE, passed=False, detail="no audit sample of this decision type: audits are "
                         "required (semif-shadow audit sample, then answer it)")
        return None
    if marts.week in found.incomplete:
        return Check(RULE, passed=False, detail=f"{marts.week}'s audit sample has a stratum without any "
                     "audit of this candidate's decisions: answer at least one in each (audit serve)")
    if found.strata.empty:
        return Check(RULE, passed=False, detail="no audited decision of this candidate in the audit samples")
    alpha = look_alpha((1 - config.confidence) / 2, found.look)
    z = NormalDist().inv_cdf(1 - alpha)
    p = paired(found.strata, z)
    error = auditor_error(marts, decision_type, found.weeks, z)
    floor = config.correctness_margin * (1 - 2 * (error.estimate if error else 0.0))
    passed = p.low >= -floor
    left_out = f"; left out, a stratum unaudited: {', '.join(found.incomplete)}" if found.incomplete else ""
    detail = (f"candidate minus production on the same {p.audited:,} audited decisions "
              f"({len(found.weeks)} week{'s' if len(found.weeks) > 1 else ''}{left_out}): {p.diff:+.3f}, "
              f"lower bound {p.low:+.3f} at look {found.look} (one-sided {1 - alpha:.2%}) "
              f"{'is at least' if passed else 'is below'} -{floor:.4f} ({_error_text(error)})")
    if error is not None and error.estimate > config.correctness_margin / 2:
        return Check(RULE, passed=False, detail=(
            f"{detail}; the auditors disagree on {error.disagreed} of {error.pairs:,} double audits: an "
            f"auditor error near {error.estimate:.1%} moves audited correctness by as much, over half the "
            "margin: resolve the disagreements (auditor_disagreements) or audit more pairs"))
    return Check(RULE, passed, detail if passed else f"{detail}; {_needed(p, config.correctness_margin)}")


def _error_text(error: AuditorError | None) -> str:
    if error is None:
        return "auditor error not measured: no double audits"
    return (f"the margin less twice the auditor error {error.estimate:.1%} (at most {error.upper:.1%}), from "
            f"{error.disagreed} disagreements in {error.pairs:,} double audits")
