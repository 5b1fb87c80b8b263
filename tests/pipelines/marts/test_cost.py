"""Cost mart: instance-hours x dated price over accepted decisions, recomputed with pandas."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd
import pytest

from pipelines.prices import load_prices
from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import matching, reference_accepted

if TYPE_CHECKING:
    from tests.pipelines.reference import Records


def test_cost_per_accepted_decision_matches_pandas(computed: Computed, records: Records) -> None:
    """Cost = sum(scorer_ms)/3.6e6 / utilization x hourly price.

    Per accepted and per correct accepted decision, the accepted ones found by an independent numpy and
    statsmodels threshold search (not read from the `thresholds` mart).
    """
    prices = load_prices(computed.settings.prices_file)
    settings = computed.settings
    scored = records.decisions[records.decisions.status == "scored"].copy()
    scored["accepted"] = reference_accepted(records, settings.alpha, settings.precision_target)
    rows = mart(computed, "cost")
    assert rows
    for row in rows:
        ref = matching(scored, row, "decision_type", "week", "instance_type", "model_name")
        hours = ref.scorer_ms.sum() / 3.6e6 / computed.settings.utilization
        cost = hours * prices.instances[row["instance_type"]]
        assert row["instance_hours"] == pytest.approx(hours, rel=1e-9)
        assert row["cost_usd"] == pytest.approx(cost, rel=1e-9)
        accepted = ref[ref.accepted]
        assert row["accepted"] == len(accepted)
        if len(accepted):
            labelled = accepted[accepted.outcome.notna()]
            precision = (labelled.proposal == labelled.outcome).mean()
            assert row["cost_per_accepted"] == pytest.approx(cost / len(accepted), rel=1e-9)
            assert row["cost_per_correct_accepted"] == pytest.approx(
                cost / (len(accepted) * precision), rel=1e-9
            )
        assert str(row["price_date"]) == prices.date.isoformat()


def test_gpu_is_cheaper_per_decision_than_cpu_at_these_prices(computed: Computed) -> None:
    """At 25 ms vs 180 ms a decision and $2.264 vs $1.632 an hour.

    A GPU decision costs about a fifth of a CPU one.
    """
    rows = pd.DataFrame(mart(computed, "cost"))
    per_decision = rows.groupby("device").cost_usd.sum() / rows.groupby("device").scored.sum()
    assert per_decision["cuda"] < 0.3 * per_decision["cpu"]


def test_cost_invariants(computed: Computed) -> None:
    """Accepted <= scored; correct <= labelled <= accepted; cost per correct >= cost per accepted."""
    for row in mart(computed, "cost"):
        assert row["accepted"] <= row["scored"]
        assert row["accepted_correct"] <= row["accepted_labelled"] <= row["accepted"]
        if row["cost_per_accepted"] is not None and row["cost_per_correct_accepted"] is not None:
            assert row["cost_per_correct_accepted"] >= row["cost_per_accepted"]
