"""What the report shows of a candidate's calibration in the review week, from the ``calibration`` mart.

Not a verdict input: the ECE rule (``dashboards.verdict.gates``) reads the ``drift`` mart's alert.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards.marts import count_of, is_missing, row_of

if TYPE_CHECKING:
    from dashboards.marts import Marts

@dataclass(frozen=True)
class Calibration:
    """One candidate's calibration in the review week, as the ``calibration`` mart gives it."""

    labelled: int
    """Labelled decisions, one-hot ones included."""
    one_hot_excluded: int
    """Labelled decisions left out of every calibration figure: their probabilities are one-hot."""
    ece: float | None
    """The debiased ECE (None where no figure could be computed)."""
    ece_low: float | None
    ece_high: float | None

    def describe(self) -> str:
        """One line for a reader: the ECE and how many one-hot rows it leaves out.

        ``ECE: 0.031 (debiased, 95% interval 0.021 to 0.042) over 812 labelled, 37 one-hot rows left out
        (no log-probabilities)``; a key whose rows are all one-hot: ``ECE: n/a, 37 one-hot rows left out
        (...)``.
        """
        if self.ece is None or self.ece_low is None or self.ece_high is None:
            parts = ["ECE: n/a"]
        else:
            interval = f"95% interval {self.ece_low:.3f} to {self.ece_high:.3f}"
            scored = self.labelled - self.one_hot_excluded
            parts = [f"ECE: {self.ece:.3f} (debiased, {interval}) over {scored:,} labelled"]
        if self.one_hot_excluded:
            parts.append(f"{self.one_hot_excluded:,} one-hot rows left out (no log-probabilities)")
        elif self.ece is None:
            parts.append(f"{self.labelled:,} labelled")
        return ", ".join(parts)


def calibration_of(marts: Marts, decision_type: str, candidate: str) -> Calibration:
    """The review week's calibration row of one decision type and candidate (zeros and n/a without one)."""
    row = row_of(marts.of_week("calibration"), decision_type, candidate)

    def figure(column: str) -> float | None:  # a column an older pipelines version lacks reads as missing
        value = None if row is None else row.get(column)
        return None if value is None or is_missing(value) else float(value)

    return Calibration(
        labelled=count_of(row, "labelled"),
        one_hot_excluded=int(figure("one_hot_excluded") or 0),
        ece=figure("ece_debiased"),
        ece_low=figure("ece_low"),
        ece_high=figure("ece_high"),
    )
