"""Go, wait or reject per decision type and candidate, from explicit rules over the accumulated evidence.

Order: a **reject** rule that fires decides; else **go** when every go gate and every health check
passes; else **wait**, with the gates that failed and an ETA. Statistical rules read the evidence ledger
(``evidence.Ledger``: cumulative *mature* labelled counts at the policy, the ``evidence`` mart)
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
    (the rule's kind in ``rules.KINDS``: ``reject``, ``go``, ``label-gate``, ``health`` or ``warning``),
    ``state`` (``pass``, ``fail`` or ``no reference yet``).
``Eta``
    ``labels_needed`` (more mature labelled accepted decisions at the policy for the lower bound to clear the
    target with 80% power at the current estimate; 0: enough; -1: more labels will not do), ``per_week``
    (the ledger's mature labelled accepted decisions per covered week), ``week`` (the ISO week whose
    labels are expected to complete them, or None), ``detail`` (one sentence).

``judge`` applies every rule of the book to one candidate (the review calls it once per candidate and
week); ``decide`` is its core over the evidence, and takes further go gates: ``decide(e, c,
gates=[Check(...)])``.

Where each part lives (every name importable from here): the rule names and their kinds in ``rules``;
``Check`` and its states in ``checks``; the reject rules and go gates in ``gates``; the bounds' level and
the ``Eta`` in ``eta``; the health checks in ``health``; the audited gate in ``audited``. This module
decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from dashboards.verdict.audited import gate as audited_gate
from dashboards.verdict.checks import FAIL, NO_REFERENCE, PASS, Check
from dashboards.verdict.eta import Eta, alpha_of, eta_of
from dashboards.verdict.gates import Accepted, accepted_of, go_checks, reject_checks, source_of
from dashboards.verdict.health import health_checks, label_delay_warning
from dashboards.verdict.rules import (
    AUDITED,
    COST,
    COST_HARD,
    COVERAGE,
    ECE,
    ENOUGH,
    HARD_LIMITS,
    KINDS,
    LABEL_GATES,
    MATURE,
    P99,
    P99_HARD,
    POLICY,
    PRECISION,
    PRECISION_REACHABLE,
    PSI,
    RULES,
    SEVERE,
    SEVERE_REJECT,
    Kind,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dashboards.config import ReviewConfig
    from dashboards.marts import Marts
    from dashboards.verdict.evidence import Evidence

__all__ = [
    "AUDITED",
    "COST",
    "COST_HARD",
    "COVERAGE",
    "ECE",
    "ENOUGH",
    "FAIL",
    "HARD_LIMITS",
    "KINDS",
    "LABEL_GATES",
    "MATURE",
    "NO_REFERENCE",
    "P99",
    "P99_HARD",
    "PASS",
    "POLICY",
    "PRECISION",
    "PRECISION_REACHABLE",
    "PSI",
    "RULES",
    "SEVERE",
    "SEVERE_REJECT",
    "Accepted",
    "Check",
    "Decision",
    "Eta",
    "Kind",
    "Verdict",
    "accepted_of",
    "alpha_of",
    "decide",
    "eta_of",
    "go_checks",
    "judge",
    "reject_checks",
    "source_of",
]
"""The verdict's names, those of the modules it is built from included (importable from here)."""


class Decision(StrEnum):
    """The three verdicts."""

    GO = "go"
    WAIT = "wait"
    REJECT = "reject"


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
        return tuple(k for k in self.checks if not k.passed and k.kind != Kind.WARNING)

    @property
    def warnings(self) -> tuple[Check, ...]:
        """Failed warnings: said, never blocking."""
        return tuple(k for k in self.checks if not k.passed and k.kind == Kind.WARNING)


def _binding(decision: Decision, failing: Sequence[Check]) -> Check | None:
    if decision == Decision.GO or not failing:
        return None
    if decision == Decision.REJECT:
        return next(k for k in failing if k.kind == Kind.REJECT)
    blocking = [k for k in failing if k.kind != Kind.LABEL_GATE]
    return blocking[0] if blocking else next((k for k in failing if k.rule == PRECISION), failing[0])


def judge(marts: Marts, decision_type: str, candidate: str, e: Evidence, c: ReviewConfig) -> Verdict:
    """The verdict of one candidate under every rule of the book (``rules.KINDS``).

    The reject rules and go gates (``gates``), the health checks and the warning (``health``) on the
    evidence ``e``, and the audited gate (``audited``) on the audit marts where it applies.
    """
    found = audited_gate(marts, decision_type, candidate, c)
    return decide(e, c, () if found is None else (found,))


def decide(e: Evidence, c: ReviewConfig, gates: Sequence[Check] = ()) -> Verdict:
    """Apply the reject rules, then the go gates and health checks (and ``gates``); anything else waits."""
    rejects = reject_checks(e, c)
    checks = (*rejects, *go_checks(e, c), *health_checks(e, c), *gates, *label_delay_warning(e))
    eta = eta_of(e, c)
    provisional = () if e.maturity.mature else (f"provisional: {e.maturity.describe()}",)
    warnings = tuple(
        f"warning: {k.rule} ({k.detail})" for k in checks if k.kind == Kind.WARNING and not k.passed
    )
    failing = [k for k in checks if not k.passed and k.kind != Kind.WARNING]
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
