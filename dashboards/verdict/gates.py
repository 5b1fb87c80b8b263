"""The rules a verdict applies: reject rules (any one that fails rejects) and go gates (all must hold).

Each returns ``Check``s (``checks``) named, and given their kind, by the rule book (``rules``); the
verdict (``decision``) decides on them with the health checks (``health``) and the audited gate
(``audited``). The statistical rules read the evidence ledger at the policy through anytime-valid bounds
(``pipelines.confseq``, one-sided at ``eta.alpha_of``). A drift figure with no reference week yet fails as
``no reference yet``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dashboards.verdict.checks import NO_REFERENCE, Check
from dashboards.verdict.eta import alpha_of
from dashboards.verdict.rules import (
    COST,
    COST_HARD,
    COVERAGE,
    ECE,
    ENOUGH,
    MATURE,
    P99,
    P99_HARD,
    POLICY,
    PRECISION,
    PRECISION_REACHABLE,
    PSI,
    SEVERE,
    SEVERE_REJECT,
)
from pipelines.confseq import lower_bound, upper_bound

if TYPE_CHECKING:
    from dashboards.config import ReviewConfig
    from dashboards.verdict.evidence import Evidence



@dataclass(frozen=True)
class Accepted:
    """What the precision rules are computed on (the ledger at the policy) and the week's coverage."""

    correct: int
    labelled: int
    coverage: float
    source: str
    out_of_sample: bool = field(kw_only=True)


def accepted_of(e: Evidence) -> Accepted:
    """The ledger's cumulative mature counts at the policy and the week's coverage at it."""
    g = e.ledger
    return Accepted(
        g.accepted_correct,
        g.accepted_labelled,
        e.coverage,
        source_of(e),
        out_of_sample=e.policy is not None and not e.policy.in_sample,
    )


def source_of(e: Evidence) -> str:
    """Where the precision counts come from: in or out of sample, and the ledger (``Ledger.describe``)."""
    if e.policy is None:
        return f"in-sample: {e.ledger.describe()}"
    chosen = e.policy.policy.chosen_on
    if e.policy.in_sample:
        return f"in-sample: policy chosen on the review week {chosen} itself, {e.ledger.describe()}"
    return f"out of sample: policy chosen on {chosen}, {e.ledger.describe()}"


def _usd(value: float) -> str:
    return "no accepted decision to price: n/a" if math.isnan(value) else f"${value:.5f}"


def reject_checks(e: Evidence, c: ReviewConfig) -> list[Check]:
    """Rules any one of which rejects (the statistical ones on the ledger, with ``min_labelled`` in it)."""
    g, alpha = e.ledger, alpha_of(c)
    checks = [
        Check(
            P99_HARD,
            not e.p99_ms > c.p99_hard_ms,
            f"scorer p99 {e.p99_ms:.0f} ms, hard budget {c.p99_hard_ms:.0f} ms",
        ),
        Check(
            COST_HARD,
            not e.cost_per_accepted > c.cost_hard_usd,
            f"{_usd(e.cost_per_accepted)} per accepted, hard budget ${c.cost_hard_usd}",
        ),
    ]
    if g.accepted_labelled >= c.min_labelled:
        high = float(upper_bound(g.accepted_correct, g.accepted_labelled, alpha))
        severe_low = float(lower_bound(g.severe_errors, g.accepted_labelled, alpha))
        checks += [
            Check(
                PRECISION_REACHABLE,
                high >= c.precision_target,
                f"{source_of(e)}: {g.accepted_correct:,}/{g.accepted_labelled:,} accepted correct, "
                f"anytime-valid upper bound {high:.3f} vs target {c.precision_target}",
            ),
            Check(
                SEVERE_REJECT,
                severe_low <= c.max_severe_rate,
                f"{g.severe_errors:,} severe / {g.accepted_labelled:,} accepted labelled, anytime-valid "
                f"lower bound {severe_low:.2%}, limit {c.max_severe_rate:.2%}",
            ),
        ]
    return checks


def go_checks(e: Evidence, c: ReviewConfig) -> list[Check]:
    """Gates that must all hold for go (health checks: ``health``)."""
    g, alpha = e.ledger, alpha_of(c)
    low = float(lower_bound(g.accepted_correct, g.accepted_labelled, alpha))
    severe_high = float(upper_bound(g.severe_errors, g.accepted_labelled, alpha))
    out_of_sample = e.policy is not None and not e.policy.in_sample
    policy = (
        [
            Check(
                POLICY,
                out_of_sample,
                source_of(e)
                + (
                    ""
                    if out_of_sample
                    else "; go needs a policy chosen on another week (--policy), or require_policy: false"
                ),
            )
        ]
        if c.require_policy
        else []
    )
    return [
        Check(MATURE, e.maturity.mature, e.maturity.describe()),
        Check(
            ENOUGH,
            g.accepted_labelled >= c.min_labelled,
            f"{g.accepted_labelled:,} mature labelled accepted decisions at the policy, "
            f"need {c.min_labelled:,}",
        ),
        *policy,
        Check(
            PRECISION,
            low >= c.precision_target,
            f"{source_of(e)}: {g.accepted_correct:,}/{g.accepted_labelled:,} accepted correct, anytime-valid "
            f"lower bound {low:.3f} vs target {c.precision_target}",
        ),
        Check(
            COVERAGE,
            e.coverage >= c.min_coverage,
            f"coverage {e.coverage:.1%} of scored decisions accepted at the policy this week, "
            f"minimum {c.min_coverage:.0%}",
        ),
        _drift_check(
            ECE,
            e.drift.ece_reference_weeks > 0,
            not (c.block_on_ece_alert and e.ece_alert),
            "ECE alert raised" if e.ece_alert else "no ECE alert",
        ),
        _drift_check(
            PSI,
            e.drift.psi_reference,
            not _blocking_bands(c) & set(e.psi_bands),
            f"PSI bands {', '.join(e.psi_bands) or 'none'}; blocking from {c.block_on_psi_band}",
        ),
        Check(
            P99, e.p99_ms <= c.p99_budget_ms, f"scorer p99 {e.p99_ms:.0f} ms, budget {c.p99_budget_ms:.0f} ms"
        ),
        Check(
            COST,
            e.cost_per_accepted <= c.cost_budget_usd,
            f"{_usd(e.cost_per_accepted)} per accepted, budget ${c.cost_budget_usd}",
        ),
        Check(
            SEVERE,
            g.accepted_labelled > 0 and severe_high <= c.max_severe_rate,
            f"{g.severe_errors:,} severe of {g.accepted_labelled:,} accepted labelled, anytime-valid upper "
            "bound "
            f"{severe_high:.2%}, limit {c.max_severe_rate:.2%}",
        ),
    ]


def _blocking_bands(c: ReviewConfig) -> set[str]:
    return {"moderate": {"moderate", "significant"}, "significant": {"significant"}}[c.block_on_psi_band]


def _drift_check(rule: str, has_reference: bool, passed: bool, detail: str) -> Check:
    """A drift check: without a reference week it fails as ``no reference yet`` (it cannot count for go)."""
    if not has_reference:
        detail = "no reference yet: no earlier week of this identity to compare with"
        return Check(rule, passed=False, detail=detail, state=NO_REFERENCE)
    return Check(rule, passed, detail)
