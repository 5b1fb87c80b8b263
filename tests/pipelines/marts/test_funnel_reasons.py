"""The `funnel_reasons` mart: drops by reason against pandas and the generated shares."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from tests.pipelines.harness import Computed, mart

if TYPE_CHECKING:
    from tests.pipelines.reference import Records


def test_funnel_reasons_match_pandas_and_the_known_shares(computed: Computed, records: Records) -> None:
    """Every (status, reason) count equals pandas; not_sampled is ~10% of offered, as generated."""
    d = records.decisions
    expected = d[d.status != "scored"].groupby(["decision_type", "week", "status", "reason"]).size()
    got = (
        pd.DataFrame(mart(computed, "funnel_reasons"))
        .set_index(["decision_type", "week", "status", "reason"])
        .decisions
    )
    pd.testing.assert_series_equal(got.sort_index(), expected.sort_index(), check_names=False)
    share = got.xs("not_sampled", level="reason").sum() / len(d)
    assert 0.09 < share < 0.11
