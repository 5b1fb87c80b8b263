"""Drift marts (drift_confidence.

Drift_mix, drift) against numpy PSI, and the drift the generator injected.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest

from tests.pipelines.conftest import Computed, mart
from tests.pipelines.reference import Records, confidence_psi, psi

WEEKS = ["2026-W44", "2026-W45", "2026-W46", "2026-W47", "2026-W48"]


def reference_rows(frame: pd.DataFrame, decision_type: str, week: str, model_key: str) -> pd.DataFrame:
    """The rows of the (up to) four weeks before ``week``."""
    before = WEEKS[max(0, WEEKS.index(week) - 4) : WEEKS.index(week)]
    rows = frame[(frame.decision_type == decision_type) & frame.week.isin(before)]
    return rows if model_key == "*" else rows[rows.model_key == model_key]


def current_rows(frame: pd.DataFrame, decision_type: str, week: str, model_key: str) -> pd.DataFrame:
    """The rows of ``week`` itself."""
    rows = frame[(frame.decision_type == decision_type) & (frame.week == week)]
    return rows if model_key == "*" else rows[rows.model_key == model_key]


def test_confidence_psi_matches_numpy_on_reference_deciles(computed: Computed, records: Records) -> None:
    """Confidence PSI equals numpy's on the reference window's inverted-CDF deciles (in steps of 1/1000)."""
    scored = records.decisions[records.decisions.status == "scored"]
    rows = mart(computed, "drift_confidence")
    assert len(rows) == 24  # weeks 45-48 have a reference
    for row in rows:
        week = (row["week_start"] + dt.timedelta(days=3)).strftime("%G-W%V")
        key = (row["decision_type"], week, row["model_key"])
        expected = confidence_psi(
            current_rows(scored, *key).proposal_probability.to_numpy(),
            reference_rows(scored, *key).proposal_probability.to_numpy(),
        )
        assert row["confidence_psi"] == pytest.approx(expected, rel=1e-9, abs=1e-12)


def mix_psi(current: pd.Series, reference: pd.Series) -> float:
    """PSI of two categorical mixes over the union of their categories."""
    categories = sorted(set(current) | set(reference))
    a = current.value_counts(normalize=True).reindex(categories, fill_value=0).to_numpy()
    e = reference.value_counts(normalize=True).reindex(categories, fill_value=0).to_numpy()
    return psi(a, e)


def test_mix_psi_matches_numpy(computed: Computed, records: Records) -> None:
    """Proposal-mix PSI (scored) and outcome-mix PSI (labelled) equal numpy's over the same windows."""
    scored = records.decisions[records.decisions.status == "scored"]
    for row in mart(computed, "drift"):
        key = (row["decision_type"], row["week"], row["model_key"])
        if row["week"] == WEEKS[0]:
            assert row["proposal_mix_psi"] is None
            continue
        assert row["proposal_mix_psi"] == pytest.approx(
            mix_psi(current_rows(scored, *key).proposal, reference_rows(scored, *key).proposal), rel=1e-9
        )
        assert row["outcome_mix_psi"] == pytest.approx(
            mix_psi(
                current_rows(records.labelled, *key).outcome, reference_rows(records.labelled, *key).outcome
            ),
            rel=1e-9,
        )


def test_ece_alert_fires_on_the_drifted_week_only(computed: Computed) -> None:
    """With outcomes drawn at temperature 0.55 in W48.

    The ECE alert fires there for every model and never in the calibrated weeks; the reference statistics
    equal numpy's mean and sample sd of the weekly ECEs.
    """
    calibration = pd.DataFrame(mart(computed, "calibration"))
    for row in mart(computed, "drift"):
        key = (row["decision_type"], row["model_key"])
        if row["week"] in WEEKS[2:]:
            eces = calibration[
                (calibration.decision_type == key[0])
                & (calibration.model_key == key[1])
                & calibration.week.isin(WEEKS[: WEEKS.index(row["week"])])
            ].ece
            assert row["reference_ece_mean"] == pytest.approx(eces.mean(), rel=1e-12)
            assert row["reference_ece_sd"] == pytest.approx(np.std(eces, ddof=1), rel=1e-9)
        assert row["ece_alert"] is (row["week"] == "2026-W48")


def test_mix_shift_is_flagged_on_the_drifted_week(computed: Computed) -> None:
    """The generator moves 25% of the mix to the last option in W48.

    Mix PSI is banded moderate or worse there and stable before; confidence PSI stays stable (the model's own
    confidences did not change).
    """
    for row in mart(computed, "drift"):
        if row["week"] == WEEKS[0] or row["model_key"] != "*":
            continue
        if row["week"] == "2026-W48":
            assert row["mix_psi_band"] in {"moderate", "significant"}
        else:
            assert row["mix_psi_band"] == "stable"
        assert row["confidence_psi_band"] == "stable"
