"""One rule as applied (``Check``) and its states: the type every rule of the verdict returns.

It sits below the verdict (``decision``), its rules (``gates``), the health checks
(``health``) and the gates other modules add, so none of them imports another for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from dashboards.verdict.rules import kind_of

PASS, FAIL, NO_REFERENCE = "pass", "fail", "no reference yet"
"""A check's ``state``; ``no reference yet``: failed with nothing to compare against (never counts for go)."""


@dataclass(frozen=True)
class Check:
    """One rule as applied: its name, whether it held, and the numbers behind it.

    ``kind``: the rule's kind in the rule book (``rules.KINDS``: ``reject``, ``go``, ``label-gate``,
    ``health`` or ``warning``, never blocking) unless given; ``state``: ``PASS`` or ``FAIL`` from
    ``passed`` unless given (``NO_REFERENCE``).
    """

    rule: str
    passed: bool
    detail: str
    kind: str = ""
    state: str = ""

    def __post_init__(self) -> None:
        if not self.kind:
            object.__setattr__(self, "kind", str(kind_of(self.rule)))
        if not self.state:
            object.__setattr__(self, "state", PASS if self.passed else FAIL)
