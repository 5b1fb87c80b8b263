"""The equal-mass bins (`int_calibration_buckets`, `_edges`, `_binned`): numpy on tiny and tied cases."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from tests.pipelines.harness import model_sql
from tests.pipelines.reference import equal_mass_bins


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
    con.execute(
        "create table int_segments as select 7::ubigint as segment, 1 as model_scope, -1 as all_scope"
    )
    con.execute(
        "create table int_scopes as select * from (values (1, 'd', 'm'), (-1, 'd', '*')) "
        "as t(scope, decision_type, model_key)"
    )
    con.execute(
        "create table int_decisions as select 7::ubigint as segment, date '2026-11-23' as week_start, "
        "v as confidence, true as correct, 0::usmallint as block, true as labelled, false as one_hot "
        "from unnest($v) as t(v)",
        {"v": values},
    )
    got = binned_per_bin(con)
    expected = np.array(list(equal_mass_bins(np.array(values), 2)))
    per_bin = [
        (
            int(b),
            int((expected == b).sum()),
            min(v for v, e in zip(values, expected, strict=True) if e == b),
            max(v for v, e in zip(values, expected, strict=True) if e == b),
        )
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
    con.execute(
        "create table int_segments as select * from (values (1::ubigint, 1, -1), "
        "(2::ubigint, 2, -1)) as t(segment, model_scope, all_scope)"
    )
    con.execute(
        "create table int_scopes as select * from (values (1, 'd', 'a'), (2, 'd', 'b'), "
        "(-1, 'd', '*')) as t(scope, decision_type, model_key)"
    )
    con.execute(
        "create table int_decisions as select unnest($s)::ubigint as segment, "
        "date '2026-11-23' as week_start, unnest($v) as confidence, true as correct, "
        "0::usmallint as block, true as labelled, false as one_hot",
        {"v": values.tolist(), "s": models.tolist()},
    )
    got = binned_per_bin(con)
    for key, rows in (("a", values[models == 1]), ("b", values[models == 2]), ("*", values)):
        ids = equal_mass_bins(rows, 15)
        expected = [
            (b, int((ids == b).sum()), rows[ids == b].min(), rows[ids == b].max()) for b in np.unique(ids)
        ]
        assert [row[1:] for row in got if row[0] == key] == expected, key
