"""The level of the verdict's bounds, and when the precision bound can be expected to clear the target.

Every bound is anytime-valid (``pipelines.confseq``), one-sided at ``alpha_of(config)``. ``eta_of`` turns
the evidence ledger into an ``Eta``: the mature labelled accepted decisions still needed at the policy
for the lower bound to clear the target with 80% power at the current estimate, and the ISO week whose
labels are expected to bring them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelines.confseq import labels_needed as confseq_labels_needed
from pipelines.weeks import week_after

if TYPE_CHECKING:
    from dashboards.config import ReviewConfig
    from dashboards.verdict.evidence import Evidence


@dataclass(frozen=True)
class Eta:
    """When the precision bound can be expected to clear the target (``decision``'s docstring)."""

    labels_needed: int
    per_week: float
    week: str | None
    detail: str


def alpha_of(c: ReviewConfig) -> float:
    """The one-sided level of every bound: half of ``1 - confidence``."""
    return (1 - c.confidence) / 2


def eta_of(e: Evidence, c: ReviewConfig) -> Eta:
    """Labels still needed for the bound to clear the target at 80% power, and the week that brings them."""
    g = e.ledger
    have, estimate = (
        g.accepted_labelled,
        (g.accepted_correct / g.accepted_labelled if g.accepted_labelled else 0),
    )
    if have == 0:
        have, estimate = g.provisional_labelled, g.provisional_precision
    per_week = g.accepted_labelled / g.weeks if g.weeks else float(g.provisional_labelled)
    more = confseq_labels_needed(estimate, have, c.precision_target, alpha_of(c)) if have else -1
    more = max(more, c.min_labelled - g.accepted_labelled) if more >= 0 else more
    if more < 0:
        return Eta(
            -1,
            per_week,
            None,
            f"at the estimated precision {estimate:.3f} (target "
            f"{c.precision_target}) more labels alone will not clear the bound"
            if have
            else "no labelled accepted decision at the policy yet: no estimate",
        )
    if more == 0:
        return Eta(0, per_week, None, "enough labels for the bound")
    if per_week <= 0:
        return Eta(
            more, per_week, None, f"{more:,} more labelled accepted decisions; none arrive a week: no date"
        )
    weeks = math.ceil(more / per_week)
    week = week_after(g.counted_through or e.week, weeks)
    return Eta(
        more,
        per_week,
        week,
        f"{more:,} more labelled accepted decisions for the bound to clear "
        f"{c.precision_target} with 80% power at the estimated precision {estimate:.3f}: {weeks} "
        f"week(s) at {per_week:,.0f} a week, with week {week}'s labels (once it matures)",
    )
