"""Audited correctness beside agreement with production: the rows of the review's audits table.

Read from the ``correctness`` mart (an audit sample's design-weighted estimates, ``docs/pipelines.md``) and
the ``agreement`` mart. Agreement with production is never called accuracy: where production is wrong, a
right candidate disagrees. The gate (``correctness_margin`` in ``review.yaml``) is ``audited.gate``, which
``decision.judge`` applies: the paired difference with production on the same decisions, pooled over
weeks, failing closed. The table is drawn by ``dashboards.screen.audits``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards.marts import CANDIDATE
from dashboards.verdict.audited import RULE
from pipelines.sqlmodels import PRODUCTION

if TYPE_CHECKING:
    from dashboards.marts import Marts

__all__ = ["PRODUCTION", "RULE", "Audited", "audited"]


@dataclass(frozen=True)
class Audited:
    """One row of the section: a candidate (or production) this week."""

    key: str
    agreement: float | None
    """Agreement with production (``agreement`` mart; production agrees with itself)."""
    audited: int
    correctness: float
    low: float
    high: float
    right_vs_wrong: tuple[float, float, float] | None
    """Share of decisions where it was right and production wrong, with its interval (candidates)."""
    wrong_vs_right: tuple[float, float, float] | None

    def interval(self) -> str:
        """``0.912 [0.890, 0.934]`` (or ``n/a`` while a stratum has no audit)."""
        if math.isnan(self.correctness):
            return "n/a"
        return f"{self.correctness:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _float(value: object) -> float:
    return float(value) if value is not None and not _missing(value) else math.nan  # type: ignore[arg-type]


def _missing(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _share(row: dict[str, object], column: str) -> tuple[float, float, float] | None:
    if _missing(row.get(column)) or row.get(column) is None:
        return None
    return _float(row[column]), _float(row[f"{column}_low"]), _float(row[f"{column}_high"])


def audited(marts: Marts, decision_type: str) -> list[Audited]:
    """Production first, then every candidate with audits this week (empty without an audit sample)."""
    frame = marts.frames.get("correctness")
    if frame is None or frame.empty:
        return []
    week = frame[(frame["week"] == marts.week) & (frame["decision_type"] == decision_type)]
    agreement = marts.of_week("agreement")
    agreement = agreement[agreement["decision_type"] == decision_type]
    agrees = dict(zip(agreement[CANDIDATE], agreement["agreement"], strict=True))
    rows = sorted(week.to_dict("records"), key=lambda r: (r[CANDIDATE] != PRODUCTION, r[CANDIDATE]))
    return [
        Audited(str(r[CANDIDATE]), 1.0 if r[CANDIDATE] == PRODUCTION else agrees.get(r[CANDIDATE]),
                int(r["audited"]), _float(r["correctness"]), _float(r["correctness_low"]),
                _float(r["correctness_high"]), _share(r, "right_vs_wrong"), _share(r, "wrong_vs_right"))
        for r in rows
    ]
