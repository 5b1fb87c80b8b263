"""The `funnel` mart: counts against pandas, and its invariants."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import matching

if TYPE_CHECKING:
    from tests.pipelines.reference import Records


def test_funnel_counts_match_pandas(computed: Computed, records: Records) -> None:
    """Offered.

    Sampled, scored, labelled and unjoined per type and week equal pandas counts of the raw records.
    """
    d = records.decisions
    for row in mart(computed, "funnel"):
        rows = matching(d, row, "decision_type", "week")
        scored = rows.status == "scored"
        assert row["offered"] == len(rows)
        assert row["sampled"] == rows.sampled.sum()
        assert row["scored"] == scored.sum()
        assert row["labelled"] == (scored & rows.outcome.notna()).sum()
        assert row["unjoined"] == (scored & rows.outcome.isna()).sum()
        assert row["label_rate"] == row["labelled"] / row["scored"]


def test_funnel_invariants(computed: Computed) -> None:
    """Scored + not_scored = offered.

    Labelled + unjoined = scored, reasons sum to not_scored, sampled <= offered.
    """
    reasons = pd.DataFrame(mart(computed, "funnel_reasons"))
    for row in mart(computed, "funnel"):
        assert row["scored"] + row["not_scored"] == row["offered"]
        assert row["labelled"] + row["unjoined"] == row["scored"]
        assert row["scored"] <= row["sampled"] <= row["offered"]
        mine = matching(reasons, row, "decision_type", "week")
        assert mine.decisions.sum() == row["not_scored"]
