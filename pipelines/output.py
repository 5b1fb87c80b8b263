"""Write each target week's marts.

``<out>/<mart>/week=<YYYY-Www>/part-0.parquet`` and ``<out>/pipelines.duckdb``.

A week's Parquet file is written aside and renamed over the old one; in the DuckDB file the week's rows
are deleted and inserted in one transaction. Rerunning a week therefore replaces it whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.sqlmodels import mart_names, quote_ident
from pipelines.weeks import Window, week_label

if TYPE_CHECKING:
    import datetime as dt
    from pathlib import Path

DATABASE_FILE = "pipelines.duckdb"


def week_rows(con: duckdb.DuckDBPyConnection, mart: str, monday: dt.date, window: Window) -> pa.Table:
    """One week's rows of a mart, with ``as_of`` and ``mature`` (the week's outcomes are final) appended."""
    query = f"select * from {quote_ident(mart)} where week_start = $monday order by all"  # noqa: S608
    table = con.sql(query, params={"monday": monday}).to_arrow_table()
    n = table.num_rows
    table = table.append_column("as_of", pa.array([window.as_of] * n, pa.timestamp("us", tz="UTC")))
    return table.append_column("mature", pa.array([window.is_mature(monday)] * n, pa.bool_()))


def write_parquet(path: Path, table: pa.Table) -> None:
    """Write aside, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)


def replace_week(db: duckdb.DuckDBPyConnection, mart: str, monday: dt.date, table: pa.Table) -> None:
    """Replace one week's rows of ``mart`` in the output DuckDB file, in one transaction.

    A mart that gained columns since the file was written gets them added (older weeks read NULL there);
    a failure rolls the week back, leaving the previous rows in place.
    """
    name = quote_ident(mart)
    db.register("incoming", table)
    try:
        db.execute(f"create table if not exists {name} as select * from incoming limit 0")  # noqa: S608
        add_new_columns(db, mart)
        db.execute("begin")
        try:
            db.execute(f"delete from {name} where week_start = $monday", {"monday": monday})  # noqa: S608
            db.execute(f"insert into {name} by name select * from incoming")  # noqa: S608
        except duckdb.Error:
            db.execute("rollback")
            raise
        db.execute("commit")
    finally:
        db.unregister("incoming")


def add_new_columns(db: duckdb.DuckDBPyConnection, mart: str) -> None:
    """Add to the stored table the columns ``incoming`` has and it lacks (types as DuckDB sees them)."""
    stored = {row[0] for row in db.execute(
        "select column_name from information_schema.columns where table_name = $t", {"t": mart}).fetchall()}
    for column, column_type, *_ in db.sql("describe incoming").fetchall():
        if column not in stored:
            db.execute(f"alter table {quote_ident(mart)} add column {quote_ident(column)} {column_type}")


def write_marts(con: duckdb.DuckDBPyConnection, out: Path, window: Window) -> dict[str, int]:
    """Write every mart for every target week; return rows written per mart."""
    out.mkdir(parents=True, exist_ok=True)
    rows: dict[str, int] = {}
    db = duckdb.connect(str(out / DATABASE_FILE))
    try:
        db.execute("set TimeZone = 'UTC'")
        for mart in mart_names():
            rows[mart] = 0
            for monday in window.targets():
                table = week_rows(con, mart, monday, window)
                write_parquet(out / mart / f"week={week_label(monday)}" / "part-0.parquet", table)
                replace_week(db, mart, monday, table)
                rows[mart] += table.num_rows
    finally:
        db.close()
    return rows
