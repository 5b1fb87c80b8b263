"""The `risk_coverage` mart: the risk-coverage curve against numpy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import Records, scope


def test_risk_coverage_curve_matches_numpy(computed: Computed, records: Records) -> None:
    """Coverage and selective risk at each grid threshold equal numpy's.

    Coverage falls as the threshold rises.
    """
    curve = pd.DataFrame(mart(computed, "risk_coverage"))
    for (decision_type, week, model_key), rows in curve.groupby(["decision_type", "week", "model_key"]):
        ref = scope(records.labelled, decision_type, week, model_key)
        cells = np.floor(ref.proposal_probability.to_numpy() * 100)
        correct = (ref.proposal == ref.outcome).to_numpy()
        ordered = rows.sort_values("threshold")
        for threshold, coverage, risk in zip(
            ordered.threshold, ordered.coverage, ordered.selective_risk, strict=True
        ):
            accepted = cells >= round(threshold * 100)
            assert coverage == pytest.approx(accepted.mean(), rel=1e-12)
            assert risk == pytest.approx(1 - correct[accepted].mean(), rel=1e-9, abs=1e-12)
        assert ordered.coverage.is_monotonic_decreasing
        assert ordered.coverage.iloc[0] == 1.0


def test_risk_coverage_invariants(computed: Computed) -> None:
    """Along the thresholds, coverage and accepted decisions never grow; correct never exceeds accepted."""
    rows = pd.DataFrame(mart(computed, "risk_coverage")).sort_values("threshold")
    for _, curve in rows.groupby(["decision_type", "week", "model_key"]):
        assert (curve.accepted.diff().dropna() <= 0).all()
        assert (curve.coverage.diff().dropna() <= 1e-15).all()
        assert (curve.accepted_correct <= curve.accepted).all()
