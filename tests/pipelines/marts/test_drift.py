"""The `drift` mart: the ECE alert and the mix-shift flag on the week the generator drifted."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest

from pipelines.generate import Plan, generate
from pipelines.storage import open_root
from tests.pipelines.harness import Computed, mart, run_window
from tests.pipelines.reference import WEEKS

if TYPE_CHECKING:
    from pathlib import Path


def test_ece_alert_fires_on_the_drifted_week_only(computed: Computed) -> None:
    """With outcomes drawn at temperature 0.55 in W48.

    The ECE alert fires there for every model identity with at least 300 labelled decisions (the smallest,
    ~225, are too noisy to be sure) and never in the calibrated weeks; the reference statistics equal
    numpy's mean and sample sd of the weekly ECEs.
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
        if row["week"] != "2026-W48" or row["labelled"] >= 300:
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


def test_ece_alert_fires_from_a_single_reference_week(computed: Computed, tmp_path: Path) -> None:
    """A new deployment's second week, drifted (outcomes at temperature 0.55), against one week of history.

    Over all models ('*') its ECE is about 10x the reference week's (0.15 vs 0.01-0.02), and every scope
    whose ECE is 5x its reference week's alerts: the week's interval lies above the reference week's
    (mean + 3 sd would need more weeks). A steady week with one reference week (W45 of the session data)
    does not alert.
    """
    generate(open_root(str(tmp_path / "records")), Plan(decisions=12_000, weeks=2, drift_week=1, seed=3))
    run = run_window(tmp_path / "records", None, first="2026-W44", last="2026-W45")
    try:
        drifted = [r for r in mart(run, "drift") if r["week"] == "2026-W45"]
    finally:
        run.con.close()
    tenfold = [r for r in drifted if r["ece"] > 5 * r["reference_ece_mean"]]
    assert {r["decision_type"] for r in tenfold if r["model_key"] == "*"} == {"ticket_routing", "priority"}
    for row in tenfold:
        assert row["reference_ece_weeks"] == 1
        assert row["ece_alert"] is True, row
        assert row["ece_low"] > row["reference_ece_high"], row
    steady = [r for r in mart(computed, "drift") if r["week"] == "2026-W45"]
    assert steady
    assert all(r["reference_ece_weeks"] == 1 and r["ece_alert"] is False for r in steady)
