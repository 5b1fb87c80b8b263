"""Calibration marts (reliability.

Ece_bootstrap, classwise_calibration, calibration) against scikit-learn and numpy on generated data, plus
their invariants.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, log_loss

from tests.pipelines.conftest import Computed, mart, model_sql
from tests.pipelines.reference import Records, equal_mass_bins, probability_matrix, scope, top_label_ece


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
            got.accuracy, np.bincount(ids, correct)[counts > 0] / counts[counts > 0], rtol=1e-12
        )
        prob_true, prob_pred = calibration_curve(correct, conf, n_bins=15, strategy="quantile")
        np.testing.assert_allclose(got.mean_confidence, prob_pred, atol=1.0 / counts.min())
        np.testing.assert_allclose(got.accuracy, prob_true, atol=1.0 / counts.min())


def test_ece_mce_brier_and_log_loss_match_the_references(computed: Computed, records: Records) -> None:
    """Top-label ECE and MCE (numpy over sklearn's bins), multiclass Brier and log-loss (scikit-learn)."""
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


def test_calibration_invariants_and_known_properties(computed: Computed) -> None:
    """Reliability counts sum to labelled.

    ECE <= MCE; the calibrated weeks have small ECE, the drifted one not.
    """
    rows = pd.DataFrame(mart(computed, "reliability"))
    for row in mart(computed, "calibration"):
        got = rows[
            (rows.decision_type == row["decision_type"])
            & (rows.week == row["week"])
            & (rows.model_key == row["model_key"])
        ]
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


def binned_per_bin(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    """Build the equal-mass bin models on ``con``: (model key, bin, count, lowest, highest) per bin."""
    for name in ("int_calibration_labelled", "int_calibration_buckets", "int_calibration_edges"):
        con.execute(f"create table {name} as {model_sql(name)}")
    return con.sql(
        "select model_key, bin, sum(decisions), min(confidence_min), max(confidence_max) "  # noqa: S608  (our model)
        f"from ({model_sql('int_calibration_binned')}) group by all order by all"
    ).fetchall()


def test_equal_mass_bins_on_a_tiny_case_with_ties() -> None:
    """Given five confidences with a three-way tie and two bins.

    Int_calibration_binned puts each row in the bin numpy's searchsorted over np.percentile edges gives (ties
    share a bin), per model and under '*': each bin holds exactly numpy's rows (count, lowest, highest).
    """
    values = [0.2, 0.5, 0.5, 0.5, 0.9]
    con = duckdb.connect()
    con.execute("create table run_params as select 2 as ece_bins")
    con.execute("create table int_segments as select 7::ubigint as segment, "
                "1 as model_scope, -1 as all_scope")
    con.execute("create table int_scopes as select * from (values (1, 'd', 'm'), (-1, 'd', '*')) "
                "as t(scope, decision_type, model_key)")
    con.execute(
        "create table int_decisions as select 7::ubigint as segment, date '2026-11-23' as week_start, "
        "v as confidence, true as correct, 0::usmallint as block, true as labelled from unnest($v) as t(v)",
        {"v": values},
    )
    got = binned_per_bin(con)
    expected = np.array(list(equal_mass_bins(np.array(values), 2)))
    per_bin = [
        (int(b), int((expected == b).sum()), min(v for v, e in zip(values, expected, strict=True) if e == b),
         max(v for v, e in zip(values, expected, strict=True) if e == b))
        for b in sorted(set(expected.tolist()))
    ]
    for key in ("*", "m"):
        assert [row[1:] for row in got if row[0] == key] == per_bin


@pytest.mark.parametrize("decimals", [2, 4, 12])
def test_equal_mass_bins_match_numpy_with_many_ties_and_edges_sharing_buckets(decimals: int) -> None:
    """Given 3,000 skewed confidences (rounded, so ties sit on the edges; 1.0 included) over two models.

    Every row lands in numpy's percentile bin, per model and under '*' (the bucketed order statistics are
    exact whatever the tie pattern).
    """
    rng = np.random.default_rng(decimals)
    values = np.round(np.concatenate([rng.beta(8, 1, 2_990), np.ones(10)]), decimals)
    models = rng.integers(1, 3, values.size)
    con = duckdb.connect()
    con.execute("create table run_params as select 15 as ece_bins")
    con.execute("create table int_segments as select * from (values (1::ubigint, 1, -1), "
                "(2::ubigint, 2, -1)) as t(segment, model_scope, all_scope)")
    con.execute("create table int_scopes as select * from (values (1, 'd', 'a'), (2, 'd', 'b'), "
                "(-1, 'd', '*')) as t(scope, decision_type, model_key)")
    con.execute(
        "create table int_decisions as select unnest($s)::ubigint as segment, "
        "date '2026-11-23' as week_start, unnest($v) as confidence, true as correct, "
        "0::usmallint as block, true as labelled",
        {"v": values.tolist(), "s": models.tolist()},
    )
    got = binned_per_bin(con)
    for key, rows in (("a", values[models == 1]), ("b", values[models == 2]), ("*", values)):
        ids = equal_mass_bins(rows, 15)
        expected = [
            (b, int((ids == b).sum()), rows[ids == b].min(), rows[ids == b].max()) for b in np.unique(ids)
        ]
        assert [row[1:] for row in got if row[0] == key] == expected, key
