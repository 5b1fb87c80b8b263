"""One rule as applied (``Check``) and its states: the type every rule of the verdict returns.

It sits below the verdict (``decision``), its rules (``gates``), the health checks
(``health``) and the gates other modules add, so none of them imports another for it.
"""

from __future__ import annotations

from dataclasses import dataclass

PASS, FAIL, NO_REFERENCE = "pass", "fail", "no reference yet"
"""A check's ``state``; ``no reference yet``: failed with nothing to compare against (never counts for go)."""


@dataclass(frozen=True)
class Check:
    """One rule as applied: its name, whether it held, and the numbers behind it.

    ``kind``: ``reject``, ``go``, ``health`` or ``warning`` (never blocking); ``state``: ``PASS`` or
    ``FAIL`` from ``passed`` unless given (``NO_REFERENCE``).
    """

    rule: str
    passed: bool
    detail: str
    kind: str = "go"
    state: str = ""

    def __post_init__(self) -> None:
        if not self.state:
            object.__setattr__(self, "state", PASS if self.passed else FAIL)
