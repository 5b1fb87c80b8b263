"""Every mart's Parquet files against the schema declared in `pipelines/mart_schema.py`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.errors import PipelinesError
from pipelines.mart_schema import (
    DECLARED,
    LEDGER,
    SQL_TYPES,
    check_marts,
    differences,
    mart_schema,
    model_columns,
)
from pipelines.sqlmodels import load_model, mart_names

if TYPE_CHECKING:
    from tests.pipelines.harness import Computed


def test_every_mart_has_a_declared_schema() -> None:
    """The declaration covers exactly the marts the runner builds, and declares no decimal or float count."""
    assert set(DECLARED) == set(mart_names())
    for mart, fields in DECLARED.items():
        for name, kind in fields:
            assert not pa.types.is_decimal(kind), (mart, name)


def test_no_mart_column_calls_agreement_accuracy() -> None:
    """Agreement with production's outcome is never named accuracy: no declared column says so.

    The agreement columns are ``agreement`` (``agreement``, ``reliability``) and ``agreement_a`` / ``_b``.
    """
    named = {(mart, name) for mart, fields in DECLARED.items() for name, _ in fields}
    assert not [column for column in named if "accuracy" in column[1]]
    assert {("agreement", "agreement"), ("reliability", "agreement"), ("paired", "agreement_a"),
            ("paired", "agreement_b")} <= named


@pytest.mark.parametrize("name", sorted(DECLARED))
def test_mart_parquet_files_follow_the_declared_schema(computed: Computed, name: str) -> None:
    """Each written week of each mart has the declared columns, in order, with the declared types.

    Counts are int64 in every mart (a DuckDB sum of integers would otherwise arrive as decimal128(38, 0)).
    """
    files = sorted((computed.out / name).glob("week=*/part-0.parquet"))
    assert files, name
    for path in files:
        schema, declared = pq.read_schema(path), mart_schema(name)
        written = [(field.name, str(field.type)) for field in schema]
        expected = [(field.name, str(field.type)) for field in declared]
        assert written == expected, (path, differences(declared, schema))


def test_every_stored_mart_table_has_the_declared_columns_and_types(computed: Computed) -> None:
    """``pipelines.duckdb``: each mart's table has its declared columns, in order, each with its SQL type.

    The ``evidence`` model gives none of the ledger's columns (``LEDGER``): the ledger adds them, so the
    stored table is as it was when the model had them as typed nulls.
    """
    con = duckdb.connect(str(computed.out / "pipelines.duckdb"), read_only=True)
    try:
        for mart in DECLARED:
            stored = [(name, kind) for name, kind, *_ in con.sql(f'describe "{mart}"').fetchall()]
            wanted = [(field.name, con.sql(f"select typeof(null::{SQL_TYPES[field.type]})").fetchall()[0][0])
                      for field in mart_schema(mart)]
            assert stored == wanted, mart
    finally:
        con.close()
    sql = re.sub(r"--[^\n]*", "", load_model("evidence").sql)
    assert [name for name, _ in model_columns("evidence")] == [name for name, _ in DECLARED["evidence"]][
        :-len(LEDGER)]
    assert not [name for name, _ in LEDGER if re.search(rf"\b{name}\b", sql)]


def test_the_writer_refuses_a_mart_off_its_declared_schema() -> None:
    """A count that arrives as a decimal stops the write with one message naming the mart and column."""
    declared = mart_schema("agreement")
    arrays = [pa.nulls(1, field.type) for field in declared]
    table = pa.Table.from_arrays(arrays, schema=declared)
    check_marts([("agreement", table)])  # as declared: accepted
    wrong = table.set_column(
        declared.get_field_index("labelled"), "labelled", pa.nulls(1, pa.decimal128(38, 0))
    )
    with pytest.raises(PipelinesError, match=r"agreement: labelled is decimal128\(38, 0\), declared int64"):
        check_marts([("agreement", wrong)])
