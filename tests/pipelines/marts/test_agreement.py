"""The `agreement` mart: agreement (sklearn's accuracy), Cohen's kappa and the best-constant baseline."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
)

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import Records, scope


def test_accuracy_kappa_and_baseline_match_sklearn(computed: Computed, records: Records) -> None:
    """Accuracy and Cohen's kappa equal scikit-learn's; the baseline is the most frequent outcome's share."""
    rows = mart(computed, "agreement")
    assert len(rows) == 50  # 2 types x 5 weeks x (4 identities: 2 models x 2 devices, + '*')
    for row in rows:
        ref = scope(records.labelled, row["decision_type"], row["week"], row["model_key"])
        assert row["labelled"] == len(ref)
        assert row["agreement"] == pytest.approx(accuracy_score(ref.outcome, ref.proposal), rel=1e-12)
        assert row["kappa"] == pytest.approx(cohen_kappa_score(ref.outcome, ref.proposal), rel=1e-9)
        assert row["baseline_agreement"] == pytest.approx(
            ref.outcome.value_counts(normalize=True).max(), rel=1e-12
        )
        assert row["agreement"] > row["baseline_agreement"]


def test_agreement_invariants(computed: Computed) -> None:
    """Labelled never exceeds scored, the label rate is their ratio, and the per-model rows add up to '*'."""
    rows = pd.DataFrame(mart(computed, "agreement"))
    assert (rows.labelled <= rows.scored).all()
    np.testing.assert_allclose(rows.label_rate, rows.labelled / rows.scored, rtol=1e-12)
    everyone = rows[rows.model_key == "*"].set_index(["decision_type", "week"])
    per_model = rows[rows.model_key != "*"].groupby(["decision_type", "week"])[["scored", "labelled"]].sum()
    pd.testing.assert_frame_equal(per_model.sort_index(), everyone[["scored", "labelled"]].sort_index())
