"""The `drift_confidence` mart: confidence PSI against numpy on the reference window's deciles."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import Records, confidence_psi, current_rows, reference_rows


def test_confidence_psi_matches_numpy_on_reference_deciles(computed: Computed, records: Records) -> None:
    """Confidence PSI equals numpy's on the reference window's inverted-CDF deciles (in steps of 1/1000)."""
    scored = records.decisions[records.decisions.status == "scored"]
    rows = mart(computed, "drift_confidence")
    assert len(rows) == 40  # 2 types x weeks 45-48 (those have a reference) x (4 identities + '*')
    for row in rows:
        week = (row["week_start"] + dt.timedelta(days=3)).strftime("%G-W%V")
        key = (row["decision_type"], week, row["model_key"])
        expected = confidence_psi(
            current_rows(scored, *key).proposal_probability.to_numpy(),
            reference_rows(scored, *key).proposal_probability.to_numpy(),
        )
        assert row["confidence_psi"] == pytest.approx(expected, rel=1e-9, abs=1e-12)


def test_drift_confidence_invariants(computed: Computed) -> None:
    """PSI is non-negative, counted over at most the configured reference weeks, and absent without any."""
    for row in mart(computed, "drift_confidence"):
        assert 0 <= row["reference_weeks"] <= computed.settings.reference_weeks
        if row["reference_weeks"] == 0:
            assert row["confidence_psi"] is None
        else:
            assert row["confidence_psi"] >= 0
