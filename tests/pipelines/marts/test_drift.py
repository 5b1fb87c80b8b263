"""The `drift` mart: the ECE alert and the mix-shift flag on the week the generator drifted."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.pipelines.conftest import Computed, mart
from tests.pipelines.reference import WEEKS


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
