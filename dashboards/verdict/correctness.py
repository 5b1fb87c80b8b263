"""Audited correctness beside agreement with production, and the non-inferiority gate.

Read from the ``correctness`` mart (an audit sample's design-weighted estimates, ``docs/pipelines.md``) and
the ``agreement`` mart. Agreement with production is never called accuracy: where production is wrong, a
right candidate disagrees. The gate (``correctness_margin`` in ``review.yaml``) is ``audited.gate``: the
paired difference with production on the same decisions, pooled over weeks, failing closed.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards.marts import CANDIDATE
from dashboards.verdict.audited import PRODUCTION, RULE
from dashboards.verdict.audited import gate as audited_gate

if TYPE_CHECKING:
    from dashboards.config import ReviewConfig
    from dashboards.marts import Marts
    from dashboards.verdict.checks import Check

__all__ = ["PRODUCTION", "RULE", "Audited", "audited", "gates", "to_html", "to_markdown"]


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
    agrees = dict(zip(agreement[CANDIDATE], agreement["accuracy"], strict=True))
    rows = sorted(week.to_dict("records"), key=lambda r: (r[CANDIDATE] != PRODUCTION, r[CANDIDATE]))
    return [
        Audited(str(r[CANDIDATE]), 1.0 if r[CANDIDATE] == PRODUCTION else agrees.get(r[CANDIDATE]),
                int(r["audited"]), _float(r["correctness"]), _float(r["correctness_low"]),
                _float(r["correctness_high"]), _share(r, "right_vs_wrong"), _share(r, "wrong_vs_right"))
        for r in rows
    ]


def gates(marts: Marts, decision_type: str, candidate: str, config: ReviewConfig) -> list[Check]:
    """The go gates this module adds to ``decide``: the audited gate (``audited.gate``) where it applies."""
    found = audited_gate(marts, decision_type, candidate, config)
    return [found] if found is not None else []


def _share_text(share: tuple[float, float, float] | None) -> str:
    return "" if share is None else f"{share[0]:.3f} [{share[1]:.3f}, {share[2]:.3f}]"


def _agreement_text(row: Audited) -> str:
    return "" if row.agreement is None else f"{row.agreement:.3f}"


def table_rows(rows: list[Audited], names: dict[str, str]) -> list[tuple[str, ...]]:
    """The section's rows as text: name, agreement with production, audited correctness, paired shares."""
    return [(names.get(r.key, r.key), _agreement_text(r), r.interval(), f"{r.audited:,}",
             _share_text(r.right_vs_wrong), _share_text(r.wrong_vs_right)) for r in rows]


HEADER = ("", "agreement with production", "audited correctness [95%]", "audited",
          "right where production was wrong", "wrong where production was right")


def to_html(rows: list[Audited], names: dict[str, str]) -> str:
    """The section: correctness beside agreement, or the sentence that there are no audits."""
    if not rows:
        return ("<p class='audits'>No audited sample this week: agreement is with production, not with the "
                "truth (<code>semif-shadow audit sample</code>).</p>")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                   for row in table_rows(rows, names))
    title = "Who was right: audited correctness beside agreement with production"
    return f"<div class='audits'><h3>{title}</h3><table><tr>{head}</tr>{body}</table></div>"


def to_markdown(decision_type: str, rows: list[Audited], names: dict[str, str]) -> list[str]:
    """The section's Markdown lines (one per candidate and production)."""
    if not rows:
        return [f"- {decision_type}: no audited sample this week (agreement is with production, not truth)"]
    return [f"- {decision_type} · {name}: audited correctness {correct} ({audits} audits) · agreement with "
            f"production {agree or 'n/a'}" for name, agree, correct, audits, _, _ in table_rows(rows, names)]
