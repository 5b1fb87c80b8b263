"""The `reliability` mart: equal-mass reliability rows against scikit-learn's quantile calibration curve."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.calibration import calibration_curve

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import Records, equal_mass_bins, scope


def groups(computed: Computed) -> list[tuple[str, str, str]]:
    """Every (decision type, week, model key) the calibration mart has."""
    return sorted({(r["decision_type"], r["week"], r["model_key"]) for r in mart(computed, "calibration")})


def test_reliability_rows_match_sklearn_quantile_calibration_curve(
    computed: Computed, records: Records
) -> None:
    """Per equal-mass bin.

    Counts and means equal numpy's percentile bins exactly, and sklearn's
    calibration_curve(strategy="quantile") up to one row per bin: sklearn asks for the percentiles linspace(0,
    1) * 100, whose rounding can move a row sitting exactly on an edge to the next bin.
    """
    rows = pd.DataFrame(mart(computed, "reliability"))
    for decision_type, week, model_key in groups(computed):
        ref = scope(records.labelled, decision_type, week, model_key)
        conf, correct = ref.proposal_probability.to_numpy(), (ref.proposal == ref.outcome).to_numpy(int)
        got = rows[
            (rows.decision_type == decision_type) & (rows.week == week) & (rows.model_key == model_key)
        ]
        got = got.sort_values("bin")
        ids = equal_mass_bins(conf, 15)
        counts = np.bincount(ids, minlength=15)
        np.testing.assert_array_equal(got.decisions, counts[counts > 0])
        np.testing.assert_allclose(
            got.mean_confidence, np.bincount(ids, conf)[counts > 0] / counts[counts > 0], rtol=1e-12
        )
        np.testing.assert_allclose(
            got.agreement, np.bincount(ids, correct)[counts > 0] / counts[counts > 0], rtol=1e-12
        )
        prob_true, prob_pred = calibration_curve(correct, conf, n_bins=15, strategy="quantile")
        np.testing.assert_allclose(got.mean_confidence, prob_pred, atol=1.0 / counts.min())
        np.testing.assert_allclose(got.agreement, prob_true, atol=1.0 / counts.min())
