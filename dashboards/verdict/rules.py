"""Every rule the verdict applies, by name, and what kind of rule each is: the verdict's rule book as data.

``KINDS`` maps a rule's stable name to its kind:

- ``reject``: any one that fails rejects (the hard limits, and the ledger's bounds once it is large enough);
- ``go``: must hold for go;
- ``label-gate``: a go gate that waiting for labels can clear (the week maturing, the label count, the
  precision bound): a wait whose failing gates are all of this kind is decided by labels alone;
- ``health``: a health check (is the evidence a fair sample?): blocks go like a go gate;
- ``warning``: said beside the verdict, never blocking.

The rules themselves live in ``gates`` (reject rules and go gates), ``health`` (health checks and the
warning) and ``audited`` (the audited gate); ``decision.judge`` applies them all. A ``Check`` whose rule is
not listed here (a gate another module adds to ``decide``) is a go gate unless it says otherwise.
"""

from __future__ import annotations

from enum import StrEnum


class Kind(StrEnum):
    """What a failing rule does to the verdict."""

    REJECT = "reject"
    GO = "go"
    LABEL_GATE = "label-gate"
    HEALTH = "health"
    WARNING = "warning"


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
AUDITED = "audited correctness not worse than production's"
SRM = "sample ratio matches the sampling"
OVERLAP = "candidates scored the same decisions"
LABEL_SHIFT = "labelled decisions like the unlabelled"
LABEL_DELAY = "maturity lag covers the outcome delay"

KINDS: dict[str, Kind] = {
    P99_HARD: Kind.REJECT,
    COST_HARD: Kind.REJECT,
    PRECISION_REACHABLE: Kind.REJECT,
    SEVERE_REJECT: Kind.REJECT,
    MATURE: Kind.LABEL_GATE,
    ENOUGH: Kind.LABEL_GATE,
    POLICY: Kind.GO,
    PRECISION: Kind.LABEL_GATE,
    COVERAGE: Kind.GO,
    ECE: Kind.GO,
    PSI: Kind.GO,
    P99: Kind.GO,
    COST: Kind.GO,
    SEVERE: Kind.GO,
    AUDITED: Kind.GO,
    SRM: Kind.HEALTH,
    OVERLAP: Kind.HEALTH,
    LABEL_SHIFT: Kind.HEALTH,
    LABEL_DELAY: Kind.WARNING,
}
"""Rule name -> kind, in the order the verdict lists its checks."""

RULES = tuple(KINDS)
"""Every rule name."""
LABEL_GATES = tuple(rule for rule, kind in KINDS.items() if kind == Kind.LABEL_GATE)
"""Gates that waiting for labels can clear."""
HARD_LIMITS = (P99_HARD, COST_HARD)
"""The budgets' hard limits (a reject), beside their go budgets ``P99`` and ``COST``."""


def kind_of(rule: str) -> Kind:
    """The kind of ``rule`` (a rule the book does not list is a go gate)."""
    return KINDS.get(rule, Kind.GO)
