"""Write each target week's marts.

``<out>/<mart>/week=<YYYY-Www>/part-0.parquet`` and ``<out>/pipelines.duckdb``.

A week's Parquet file is written aside and renamed over the old one; in the DuckDB file the target weeks'
rows of every mart are deleted and inserted in one transaction. Rerunning a week therefore replaces it whole.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipelines.mart_schema import check_marts
from pipelines.sqlmodels import mart_names, quote_ident
from pipelines.weeks import Window, week_label

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Callable
    from pathlib import Path

DATABASE_FILE = "pipelines.duckdb"


def mart_rows(con: duckdb.DuckDBPyConnection, mart: str, window: Window) -> pa.Table:
    """The target weeks' rows of a mart, ordered, with ``as_of`` and ``mature`` (outcomes final)."""
    mondays = window.targets()
    query = (
        f"select * from {quote_ident(mart)} "  # noqa: S608  (a mart name, quoted)
        "where week_start >= $first and week_start <= $last order by all"
    )
    table = con.sql(query, params={"first": mondays[0], "last": mondays[-1]}).to_arrow_table()
    mature = pa.array([m for m in mondays if window.is_mature(m)], pa.date32())
    flags = pc.is_in(table.column("week_start"), value_set=mature)  # vectorized: severe_errors has 80k rows
    as_of = pa.repeat(pa.scalar(window.as_of, pa.timestamp("us", tz="UTC")), table.num_rows)
    table = table.append_column("as_of", as_of)
    return table.append_column("mature", flags)


def week_of(table: pa.Table, monday: dt.date) -> pa.Table:
    """The rows of one week (order kept)."""
    return table.filter(pc.equal(table.column("week_start"), pa.scalar(monday, pa.date32())))


def write_parquet(path: Path, table: pa.Table) -> None:
    """Write aside, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)


def replace_weeks(
    db: duckdb.DuckDBPyConnection,
    tables: dict[str, pa.Table],
    mondays: list[dt.date],
    before_commit: Callable[[], object] = lambda: None,
) -> None:
    """Replace the target weeks' rows of every mart in the output DuckDB file, in one transaction.

    A mart that gained columns since the file was written gets them added (older weeks read NULL there).
    ``before_commit`` runs last inside the transaction; a failure there or in any mart rolls every mart
    back, leaving the previous run's rows in place.
    """
    incoming = {mart: f"incoming_{index}" for index, mart in enumerate(tables)}
    for mart, table in tables.items():
        db.register(incoming[mart], table)
    try:
        stored = stored_columns(db)
        for mart, table in tables.items():
            if mart not in stored:
                db.execute(f"create table {quote_ident(mart)} as "  # noqa: S608
                           f"select * from {incoming[mart]} limit 0")
            elif not set(table.column_names) <= stored[mart]:
                add_new_columns(db, mart, incoming[mart], stored[mart])
        db.execute("begin")
        try:
            for mart in tables:
                name = quote_ident(mart)
                db.execute(f"delete from {name} where list_contains($mondays, week_start)",  # noqa: S608
                           {"mondays": mondays})
                db.execute(f"insert into {name} by name select * from {incoming[mart]}")  # noqa: S608
            before_commit()
        except BaseException:
            db.execute("rollback")
            raise
        db.execute("commit")
    finally:
        for name in incoming.values():
            db.unregister(name)


def stored_columns(db: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    """The column names of every table in the output file, by table."""
    stored: dict[str, set[str]] = {}
    for table, column in db.execute(
        "select table_name, column_name from information_schema.columns where table_schema = 'main'"
    ).fetchall():
        stored.setdefault(table, set()).add(column)
    return stored


def add_new_columns(db: duckdb.DuckDBPyConnection, mart: str, incoming: str, stored: set[str]) -> None:
    """Add to the stored table the columns ``incoming`` has and it lacks (types as DuckDB sees them)."""
    for column, column_type, *_ in db.sql(f"describe {incoming}").fetchall():
        if column not in stored:
            db.execute(f"alter table {quote_ident(mart)} add column {quote_ident(column)} {column_type}")


def write_week_files(out: Path, tables: dict[str, pa.Table], mondays: list[dt.date]) -> None:
    """``<out>/<mart>/week=<YYYY-Www>/part-0.parquet`` for every mart and target week."""
    for mart, table in tables.items():
        for monday in mondays:
            path = out / mart / f"week={week_label(monday)}" / "part-0.parquet"
            write_parquet(path, week_of(table, monday))


def write_marts(con: duckdb.DuckDBPyConnection, out: Path, window: Window) -> dict[str, int]:
    """Write every mart for every target week; rows per mart.

    The marts' target weeks are read once and checked against their declared schema (``mart_schema.py``:
    nothing is written when one differs); the Parquet files are written on a second thread while the
    DuckDB file takes them in one transaction, committed only once every Parquet file is in place (each
    file is renamed over the old one as it is done, so a failed run can leave some weeks' files new and
    the DuckDB file as it was, never a torn file).
    """
    out.mkdir(parents=True, exist_ok=True)
    mondays = window.targets()
    tables = {mart: mart_rows(con, mart, window) for mart in mart_names()}
    check_marts(tables.items())  # before anything is written: a mart off its declared types is a bug
    db = duckdb.connect(str(out / DATABASE_FILE))
    try:
        db.execute("set TimeZone = 'UTC'")
        with ThreadPoolExecutor(1, thread_name_prefix="parquet") as pool:
            files = pool.submit(write_week_files, out, tables, mondays)
            replace_weeks(db, tables, mondays, before_commit=files.result)
    finally:
        db.close()
    return {mart: table.num_rows for mart, table in tables.items()}
