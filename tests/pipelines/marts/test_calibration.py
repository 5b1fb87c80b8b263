"""The `calibration` mart: ECE, MCE, Brier and log-loss against numpy and scikit-learn, and invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import brier_score_loss, log_loss

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import (
    Records,
    equal_mass_bins,
    matching,
    probability_matrix,
    scope,
    top_label_ece,
)


def test_ece_mce_brier_and_log_loss_match_the_references(computed: Computed, records: Records) -> None:
    """Top-label ECE and MCE (numpy over sklearn's bins), multiclass Brier and log-loss (scikit-learn).

    The baselines are scikit-learn's Brier and log-loss of always predicting the week's outcome prevalence.
    """
    summary = {(r["decision_type"], r["week"], r["model_key"]): r for r in mart(computed, "calibration")}
    for key, row in summary.items():
        ref = scope(records.labelled, *key)
        conf = ref.proposal_probability.to_numpy()
        correct = (ref.proposal == ref.outcome).to_numpy(float)
        assert row["ece"] == pytest.approx(top_label_ece(conf, correct, 15), rel=1e-9)
        ids = equal_mass_bins(conf, 15)
        n = np.bincount(ids, minlength=15)
        gaps = np.abs(np.bincount(ids, conf, 15) - np.bincount(ids, correct, 15))[n > 0] / n[n > 0]
        assert row["mce"] == pytest.approx(gaps.max(), rel=1e-9)
        inside = ref[ref.outcome.isin(ref.option_ids.iloc[0])]
        p, options = probability_matrix(inside)
        assert row["outside_options"] == len(ref) - len(inside)
        assert row["brier"] == pytest.approx(brier_score_loss(inside.outcome, p, labels=options), rel=1e-9)
        assert row["log_loss"] == pytest.approx(log_loss(inside.outcome, p, labels=options), rel=1e-9)
        prevalence = inside.outcome.value_counts(normalize=True).reindex(options, fill_value=0).to_numpy()
        assert row["brier_baseline"] == pytest.approx(
            brier_score_loss(inside.outcome, np.tile(prevalence, (len(inside), 1)), labels=options), rel=1e-9
        )
        assert row["log_loss_baseline"] == pytest.approx(
            log_loss(inside.outcome, np.tile(prevalence, (len(inside), 1)), labels=options), rel=1e-9
        )


def test_calibration_invariants_and_known_properties(computed: Computed) -> None:
    """Reliability counts sum to labelled.

    ECE <= MCE; the calibrated weeks have small ECE, the drifted one not.
    """
    rows = pd.DataFrame(mart(computed, "reliability"))
    for row in mart(computed, "calibration"):
        got = matching(rows, row, "decision_type", "week", "model_key")
        assert got.decisions.sum() == row["labelled"]
        assert 0 <= row["ece"] <= row["mce"] <= 1
        assert 0 <= row["brier"] <= 2
        assert row["brier"] < row["brier_baseline"]
        assert row["log_loss"] < row["log_loss_baseline"]
        calibrated_limit = 0.04 if row["model_key"] == "*" else 0.08  # sampling noise of ~2,400 vs ~500 rows
        if row["week"] == "2026-W48":  # drifted: outcomes drawn at temperature 0.55, so overconfident
            assert row["ece"] > 0.1
        else:  # calibrated by construction: only sampling noise
            assert row["ece"] < calibrated_limit
