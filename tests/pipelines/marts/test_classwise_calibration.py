"""The `classwise_calibration` mart: per-option ECE against scikit-learn's uniform calibration curves."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import Records, probability_matrix, scope


def test_classwise_ece_matches_sklearn_uniform_calibration_curves(
    computed: Computed, records: Records
) -> None:
    """Each option's classwise ECE is sklearn's calibration_curve(strategy="uniform".

    15 bins) weighted by counts.
    """
    rows = {
        (r["decision_type"], r["week"], r["model_key"], r["option_id"]): r
        for r in mart(computed, "classwise_calibration")
    }
    summary = {(r["decision_type"], r["week"], r["model_key"]): r for r in mart(computed, "calibration")}
    for key, row in summary.items():
        ref = scope(records.labelled, *key)
        inside = ref[ref.outcome.isin(ref.option_ids.iloc[0])]
        p, options = probability_matrix(inside)
        eces = []
        for k, option in enumerate(options):
            y = (inside.outcome == option).to_numpy(int)
            ids = np.searchsorted(np.linspace(0, 1, 16)[1:-1], p[:, k])
            n = np.bincount(ids, minlength=15)
            prob_true, prob_pred = calibration_curve(y, p[:, k], n_bins=15, strategy="uniform")
            eces.append(float(np.sum(n[n > 0] * np.abs(prob_true - prob_pred)) / n.sum()))
            assert rows[(*key, option)]["ece"] == pytest.approx(eces[-1], rel=1e-9)
        assert row["classwise_ece"] == pytest.approx(np.mean(eces), rel=1e-9)


def test_classwise_invariants(computed: Computed) -> None:
    """Per group, every option covers the same decisions, the prevalences sum to 1, and ECE <= MCE."""
    rows = pd.DataFrame(mart(computed, "classwise_calibration"))
    groups = rows.groupby(["decision_type", "week", "model_key"])
    assert (groups.decisions.min() == groups.decisions.max()).all()
    np.testing.assert_allclose(groups.prevalence.sum(), 1.0, rtol=1e-12)
    assert (rows.ece <= rows.mce + 1e-15).all()
