"""Go, wait or reject per decision type and candidate, from explicit rules over the evidence.

Order: a **reject** rule that fires decides (the candidate cannot pass as it is); else **go** when every
go check passes; else **wait**, with the go checks that failed and, where labels would help, how many
more are needed. Statistical rules need ``min_labelled`` labels before they can reject or pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from scipy.stats import beta

if TYPE_CHECKING:
    from dashboards.config import ReviewConfig
    from dashboards.evidence import Evidence


class Decision(StrEnum):
    """The three verdicts."""

    GO = "go"
    WAIT = "wait"
    REJECT = "reject"


@dataclass(frozen=True)
class Check:
    """One rule as applied: its name, whether it held, and the numbers behind it."""

    rule: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Verdict:
    """The decision, the checks that decided it, and every check applied."""

    decision: Decision
    reasons: tuple[str, ...]
    checks: tuple[Check, ...]
    labels_needed: int


def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The two-sided Clopper-Pearson interval of a binomial proportion (``(0, 1)`` with no trials)."""
    if trials == 0:
        return 0.0, 1.0
    tail = (1 - confidence) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(beta.ppf(1 - tail, successes + 1, trials - successes))
    return low, high


def labels_for_bound(precision: float, have: int, target: float, confidence: float) -> int:
    """More labelled accepted decisions needed for the lower bound to reach ``target`` at ``precision``.

    -1 when the observed precision is not above the target (more labels alone will not do).
    """
    if precision <= target or have == 0:
        return -1
    n = have
    while clopper_pearson(math.floor(precision * n), n, confidence)[0] < target:
        n = max(n + 1, math.ceil(n * 1.25))
        if n > 10_000_000:
            return -1
    low_n = max(have, n * 4 // 5)
    while low_n < n and clopper_pearson(math.floor(precision * low_n), low_n, confidence)[0] < target:
        low_n += max(1, (n - low_n) // 8)
    return max(0, min(n, low_n) - have)


def _usd(value: float) -> str:
    return "no accepted decision to price: n/a" if math.isnan(value) else f"${value:.5f}"


def reject_checks(e: Evidence, c: ReviewConfig) -> list[Check]:
    """Rules any one of which rejects (statistical ones only with enough labels)."""
    enough = e.labelled >= c.min_labelled
    checks = [
        Check(
            "p99 within hard budget",
            not e.p99_ms > c.p99_hard_ms,
            f"scorer p99 {e.p99_ms:.0f} ms, hard budget {c.p99_hard_ms:.0f} ms",
        ),
        Check(
            "cost within hard budget",
            not e.cost_per_accepted > c.cost_hard_usd,
            f"{_usd(e.cost_per_accepted)} per accepted, hard budget ${c.cost_hard_usd}",
        ),
    ]
    if enough:
        rate = e.severe_errors / e.labelled
        checks.append(
            Check(
                "severe-error rate within limit",
                rate <= c.max_severe_rate,
                f"{e.severe_errors} severe / {e.labelled} labelled = {rate:.2%}, "
                f"limit {c.max_severe_rate:.2%}",
            )
        )
        if e.at_min_coverage is not None:
            accepted, correct = e.at_min_coverage
            high = clopper_pearson(correct, accepted, c.confidence)[1]
            checks.append(
                Check(
                    "precision can reach target at minimum coverage",
                    high >= c.precision_target,
                    f"at coverage >= {c.min_coverage:.0%}: {correct}/{accepted} correct, "
                    f"upper bound {high:.3f} vs target {c.precision_target}",
                )
            )
    return checks


@dataclass(frozen=True)
class Accepted:
    """What the go rule's precision and coverage are computed on, and where it comes from."""

    correct: int
    labelled: int
    coverage: float
    source: str
    out_of_sample: bool = field(kw_only=True)


def accepted_of(e: Evidence) -> Accepted:
    """The policy's replay on the review week when it is out of sample, else the week's own thresholds."""
    if e.policy is not None and not e.policy.in_sample:
        p = e.policy
        source = f"out of sample: policy chosen on {p.policy.chosen_on}, replayed on {p.week}"
        return Accepted(
            p.count("accepted_correct"), p.count("accepted_labelled"), p.coverage, source, out_of_sample=True
        )
    source = "in-sample: the week's own thresholds" + (
        f" (the policy was chosen on {e.policy.week} itself)" if e.policy is not None else ""
    )
    return Accepted(e.accepted_correct, e.accepted_labelled, e.coverage, source, out_of_sample=False)


def go_checks(e: Evidence, c: ReviewConfig) -> list[Check]:
    """Rules that must all hold for go."""
    a = accepted_of(e)
    low, _ = clopper_pearson(a.correct, a.labelled, c.confidence)
    blocking = {"moderate": {"moderate", "significant"}, "significant": {"significant"}}[c.block_on_psi_band]
    policy = (
        [
            Check(
                "out-of-sample policy",
                a.out_of_sample,
                a.source
                + (
                    ""
                    if a.out_of_sample
                    else "; go needs a policy chosen on another week (--policy), or require_policy: false"
                ),
            )
        ]
        if c.require_policy
        else []
    )
    return [
        Check("enough labels", e.labelled >= c.min_labelled, f"{e.labelled} labelled, need {c.min_labelled}"),
        *policy,
        Check(
            "precision lower bound meets target",
            low >= c.precision_target,
            f"{a.source}: {a.correct}/{a.labelled} accepted correct, lower bound {low:.3f} "
            f"vs target {c.precision_target}",
        ),
        Check(
            "coverage above minimum",
            a.coverage >= c.min_coverage,
            f"coverage {a.coverage:.1%} ({a.source}), minimum {c.min_coverage:.0%}",
        ),
        Check(
            "no ECE alert",
            not (c.block_on_ece_alert and e.ece_alert),
            "ECE alert raised" if e.ece_alert else "no ECE alert",
        ),
        Check(
            "PSI below blocking band",
            not blocking & set(e.psi_bands),
            f"PSI bands {', '.join(e.psi_bands) or 'none'}; blocking from {c.block_on_psi_band}",
        ),
        Check(
            "p99 within budget",
            e.p99_ms <= c.p99_budget_ms,
            f"scorer p99 {e.p99_ms:.0f} ms, budget {c.p99_budget_ms:.0f} ms",
        ),
        Check(
            "cost within budget",
            e.cost_per_accepted <= c.cost_budget_usd,
            f"{_usd(e.cost_per_accepted)} per accepted, budget ${c.cost_budget_usd}",
        ),
        Check(
            "severe-error rate within limit",
            e.labelled > 0 and e.severe_errors / e.labelled <= c.max_severe_rate,
            f"{e.severe_errors} severe of {e.labelled} labelled",
        ),
    ]


def decide(e: Evidence, c: ReviewConfig) -> Verdict:
    """Apply the reject rules, then the go rules; anything else waits."""
    rejects, gos = reject_checks(e, c), go_checks(e, c)
    checks = (*rejects, *gos)
    if failed := [f"failed: {k.rule} ({k.detail})" for k in rejects if not k.passed]:
        return Verdict(Decision.REJECT, tuple(failed), checks, 0)
    failed = [f"failed: {k.rule} ({k.detail})" for k in gos if not k.passed]
    if not failed:
        return Verdict(Decision.GO, ("every go rule holds",), checks, 0)
    needed = max(0, c.min_labelled - e.labelled)
    a = accepted_of(e)
    precision = a.correct / a.labelled if a.labelled else 0.0
    more = labels_for_bound(precision, a.labelled, c.precision_target, c.confidence)
    if more > 0:
        share = a.labelled / e.labelled if e.labelled else 1.0
        needed = max(needed, math.ceil(more / share))
    if needed:
        failed.append(
            f"about {needed:,} more labelled decisions needed (at the observed precision and coverage)"
        )
    return Verdict(Decision.WAIT, tuple(failed), checks, needed)
