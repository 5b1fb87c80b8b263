"""The `thresholds` mart: a numpy fixed-sequence search, and a tiny case by hand."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.udfs import register_udfs
from tests.pipelines.harness import Computed, mart, model_sql
from tests.pipelines.reference import Records, expected_threshold, scope


def test_thresholds_match_a_numpy_fixed_sequence_search(computed: Computed, records: Records) -> None:
    """Every option's threshold, accepted count and bound equal a direct implementation.

    Some options get one.
    """
    settings = computed.settings
    found = 0
    for row in mart(computed, "thresholds"):
        ref = scope(records.labelled, row["decision_type"], row["week"], row["model_key"])
        options = len(ref.option_ids.iloc[0])
        expected = expected_threshold(
            ref[ref.proposal == row["option_id"]], settings.alpha / options, settings.precision_target, 100
        )
        if expected is None:
            assert row["grid_index"] is None
            continue
        found += 1
        assert row["grid_index"] == expected["grid_index"]
        assert row["accepted"] == expected["accepted"]
        assert row["accepted_correct"] == expected["accepted_correct"]
        assert row["precision_lower"] == pytest.approx(expected["precision_lower"], rel=1e-9)
        assert row["precision_lower"] >= settings.precision_target
        assert row["coverage"] == pytest.approx(expected["accepted"] / len(ref), rel=1e-12)
    assert found >= 9


def test_thresholds_given_a_tiny_case() -> None:
    """Given 200 correct decisions at 0.99 and 200 at 0.50 half right, the threshold is 0.99 (0.5 fails)."""
    con = duckdb.connect()
    register_udfs(con)
    con.execute("create table run_params as select 100 as grid, 0.05 as alpha, 0.95 as precision_target")
    con.execute(
        "create table int_label_rates as select 'd' as decision_type, date '2026-11-23' as week_start, "
        "'m' as model_key, 400 as labelled, 0.9 as label_rate"
    )
    con.execute(
        "create table int_cube_scoped as select 'd' as decision_type, date '2026-11-23' as week_start, "
        "'2026-W48' as week, 'm' as model_key, 'a' as proposal, false as one_hot, * from (values "
        "(99, 2, 200::bigint, 200::bigint), (50, 2, 200, 100)) as t(grid_index, n_options, n, correct)"
    )
    query = f"select threshold, accepted, coverage from ({model_sql('thresholds')})"  # noqa: S608  (our model)
    rows = con.sql(query).fetchall()
    assert rows == [(0.99, 200, 0.5)]
