"""The `confusion` mart: against scikit-learn's confusion matrix; cells sum to labelled, models to '*'."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import Records, scope


def test_confusion_matrix_matches_sklearn_and_sums_to_labelled(computed: Computed, records: Records) -> None:
    """Confusion cells equal sklearn's confusion_matrix and sum to the labelled count of the agreement row."""
    cells = pd.DataFrame(mart(computed, "confusion"))
    for row in mart(computed, "agreement"):
        key = (row["decision_type"], row["week"], row["model_key"])
        ref = scope(records.labelled, *key)
        labels = sorted(set(ref.outcome) | set(ref.proposal))
        mine = cells[(cells.decision_type == key[0]) & (cells.week == key[1]) & (cells.model_key == key[2])]
        assert mine.decisions.sum() == row["labelled"]
        got = (
            mine.pivot_table(index="outcome", columns="proposal", values="decisions", aggfunc="sum")
            .reindex(index=labels, columns=labels, fill_value=0)
            .fillna(0)
            .to_numpy()
        )
        np.testing.assert_array_equal(got, confusion_matrix(ref.outcome, ref.proposal, labels=labels))


def test_per_model_rows_add_up_to_the_all_models_row(computed: Computed) -> None:
    """Confusion cells of the two models sum to the '*' cells."""
    cells = pd.DataFrame(mart(computed, "confusion"))
    keys = ["decision_type", "week", "outcome", "proposal"]
    per_model = cells[cells.model_key != "*"].groupby(keys).decisions.sum()
    everyone = cells[cells.model_key == "*"].set_index(keys).decisions
    pd.testing.assert_series_equal(per_model.sort_index(), everyone.sort_index(), check_names=False)
