"""Health checks that block go: is the evidence a fair sample of what the candidate would do?

As experimentation platforms check a sample ratio before reading any metric:

- **sample ratio** (``SRM``): each candidate's sampled / offered against the configured sampling rate of
  the decision type (``sampling_rates`` in the review config: a two-sided exact binomial test); without a
  configured rate, the candidates of the type against each other (chi-square test of homogeneity of
  sampled vs not sampled). Fails when the p-value is below ``srm_p_value``: the sampler did not draw the
  share it was asked for (a broken or biased sampler). What happened to a sampled decision afterwards (a
  queue drop, a timeout, a scorer error) is not a sampling fault: the funnel counts it by reason.
- **overlap** (``OVERLAP``): of each pair of candidates of the type, the decisions both scored and that
  have an outcome (the ``paired`` mart) as a share of the larger one's labelled decisions. Below
  ``min_overlap`` a paired comparison describes a different population than either candidate's numbers.
- **labels like the rest** (``LABEL_SHIFT``): the labelled and unlabelled scored decisions' confidence
  (``evidence`` mart, on the confidence grid, one-hot rows left out) as a standardized mean difference
  (Cohen's d with the pooled sd: an effect size, not a p-value, so it does not fire on a negligible
  difference in a large week). It fails when the 95% interval of d lies wholly beyond ``max_label_shift``
  (se of d: sqrt(1/n1 + 1/n0 + d^2 / (2 (n1 + n0))), Hedges and Olkin 1985), so that a few unlabelled
  decisions of a small identity do not fail it by chance: the labels are then a skewed sample.

``label_delay_warning`` compares the pipelines' maturity lag with the observed p99 outcome delay
(``label_delay`` mart): a warning, never a gate.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from scipy.stats import binomtest, chi2_contingency

from dashboards.intervals import Z95
from dashboards.verdict.checks import Check
from dashboards.verdict.rules import LABEL_DELAY, LABEL_SHIFT, OVERLAP, SRM

if TYPE_CHECKING:
    from dashboards.config import ReviewConfig
    from dashboards.verdict.evidence import Evidence


def _check(rule: str, *, passed: bool, detail: str) -> Check:
    return Check(rule, passed, detail)


def health_checks(e: Evidence, c: ReviewConfig) -> list[Check]:
    """The three health checks of one candidate."""
    return [srm_check(e, c), overlap_check(e, c), label_shift_check(e, c)]


def srm_check(e: Evidence, c: ReviewConfig) -> Check:
    """Sampled / offered of the candidate against the configured rate, or the candidates vs each other."""
    funnel = e.health.funnel
    mine = funnel.get(e.health.candidate_name)
    if mine is None or mine[0] == 0:
        return _check(
            SRM, passed=False, detail="no funnel row for the candidate this week: sample ratio unknown"
        )
    offered, sampled = mine[0], mine[1]
    rate = c.sampling_rates.get(e.decision_type)
    if rate is not None:
        p = (
            float(binomtest(sampled, offered, rate).pvalue)
            if 0 < rate < 1
            else float(sampled == round(rate * offered))
        )
        return _check(
            SRM,
            passed=p >= c.srm_p_value,
            detail=f"sampled {sampled:,} of {offered:,} offered ({sampled / offered:.2%}) vs configured "
            f"sampling {rate:.2%}: p = {p:.2g}, fails below {c.srm_p_value}",
        )
    rows = [(name, o, s) for name, (o, s, _) in sorted(funnel.items()) if o > 0]
    if len(rows) < 2:
        return _check(
            SRM,
            passed=True,
            detail="one candidate and no configured sampling rate (sampling_rates): nothing to compare",
        )
    table = [[s, o - s] for _, o, s in rows]
    p = 1.0 if all(s == o for _, o, s in rows) else float(chi2_contingency(table).pvalue)
    shares = ", ".join(f"{name} {s / o:.2%}" for name, o, s in rows)
    return _check(
        SRM,
        passed=p >= c.srm_p_value,
        detail=f"sampled / offered per candidate: {shares} (chi-square p = {p:.2g}, "
        f"fails below {c.srm_p_value})",
    )


def overlap_check(e: Evidence, c: ReviewConfig) -> Check:
    """Paired decisions with every other candidate of the type, as a share of the larger side's labelled."""
    funnel, name = e.health.funnel, e.health.candidate_name
    others = [other for other in sorted(funnel) if other != name]
    if not others:
        return _check(OVERLAP, passed=True, detail="one candidate: no paired comparison")
    mine = funnel.get(name, (0, 0, 0))[2]
    shares = []
    for other in others:
        larger = max(mine, funnel[other][2])
        paired = e.health.paired.get(other, 0)
        shares.append((other, paired / larger if larger else 1.0, paired))
    worst = min(shares, key=lambda s: s[1])
    detail = "; ".join(
        f"with {o}: {n:,} paired = {s:.0%} of the larger side's labelled" for o, s, n in shares
    )
    return _check(OVERLAP, passed=worst[1] >= c.min_overlap, detail=f"{detail}; minimum {c.min_overlap:.0%}")


def label_shift_check(e: Evidence, c: ReviewConfig) -> Check:
    """Cohen's d of confidence, labelled against unlabelled scored decisions."""
    shift = e.health.label_shift
    if shift is None:
        return _check(
            LABEL_SHIFT, passed=False, detail="not measured: the marts have no evidence row for the candidate"
        )
    if shift.unlabelled == 0:
        return _check(LABEL_SHIFT, passed=True, detail="every scored decision is labelled")
    if shift.labelled == 0:
        return _check(LABEL_SHIFT, passed=False, detail="no labelled decision to compare")
    d = shift.effect_size
    n1, n0 = shift.labelled, shift.unlabelled
    margin = Z95 * math.sqrt(1 / n1 + 1 / n0 + d * d / (2 * (n1 + n0))) if math.isfinite(d) else 0.0
    return _check(
        LABEL_SHIFT,
        passed=abs(d) - margin <= c.max_label_shift,
        detail=f"confidence of labelled {shift.labelled_mean:.3f} vs unlabelled {shift.unlabelled_mean:.3f} "
        f"({shift.labelled:,} vs {shift.unlabelled:,}): standardized difference {d:+.2f} "
        f"(95% interval ±{margin:.2f}), fails when the interval lies beyond ±{c.max_label_shift}",
    )


def _of(e: Evidence) -> str:
    week, settled = e.maturity.delay_week, e.maturity.delay_settled
    if week is None:
        return "the review week"
    return f"{week}" if settled else f"{week}, too recent for its slowest outcomes: the p99 may read low"


def label_delay_warning(e: Evidence) -> list[Check]:
    """A warning per outcome source whose observed p99 delay exceeds the configured maturity lag."""
    lag = e.maturity.lag_days
    if lag is None:
        return []
    return [
        _check(
            LABEL_DELAY,
            passed=p99 / 24 <= lag,
            detail=f"{source or 'outcomes'}: p99 delay {p99 / 24:.1f} days vs PIPELINES_MATURITY_LAG_DAYS "
            f"{lag:g}; recommended lag {math.ceil(p99 / 24)} days (label_delay mart, {_of(e)})",
        )
        for source, p99 in sorted(e.maturity.delay_p99_hours.items())
    ]
