"""The `selective` mart: coverage and selective risk at the thresholds, and invariants."""

from __future__ import annotations

import pandas as pd

from tests.pipelines.conftest import Computed, mart


def test_selective_invariants(computed: Computed) -> None:
    """Accepted + routed = scored.

    Accepted labelled = the thresholds' accepted counts; where anything is accepted its precision reaches the
    target (each option's accepted set does).
    """
    thresholds = pd.DataFrame(mart(computed, "thresholds"))
    for row in mart(computed, "selective"):
        assert row["accepted"] + row["routed_to_review"] == row["scored"]
        if row["model_key"] == "*":
            continue
        mine = thresholds[
            (thresholds.decision_type == row["decision_type"])
            & (thresholds.week == row["week"])
            & (thresholds.model_key == row["model_key"])
        ]
        assert row["accepted_labelled"] == mine.accepted.fillna(0).sum()
        if row["accepted_labelled"]:
            assert row["selective_risk"] <= 1 - computed.settings.precision_target
