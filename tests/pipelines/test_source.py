"""The raw relations' files: which decision type's join is built first, and files from before v1.2."""

from __future__ import annotations

import datetime as dt
import shutil
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contracts.records import ADDED_AFTER_V1, ADDED_IN_V1_2, DROPS, SCHEMAS
from pipelines.source import WindowFiles, register, register_window
from pipelines.storage import open_root
from pipelines.weeks import window
from tests.pipelines.harness import AS_OF, FIRST, LAST

if TYPE_CHECKING:
    from pathlib import Path


def test_the_type_with_the_most_proposals_is_joined_first(records_root: Path) -> None:
    """Types are ordered by their proposals' bytes, not by file count or name.

    The generated types have one file per day each, so a file count ties and the name would put
    `priority` first; `ticket_routing` holds more decisions and must come first (its join then runs
    while the decision table is empty, which lowers the job's peak memory).
    """
    span = window(FIRST, LAST, 4, AS_OF, dt.timedelta(0))
    con = duckdb.connect()
    files = register_window(con, open_root(str(records_root)), span.read_start, span.read_end, span.as_of)
    rows = {
        t: sum(pq.ParquetFile(f).metadata.num_rows for f in paths) for t, paths in files.proposals.items()
    }
    assert len({len(paths) for paths in files.proposals.values()}) == 1  # same number of files per type
    order = files.types_largest_first()
    assert order == sorted(rows, key=lambda t: -rows[t])
    assert order[0] == "ticket_routing"
    assert rows[order[0]] > rows[order[-1]]


@pytest.mark.parametrize(
    ("budget", "passes"),
    [
        (0, [["a"], ["b"], ["c"], ["d"]]),  # 0: each type alone
        (700, [["a", "d"], ["b", "c"]]),  # first fit: d joins the first pass that has room for it
        (450, [["a"], ["b", "d"], ["c"]]),  # a type larger than the budget is a pass of its own
        (1250, [["a", "b", "c", "d"]]),
    ],
)
def test_types_are_grouped_into_passes_first_fit_largest_first(
    tmp_path: Path, budget: int, passes: list[list[str]]
) -> None:
    """Whole types, largest first, each into the first pass its proposal bytes still fit (names sorted).

    A type with drops but no proposals (its scorer down all week) joins the last pass.
    """
    sizes = {"a": 600, "b": 300, "c": 250, "d": 100}
    files = WindowFiles(open_root(str(tmp_path)), {t: [] for t in sizes}, {}, sizes)
    assert files.passes(budget) == passes
    assert sorted(t for p in passes for t in p) == sorted(sizes)
    dropped = WindowFiles(open_root(str(tmp_path)), {t: [] for t in sizes}, {}, sizes, drops={"e": []})
    assert dropped.passes(budget) == [*passes[:-1], sorted([*passes[-1], "e"])]


@pytest.mark.parametrize(("version", "lacking"), [(1, ADDED_AFTER_V1), (2, ADDED_IN_V1_2)])
def test_files_written_before_v1_2_read_like_the_same_rows_with_null_added_columns(
    records_root: Path, tmp_path: Path, version: int, lacking: dict[str, frozenset[str]]
) -> None:
    """A window mixing older files (v1 or v1.1) with v1.2 files reads every row; the added columns are null.

    Every other file loses the columns added since its version (as an older sidecar wrote them); the raw
    relations must hold the same rows as before, with those columns null exactly on the older files' rows.
    """
    keys = {"proposals": ["decision_id"], "outcomes": ["decision_id", "outcome_at", "outcome"]}
    root = tmp_path / "records"
    shutil.copytree(records_root, root)
    stripped: dict[str, set[tuple[object, ...]]] = {}
    for dataset, added in lacking.items():
        stripped[dataset] = set()
        for i, path in enumerate(sorted((root / dataset).rglob("*.parquet"))):
            if i % 2 == 0:
                table = pq.read_table(path)
                old = table.drop_columns(sorted(added)).set_column(
                    0, "record_version", pa.array([version] * table.num_rows, pa.int16()))
                pq.write_table(old, path)
                columns = [table.column(k).to_pylist() for k in keys[dataset]]
                stripped[dataset] |= set(zip(*columns, strict=True))
    span = window(FIRST, LAST, 4, AS_OF, dt.timedelta(0))
    both = {}
    for name, path in (("mixed", root), ("v1.2", records_root)):
        con = duckdb.connect()
        register_window(con, open_root(str(path)), span.read_start, span.read_end, span.as_of)
        both[name] = {
            dataset: con.table(f"raw_{dataset}").order(", ".join(keys[dataset])).to_arrow_table()
            for dataset in keys
        }
    for dataset, added in lacking.items():
        mixed, full = both["mixed"][dataset], both["v1.2"][dataset]
        assert mixed.num_rows == full.num_rows > 0
        assert mixed.column_names == full.column_names
        row_keys = list(zip(*(mixed.column(k).to_pylist() for k in keys[dataset]), strict=True))
        old = [key in stripped[dataset] for key in row_keys]
        assert any(old)
        assert not all(old)
        for column in sorted(added):
            expected = [None if o else v for o, v in zip(old, full.column(column).to_pylist(), strict=True)]
            assert mixed.column(column).to_pylist() == expected, column
        same = [c for c in mixed.column_names if c not in added and c != "record_version"]
        assert mixed.select(same).equals(full.select(same))


def test_an_empty_raw_relation_reads_like_an_empty_records_file(tmp_path: Path) -> None:
    """With no files in the window, ``raw_<dataset>`` is an empty SQL view (no Arrow registered).

    Its columns and DuckDB types are those DuckDB's Parquet reader gives a file of the records schema.
    """
    con = duckdb.connect()
    for dataset, schema in {**SCHEMAS, "drops": DROPS}.items():
        path = tmp_path / f"{dataset}.parquet"
        pq.write_table(schema.empty_table(), path)
        register(con, open_root(str(tmp_path)), dataset, [])
        empty = con.sql(f"describe raw_{dataset}").fetchall()
        read = con.sql("describe select * from read_parquet($path)", params={"path": str(path)}).fetchall()
        assert [row[:2] for row in empty] == [row[:2] for row in read], dataset
        assert con.sql(f"select count(*) from raw_{dataset}").fetchall() == [(0,)]  # noqa: S608  (schema names)
