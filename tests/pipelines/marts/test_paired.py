"""The `paired` mart: two candidates on the same decisions, against numpy, scipy and statsmodels."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest
from scipy.stats import norm
from statsmodels.stats.contingency_tables import mcnemar

from pipelines import synth
from pipelines.generate import Plan, generate
from pipelines.storage import open_root
from tests.pipelines.harness import AS_OF, Computed, mart, run_window
from tests.pipelines.reference import load_records

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd

    from tests.pipelines.reference import Records


def pairs_of(records: Records, row: dict[str, object]) -> pd.DataFrame:
    """The decisions of the row's type and week that both sides scored and that have an outcome, joined."""
    labelled = records.labelled
    sides = []
    for side in ("a", "b"):
        rows = labelled[(labelled.decision_type == row["decision_type"]) & (labelled.week == row["week"])
                        & (labelled.candidate == row[f"candidate_{side}"])]
        if row[f"model_key_{side}"] != "*":
            rows = rows[rows.model_key == row[f"model_key_{side}"]]
        sides.append(rows[["decision_id", "proposal", "outcome", "proposal_probability"]])
    return sides[0].merge(sides[1], on="decision_id", suffixes=("_a", "_b"))


def test_paired_matches_numpy_scipy_and_statsmodels(ab_computed: Computed, ab_records: Records) -> None:
    """Every pair equals a reference computed from the records joined on decision id.

    Counts, accuracies, the difference and its 95% paired Wald interval (numpy: mean and sd of the
    per-decision differences, scipy's normal quantile), McNemar's exact p (statsmodels) and each side's
    calibration.
    """
    rows = mart(ab_computed, "paired")
    assert {(r["candidate_a"], r["candidate_b"]) for r in rows} == {("challenger", "default")}
    assert sum(r["model_key_a"] == "*" for r in rows) == 4
    check_pairs(rows, ab_records)


def test_four_candidates_are_six_pairs_each_equal_to_the_reference(tmp_path: Path) -> None:
    """With four candidates every two of them (by name) are a pair, each equal to the reference."""
    knobs = synth.Knobs(challenger=synth.CHALLENGER, more_challengers=synth.MORE_CHALLENGERS)
    generate(open_root(str(tmp_path)), Plan(decisions=4_000, weeks=1, drift_week=None, seed=29, knobs=knobs))
    run = run_window(tmp_path, None, first="2026-W44", last="2026-W44")
    try:
        rows = [r for r in mart(run, "paired") if r["week"] == "2026-W44"]
    finally:
        run.con.close()
    names = sorted(["default", "challenger", "challenger-2", "challenger-3"])
    pairs = {(a, b) for i, a in enumerate(names) for b in names[i + 1:]}
    assert {(r["candidate_a"], r["candidate_b"]) for r in rows} == pairs
    assert sum(r["model_key_a"] == "*" for r in rows) == 2 * len(pairs)  # two decision types
    check_pairs(rows, load_records(tmp_path, AS_OF))


def check_pairs(rows: list[dict[str, object]], records: Records) -> None:
    """Each row of the paired mart against numpy, scipy and statsmodels on the records."""
    z = norm.ppf(0.975)
    for row in rows:
        both = pairs_of(records, row)
        a = (both.proposal_a == both.outcome_a).to_numpy(int)
        b = (both.proposal_b == both.outcome_b).to_numpy(int)
        d = b - a
        assert row["paired"] == len(both) > 0
        assert row["only_a"] == int(((a == 1) & (b == 0)).sum())
        assert row["only_b"] == int(((a == 0) & (b == 1)).sum())
        assert row["agreement_a"] == pytest.approx(a.mean(), rel=1e-12)
        assert row["agreement_b"] == pytest.approx(b.mean(), rel=1e-12)
        assert row["difference"] == pytest.approx(d.mean(), rel=1e-12, abs=1e-15)
        half = z * d.std(ddof=0) / np.sqrt(d.size)
        assert row["difference_low"] == pytest.approx(d.mean() - half, rel=1e-9, abs=1e-12)
        assert row["difference_high"] == pytest.approx(d.mean() + half, rel=1e-9, abs=1e-12)
        table = [[row["both_correct"], row["only_a"]], [row["only_b"], row["neither"]]]
        assert row["mcnemar_p"] == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)
        assert row["mean_confidence_a"] == pytest.approx(both.proposal_probability_a.mean(), rel=1e-12)
        assert row["brier_top_b"] == pytest.approx(((both.proposal_probability_b - b) ** 2).mean(), rel=1e-12)


def test_paired_latency_and_cost_of_each_side(ab_computed: Computed, ab_records: Records) -> None:
    """Each side's mean scorer time is over every decision it scored that week; the CPU side costs more."""
    scored = ab_records.decisions[ab_records.decisions.status == "scored"]
    for row in mart(ab_computed, "paired"):
        for side in ("a", "b"):
            rows = scored[(scored.decision_type == row["decision_type"]) & (scored.week == row["week"])
                          & (scored.candidate == row[f"candidate_{side}"])]
            if row[f"model_key_{side}"] != "*":
                rows = rows[rows.model_key == row[f"model_key_{side}"]]
            assert row[f"mean_scorer_ms_{side}"] == pytest.approx(rows.scorer_ms.mean(), rel=1e-9)
            assert row[f"usd_per_1k_{side}"] > 0


def test_a_decision_missing_on_one_side_is_not_paired(ab_computed: Computed, ab_records: Records) -> None:
    """Pairs are only the decisions both candidates scored and that have an outcome.

    Fewer than either side's labelled decisions (each side drops or times out some on its own).
    """
    agreement = {(r["decision_type"], r["week"], r["model_key"]): r for r in mart(ab_computed, "agreement")}
    labelled = ab_records.labelled
    for row in mart(ab_computed, "paired"):
        if row["model_key_a"] != "*":
            key = (row["decision_type"], row["week"], row["model_key_a"])
            assert row["paired"] < agreement[key]["labelled"]
            continue
        per_candidate = labelled[
            (labelled.decision_type == row["decision_type"]) & (labelled.week == row["week"])
        ]
        assert row["paired"] < (per_candidate.candidate == "default").sum()
