"""Cost mart: instance-hours x dated price over accepted decisions, recomputed with pandas."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest

from pipelines.prices import load_prices
from tests.pipelines.conftest import Computed, mart
from tests.pipelines.reference import matching

if TYPE_CHECKING:
    from tests.pipelines.reference import Records


def accepted_mask(computed: Computed, scored: pd.DataFrame) -> np.ndarray:
    """Which scored decisions their model's per-option threshold accepts (thresholds mart.

    Applied with pandas).
    """
    chosen = pd.DataFrame(mart(computed, "thresholds")).dropna(subset=["grid_index"])
    chosen = chosen[chosen.model_key != "*"][
        ["decision_type", "week", "model_key", "option_id", "grid_index"]
    ]
    joined = scored.merge(
        chosen,
        how="left",
        left_on=["decision_type", "week", "model_key", "proposal"],
        right_on=["decision_type", "week", "model_key", "option_id"],
    )
    cells = np.floor(joined.proposal_probability.to_numpy() * 100)
    return (cells >= joined.grid_index.to_numpy()) & joined.grid_index.notna().to_numpy()


def test_cost_per_accepted_decision_matches_pandas(computed: Computed, records: Records) -> None:
    """Cost = sum(scorer_ms)/3.6e6 / utilization x hourly price.

    Per accepted and per correct accepted decision.
    """
    prices = load_prices(computed.settings.prices_file)
    scored = records.decisions[records.decisions.status == "scored"].reset_index(drop=True)
    scored["accepted"] = accepted_mask(computed, scored)
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
