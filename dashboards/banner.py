"""The decision banner: each candidate's verdict in a plain sentence, its binding constraint, the ETA.

Also every gate that fails, each with how far it is from passing.

Read from the verdict (``dashboards.verdict``: its checks and the labels it still needs) and the evidence
it was decided on; nothing here decides anything. The **binding constraint** is the failing gate that
decides the verdict: for a reject, the first hard limit broken; for a wait, the gate that waiting for
labels cannot clear before the others (a hard or process gate: a policy, a budget, an alert), else the
label count or the precision bound, whichever needs more labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards.verdict import Decision, accepted_of, clopper_pearson

if TYPE_CHECKING:
    from dashboards.config import ReviewConfig
    from dashboards.evidence import Evidence
    from dashboards.verdict import Check, Verdict

LABEL_GATES = ("enough labels", "precision lower bound meets target")
"""Gates that more labels can clear; every other failing go gate binds before them."""


@dataclass(frozen=True)
class Line:
    """What the banner says of one candidate."""

    candidate: str
    name: str
    decision: Decision
    sentence: str
    binding: str
    """The binding constraint and how far it is from passing."""
    failing: tuple[tuple[str, str], ...]
    """Every failing gate: ``(rule, how far from passing)``."""
    eta: str
    others: tuple[tuple[str, str], ...] = ()
    """The candidate's other identities this week: ``(readable name, verdict)`` (judged apart)."""


def gap(check: Check, e: Evidence, c: ReviewConfig) -> str:  # noqa: PLR0911  (one answer per gate)
    """How far a failing gate is from passing, in the gate's own unit."""
    rule = check.rule
    if rule.startswith("p99"):
        limit = c.p99_hard_ms if "hard" in rule else c.p99_budget_ms
        over = e.p99_ms - limit
        return f"scorer p99 {e.p99_ms:,.0f} ms, {over:,.0f} ms over the {limit:,.0f} ms {_kind(rule)}"
    if rule.startswith("cost"):
        limit = c.cost_hard_usd if "hard" in rule else c.cost_budget_usd
        if math.isnan(e.cost_per_accepted):
            return "no accepted decision to price"
        return f"${e.cost_per_accepted:.5f} per accepted decision, over the ${limit} {_kind(rule)}"
    if rule == "enough labels":
        short = c.min_labelled - e.labelled
        return f"{e.labelled:,} of the {c.min_labelled:,} labels a decision needs ({short:,} to go)"
    if rule == "precision lower bound meets target":
        a = accepted_of(e)
        if a.labelled == 0:
            return "no accepted decision with an outcome at the thresholds: no precision to bound"
        low = clopper_pearson(a.correct, a.labelled, c.confidence)[0]
        return (
            f"precision lower bound {low:.3f}, {c.precision_target - low:.3f} short of {c.precision_target} "
            f"({a.correct:,}/{a.labelled:,} accepted correct)"
        )
    if rule == "coverage above minimum":
        a = accepted_of(e)
        return f"coverage {a.coverage:.1%}, {c.min_coverage - a.coverage:.1%} short of {c.min_coverage:.0%}"
    if rule == "out-of-sample policy":
        return "no policy chosen on an earlier week was given (--policy)"
    if rule.startswith("severe-error rate") and e.labelled:
        rate = e.severe_errors / e.labelled
        return f"severe errors {rate:.2%} of labelled, limit {c.max_severe_rate:.2%}"
    return check.detail


def _kind(rule: str) -> str:
    return "hard limit" if "hard" in rule else "budget"


def binding_check(v: Verdict) -> Check | None:
    """The failing check that decides the verdict (None for go).

    The verdict's own ``binding`` where it names one, else found from its checks.
    """
    named: Check | None = getattr(v, "binding", None)
    if named is not None:
        return named
    failing = [k for k in v.checks if not k.passed and getattr(k, "kind", "go") != "warning"]
    if v.decision == Decision.GO or not failing:
        return None
    reject = {k.rule for k in failing} & {r.split(" (")[0].removeprefix("failed: ") for r in v.reasons}
    if v.decision == Decision.REJECT:
        return next((k for k in failing if k.rule in reject), failing[0])
    blocking = [k for k in failing if k.rule not in LABEL_GATES]
    if blocking:
        return blocking[0]
    return next((k for k in failing if k.rule == "precision lower bound meets target"), failing[0])


def eta(v: Verdict, weekly_labels: float, week: str) -> str:
    """When a decision can be expected, at this week's label rate."""
    if v.decision != Decision.WAIT:
        return "decided this week"
    own = getattr(v, "eta", None)
    if own is not None:  # the verdict's own ETA (labels at 80% power, the week they arrive)
        return str(own.detail)
    binding = binding_check(v)
    first = (
        "" if binding is None or binding.rule in LABEL_GATES else f"not by waiting: {binding.rule} first; "
    )
    if v.labels_needed <= 0:
        return first + "labels alone will not decide it"
    if weekly_labels <= 0:
        return first + f"{v.labels_needed:,} more labels needed, none arrived this week: no date"
    weeks = math.ceil(v.labels_needed / weekly_labels)
    return (
        first + f"{v.labels_needed:,} more labels, {weeks} week(s) at this week's {weekly_labels:,.0f} "
        f"({_plus(week, weeks)})"
    )


def _plus(week: str, weeks: int) -> str:
    """The ISO week ``weeks`` after ``week``."""
    import datetime as dt  # noqa: PLC0415  (one use)

    monday = dt.date.fromisocalendar(int(week[:4]), int(week[6:]), 1) + dt.timedelta(weeks=weeks)
    year, number, _ = monday.isocalendar()
    return f"{year}-W{number:02d}"


def line(  # noqa: PLR0913, PLR0917  (one candidate's whole context)
    candidate: str, name: str, v: Verdict, e: Evidence, c: ReviewConfig, week: str, agreement: float | None
) -> Line:
    """The banner's line of one candidate (``agreement``: its agreement with production this week)."""
    # a rule applied by both the reject and the go side is listed once
    failing = tuple(
        dict.fromkeys(
            (k.rule, gap(k, e, c)) for k in v.checks if not k.passed and getattr(k, "kind", "go") != "warning"
        )
    )
    binding = binding_check(v)
    bind = "" if binding is None else f"{gap(binding, e, c)} [{binding.rule}]"
    agrees = (
        f"agrees with production on {agreement:.0%} of {e.labelled:,} labelled"
        if e.labelled and agreement is not None
        else "no labels yet"
    )
    if v.decision == Decision.GO:
        sentence = f"{name} can go: every gate passes ({agrees})."
    elif v.decision == Decision.REJECT:
        sentence = f"{name} is rejected as it runs today: {bind} ({agrees})."
    else:
        sentence = f"{name} is not decided yet: {bind} ({agrees})."
    if getattr(v, "provisional", False):
        sentence += (
            f" Provisional: the week's outcomes mature at {getattr(v, 'matures_at', None) or 'a later run'}."
        )
    return Line(candidate, name, v.decision, sentence, bind, failing, eta(v, e.labelled, week))
