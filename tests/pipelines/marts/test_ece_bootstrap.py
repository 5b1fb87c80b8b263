"""The `ece_bootstrap` mart: the block bootstrap's interval against a numpy row bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from tests.pipelines.conftest import Computed, mart
from tests.pipelines.reference import Records, equal_mass_bins, scope


def test_ece_bootstrap_interval_matches_a_numpy_row_bootstrap(computed: Computed, records: Records) -> None:
    """The block bootstrap's percentile interval sits where a numpy row-level bootstrap puts it.

    Both hold the bins fixed. The interval brackets the ECE where miscalibration dominates the estimator's
    upward bias (the drifted week); on a calibrated week the replicates can all lie above the plug-in ECE.
    """
    rng = np.random.default_rng(0)
    rows = {(r["decision_type"], r["week"], r["model_key"]): r for r in mart(computed, "calibration")}
    for week in ("2026-W46", "2026-W48"):
        row = rows[("ticket_routing", week, "*")]
        ref = scope(records.labelled, "ticket_routing", week)
        conf, correct = ref.proposal_probability.to_numpy(), (ref.proposal == ref.outcome).to_numpy(float)
        ids = equal_mass_bins(conf, 15)
        reps = []
        for _ in range(400):
            pick = rng.integers(0, conf.size, conf.size)
            gap = np.bincount(ids[pick], conf[pick], 15) - np.bincount(ids[pick], correct[pick], 15)
            reps.append(np.abs(gap).sum() / conf.size)
        lo, hi = np.percentile(reps, [2.5, 97.5])
        assert row["ece_low"] == pytest.approx(lo, abs=0.3 * (hi - lo))
        assert row["ece_high"] == pytest.approx(hi, abs=0.3 * (hi - lo))
    drifted = rows[("ticket_routing", "2026-W48", "*")]
    assert drifted["ece_low"] <= drifted["ece"] <= drifted["ece_high"]


def test_ece_bootstrap_invariants(computed: Computed) -> None:
    """One interval per calibration row, every one from the configured replicates, low <= high."""
    rows = mart(computed, "ece_bootstrap")
    calibration = mart(computed, "calibration")
    assert {(r["decision_type"], r["week_start"], r["model_key"]) for r in rows} == {
        (r["decision_type"], r["week_start"], r["model_key"]) for r in calibration
    }
    assert {r["reps"] for r in rows} == {computed.settings.bootstrap_reps}
    assert all(0 <= r["ece_low"] <= r["ece_high"] <= 1 for r in rows)
