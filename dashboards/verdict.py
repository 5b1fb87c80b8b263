"""Go, wait or reject per decision type and candidate, from explicit rules over the accumulated evidence.

Order: a **reject** rule that fires decides; else **go** when every go gate and every health check
passes; else **wait**, with the gates that failed and an ETA. Statistical rules read the evidence ledger
(``dashboards.evidence.Ledger``: cumulative *mature* labelled counts at the policy, the ``evidence`` mart)
through anytime-valid bounds (``pipelines.confseq``, one-sided at ``alpha = (1 - confidence) / 2``), so a
verdict stays valid however often the review is run and whatever weeks are rerun.

- A week whose outcomes are not mature is **provisional**: the gate ``week mature`` fails, so it can be
  rejected (hard limits, and the ledger's mature counts) but never go; the reasons say when it matures.
- A check with nothing to compare against (a drift figure with no reference week yet) fails with
  ``no reference yet``: it cannot count towards go.

The data shape the banner and other modules read (stable; fields only added):

``Verdict``
    ``decision`` (``Decision``: go / wait / reject); ``reasons`` (sentences, most important first: for a
    provisional wait the first says when the week matures); ``checks`` (every ``Check`` applied);
    ``provisional`` (bool) and ``matures_at`` (ISO instant or None); ``eta`` (``Eta`` or None);
    ``labels_needed`` (= ``eta.labels_needed`` when positive, else 0); ``binding`` (the ``Check`` that
    decides the verdict: for a reject the first hard limit broken, for a wait the first failing gate that
    waiting for labels cannot clear, else the precision bound; None for go); ``failing`` (property: every
    failing check that blocks, in order); ``warnings`` (property: failed ``warning`` checks, never blocking).
``Check``
    ``rule`` (a stable name, the ``RULES`` constants), ``passed``, ``detail`` (the numbers), ``kind``
    (``reject``, ``go``, ``health`` or ``warning``), ``state`` (``pass``, ``fail`` or ``no reference yet``).
``Eta``
    ``labels_needed`` (more mature labelled accepted decisions at the policy for the lower bound to clear the
    target with 80% power at the current estimate; 0: enough; -1: more labels will not do), ``per_week``
    (the ledger's mature labelled accepted decisions per covered week), ``week`` (the ISO week whose
    labels are expected to complete them, or None), ``detail`` (one sentence).

Other modules add go gates without touching the rules here: ``decide(e, c, gates=[Check(...)])``.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from scipy.stats import beta

from dashboards.health import health_checks, label_delay_warning
from pipelines.confseq import labels_needed as confseq_labels_needed
from pipelines.confseq import lower_bound, upper_bound

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dashboards.config import ReviewConfig
    from dashboards.evidence import Evidence


class Decision(StrEnum):
    """The three verdicts."""

    GO = "go"
    WAIT = "wait"
    REJECT = "reject"


PASS, FAIL, NO_REFERENCE = "pass", "fail", "no reference yet"
P99_HARD, COST_HARD = "p99 within hard budget", "cost within hard budget"
PRECISION_REACHABLE = "precision can reach target at the policy"
SEVERE_REJECT = "severe-error rate not above limit"
MATURE = "week mature"
ENOUGH = "enough labels"
POLICY = "out-of-sample policy"
PRECISION = "precision lower bound meets target"
COVERAGE = "coverage above minimum"
ECE = "no ECE alert"
PSI = "PSI below blocking band"
P99, COST = "p99 within budget", "cost within budget"
SEVERE = "severe-error rate within limit"
RULES = (
    P99_HARD,
    COST_HARD,
    PRECISION_REACHABLE,
    SEVERE_REJECT,
    MATURE,
    ENOUGH,
    POLICY,
    PRECISION,
    COVERAGE,
    ECE,
    PSI,
    P99,
    COST,
    SEVERE,
)
"""The rule names of this module (health checks: ``dashboards.health.RULES``)."""
LABEL_GATES = (MATURE, ENOUGH, PRECISION)
"""Gates that waiting for labels can clear."""


@dataclass(frozen=True)
class Check:
    """One rule as applied: its name, whether it held, and the numbers behind it."""

    rule: str
    passed: bool
    detail: str
    kind: str = "go"
    state: str = ""

    def __post_init__(self) -> None:
        if not self.state:
            object.__setattr__(self, "state", PASS if self.passed else FAIL)


@dataclass(frozen=True)
class Eta:
    """When the precision bound can be expected to clear the target (see the module docstring)."""

    labels_needed: int
    per_week: float
    week: str | None
    detail: str


@dataclass(frozen=True)
class Verdict:
    """The decision, the checks that decided it, and every check applied (module docstring)."""

    decision: Decision
    reasons: tuple[str, ...]
    checks: tuple[Check, ...]
    labels_needed: int
    provisional: bool = False
    matures_at: str | None = None
    eta: Eta | None = None
    binding: Check | None = None

    @property
    def failing(self) -> tuple[Check, ...]:
        """Every failing check that blocks go (warnings left out)."""
        return tuple(k for k in self.checks if not k.passed and k.kind != "warning")

    @property
    def warnings(self) -> tuple[Check, ...]:
        """Failed warnings: said, never blocking."""
        return tuple(k for k in self.checks if not k.passed and k.kind == "warning")


def alpha_of(c: ReviewConfig) -> float:
    """The one-sided level of every bound: half of ``1 - confidence``."""
    return (1 - c.confidence) / 2


def clopper_pearson(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    """The two-sided Clopper-Pearson interval of one sample (``(0, 1)`` with no trials).

    Not used by the rules (it is valid for one look only); ``bench/verdict_sim.py`` compares it.
    """
    if trials == 0:
        return 0.0, 1.0
    tail = (1 - confidence) / 2
    low = 0.0 if successes == 0 else float(beta.ppf(tail, successes, trials - successes + 1))
    high = 1.0 if successes == trials else float(beta.ppf(1 - tail, successes + 1, trials - successes))
    return low, high


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
            "reject",
        ),
        Check(
            COST_HARD,
            not e.cost_per_accepted > c.cost_hard_usd,
            f"{_usd(e.cost_per_accepted)} per accepted, hard budget ${c.cost_hard_usd}",
            "reject",
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
                "reject",
            ),
            Check(
                SEVERE_REJECT,
                severe_low <= c.max_severe_rate,
                f"{g.severe_errors:,} severe / {g.accepted_labelled:,} accepted labelled, anytime-valid "
                f"lower bound {severe_low:.2%}, limit {c.max_severe_rate:.2%}",
                "reject",
            ),
        ]
    return checks


def go_checks(e: Evidence, c: ReviewConfig) -> list[Check]:
    """Gates that must all hold for go (health checks: ``dashboards.health``)."""
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
    week = _plus(g.counted_through or e.week, weeks)
    return Eta(
        more,
        per_week,
        week,
        f"{more:,} more labelled accepted decisions for the bound to clear "
        f"{c.precision_target} with 80% power at the estimated precision {estimate:.3f}: {weeks} "
        f"week(s) at {per_week:,.0f} a week, with week {week}'s labels (once it matures)",
    )


def _plus(week: str, weeks: int) -> str:
    """The ISO week ``weeks`` after ``week``."""
    monday = dt.date.fromisocalendar(int(week[:4]), int(week[6:]), 1) + dt.timedelta(weeks=weeks)
    year, number, _ = monday.isocalendar()
    return f"{year}-W{number:02d}"


def _binding(decision: Decision, failing: Sequence[Check]) -> Check | None:
    if decision == Decision.GO or not failing:
        return None
    if decision == Decision.REJECT:
        return next(k for k in failing if k.kind == "reject")
    blocking = [k for k in failing if k.rule not in LABEL_GATES]
    return blocking[0] if blocking else next((k for k in failing if k.rule == PRECISION), failing[0])


def decide(e: Evidence, c: ReviewConfig, gates: Sequence[Check] = ()) -> Verdict:
    """Apply the reject rules, then the go gates and health checks (and ``gates``); anything else waits."""
    rejects = reject_checks(e, c)
    checks = (*rejects, *go_checks(e, c), *health_checks(e, c), *gates, *label_delay_warning(e))
    eta = eta_of(e, c)
    provisional = () if e.maturity.mature else (f"provisional: {e.maturity.describe()}",)
    warnings = tuple(
        f"warning: {k.rule} ({k.detail})" for k in checks if k.kind == "warning" and not k.passed
    )
    failing = [k for k in checks if not k.passed and k.kind != "warning"]
    if rejected := [k for k in rejects if not k.passed]:
        decision = Decision.REJECT
        reasons = (*(f"failed: {k.rule} ({k.detail})" for k in rejected), *provisional, *warnings)
    elif not failing:
        decision, reasons = Decision.GO, ("every go rule holds", *warnings)
    else:
        decision = Decision.WAIT
        reasons = (
            *provisional,
            *(f"failed: {k.rule} ({k.detail})" for k in failing if k.rule != MATURE),
            *((eta.detail,) if eta.labels_needed != 0 else ()),
            *warnings,
        )
    return Verdict(
        decision,
        reasons,
        checks,
        max(eta.labels_needed, 0),
        provisional=not e.maturity.mature,
        matures_at=e.maturity.matures_at,
        eta=eta,
        binding=_binding(decision, failing),
    )
