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
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards.verdict.decision import ENOUGH, P99, P99_HARD, POLICY, Decision, Kind
from dashboards.verdict.rules import kind_of
from pipelines.weeks import week_after

if TYPE_CHECKING:
    from dashboards.config import ReviewConfig
    from dashboards.verdict.decision import Check, Verdict
    from dashboards.verdict.evidence import Evidence


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
    audited: str = ""
    """The baseline where the week has audits: the candidate's and production's audited correctness on the
    same decisions and their difference with its interval (``audited_sentence``); empty without."""


def audited_sentence(row: dict[str, object] | None) -> str:
    """``audited_difference``'s row as a sentence: both sides' correctness and the difference, or ``""``."""
    if row is None or any(_absent(row.get(c)) for c in ("diff", "diff_low", "diff_high")):
        return ""

    number = {k: float(v) for k, v in row.items() if isinstance(v, numbers.Real)}

    def share(key: str) -> str:
        return (f"{number[f'{key}_correctness']:.1%} [{number[f'{key}_low']:.1%}, "
                f"{number[f'{key}_high']:.1%}]")

    points = [100 * number[c] for c in ("diff", "diff_low", "diff_high")]
    return (f"Audited this week on the same {number['audited']:,.0f} decisions: right on "
            f"{share('candidate')}, production on {share('production')}; difference {points[0]:+.1f} pts "
            f"[{points[1]:+.1f}, {points[2]:+.1f}]")


def _absent(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def gap(check: Check, e: Evidence, c: ReviewConfig) -> str:
    """How far a failing gate is from passing, in the gate's own unit (its detail where it says so)."""
    rule = check.rule
    if rule in {P99, P99_HARD} and not math.isnan(e.p99_ms):
        limit = c.p99_hard_ms if rule == P99_HARD else c.p99_budget_ms
        over = e.p99_ms - limit
        return f"scorer p99 {e.p99_ms:,.0f} ms, {over:,.0f} ms over the {limit:,.0f} ms {_kind(rule)}"
    if rule == POLICY:
        return "no policy chosen on an earlier week was given (--policy)"
    if rule == ENOUGH:
        short = c.min_labelled - e.ledger.accepted_labelled
        return f"{check.detail}: {short:,} to go"
    return check.detail


def _kind(rule: str) -> str:
    return "hard limit" if kind_of(rule) == Kind.REJECT else "budget"


def binding_check(v: Verdict) -> Check | None:
    """The failing check that decides the verdict (None for go): the verdict's own ``binding``."""
    if v.decision == Decision.GO:
        return None
    return v.binding or next(iter(v.failing), None)


def eta(v: Verdict, weekly_labels: float, week: str) -> str:
    """When a decision can be expected: the verdict's own ETA (labels at 80% power, the week they arrive)."""
    if v.decision != Decision.WAIT:
        return "decided this week"
    binding = binding_check(v)
    waits = binding is None or binding.kind == Kind.LABEL_GATE
    first = "" if waits or binding is None else f"not by waiting: {binding.rule} first; "
    if v.eta is not None:
        return first + v.eta.detail
    if v.labels_needed <= 0:
        return first + "labels alone will not decide it"
    if weekly_labels <= 0:
        return first + f"{v.labels_needed:,} more labels needed, none arrived this week: no date"
    weeks = math.ceil(v.labels_needed / weekly_labels)
    return (
        first + f"{v.labels_needed:,} more labels, {weeks} week(s) at this week's {weekly_labels:,.0f} "
        f"({week_after(week, weeks)})"
    )


def line(  # noqa: PLR0913, PLR0917  (one candidate's whole context)
    candidate: str, name: str, v: Verdict, e: Evidence, c: ReviewConfig, week: str, agreement: float | None
) -> Line:
    """The banner's line of one candidate (``agreement``: its agreement with production this week)."""
    # a rule applied by both the reject and the go side is listed once
    failing = tuple(dict.fromkeys((k.rule, gap(k, e, c)) for k in v.failing))
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
    if v.provisional:
        sentence += f" Provisional: the week's outcomes mature at {v.matures_at or 'a later run'}."
    return Line(candidate, name, v.decision, sentence, bind, failing, eta(v, e.labelled, week))
