"""The `per_option` mart: precision and recall per option against scikit-learn."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import precision_recall_fscore_support

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import Records, scope


def test_per_option_precision_recall_match_sklearn(computed: Computed, records: Records) -> None:
    """Per-option precision and recall equal precision_recall_fscore_support.

    Baseline precision = prevalence.
    """
    options = pd.DataFrame(mart(computed, "per_option"))
    for (decision_type, week, model_key), mine in options.groupby(["decision_type", "week", "model_key"]):
        ref = scope(records.labelled, decision_type, week, model_key)
        labels = sorted(mine.option_id)
        precision, recall, _, support = precision_recall_fscore_support(
            ref.outcome, ref.proposal, labels=labels, zero_division=np.nan
        )
        got = mine.set_index("option_id").loc[labels]
        np.testing.assert_allclose(got.precision.astype(float), precision, rtol=1e-12)
        np.testing.assert_allclose(got.recall.astype(float), recall, rtol=1e-12)
        np.testing.assert_array_equal(got.support, support)
        np.testing.assert_allclose(got.baseline_precision, support / len(ref), rtol=1e-12)


def test_per_option_invariants(computed: Computed) -> None:
    """Per group, the options' predictions and their support each add up to the labelled decisions.

    True positives never exceed either.
    """
    rows = pd.DataFrame(mart(computed, "per_option"))
    keys = ["decision_type", "week", "model_key"]
    sums = rows.groupby(keys).agg(
        predicted=("predicted", "sum"), support=("support", "sum"), labelled=("labelled", "first")
    )
    assert (sums.predicted == sums.labelled).all()
    assert (sums.support == sums.labelled).all()
    assert (rows.true_positives <= rows[["predicted", "support"]].min(axis=1)).all()
