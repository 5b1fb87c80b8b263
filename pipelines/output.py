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

from pipelines.arrow_buffers import date32
from pipelines.errors import PipelinesError
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
    return con.sql(f"{incoming_rows(mart)} order by all", params=row_params(window)).to_arrow_table()


def row_params(window: Window) -> dict[str, object]:
    """The parameters of ``incoming_rows``: the target Mondays' range, ``as_of``, the mature Mondays."""
    mondays = window.targets()
    return {
        "first": mondays[0], "last": mondays[-1], "as_of": window.as_of,
        "mature": [m for m in mondays if window.is_mature(m)],
    }


def incoming_rows(mart: str) -> str:
    """The target weeks' rows of a mart with ``as_of`` and ``mature``, as SQL over the job's connection.

    Parameters: ``row_params``. Built in SQL, not in Arrow, so that no pandas import is needed
    (``arrow_buffers.py`` says why).
    """
    return (
        "select *, $as_of::timestamptz as as_of, list_contains($mature::date[], week_start) as mature "  # noqa: S608
        f"from {quote_ident(mart)} where week_start >= $first and week_start <= $last"
    )


def week_of(table: pa.Table, monday: dt.date) -> pa.Table:
    """The rows of one week (order kept)."""
    return table.filter(pc.equal(table.column("week_start"), date32(monday)))


def write_parquet(path: Path, table: pa.Table) -> None:
    """Write aside, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)


OUTPUT_CATALOG = "semif_out"
"""The name the output DuckDB file is attached under while the marts are copied into it."""


def replace_weeks(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    columns: dict[str, list[str]],
    window: Window,
    before_commit: Callable[[], object] = lambda: None,
) -> None:
    """Replace the target weeks' rows of every mart in the output DuckDB file ``path``, in one transaction.

    ``columns``: each mart's columns as written (with ``as_of`` and ``mature``). The file is attached to
    the job's connection ``con`` (which holds the marts) and the rows are copied in SQL (``incoming_rows``).
    A mart that gained columns since the file was written gets them added (older weeks read NULL there).
    ``before_commit`` runs last inside the transaction; a failure there or in any mart rolls every mart
    back, leaving the previous run's rows in place.
    """
    mondays = window.targets()
    params = row_params(window)
    con.execute(f"attach $path as {OUTPUT_CATALOG}", {"path": str(path)})
    try:
        stored = stored_columns(con)
        for mart, names in columns.items():
            target = f"{OUTPUT_CATALOG}.main.{quote_ident(mart)}"
            if mart not in stored:
                con.execute(f"create table {target} as {incoming_rows(mart)} limit 0", params)
            elif not set(names) <= stored[mart]:
                add_new_columns(con, mart, stored[mart])
        con.execute("begin")
        try:
            for mart in columns:
                target = f"{OUTPUT_CATALOG}.main.{quote_ident(mart)}"
                con.execute(f"delete from {target} where list_contains($mondays, week_start)",  # noqa: S608
                            {"mondays": mondays})
                try:
                    con.execute(f"insert into {target} by name {incoming_rows(mart)}", params)
                except duckdb.Error as exc:
                    raise PipelinesError(f"cannot store the {mart} mart in {path}: {exc}") from exc
            before_commit()
        except BaseException:
            con.execute("rollback")
            raise
        con.execute("commit")
    finally:
        con.execute(f"detach {OUTPUT_CATALOG}")


def stored_columns(con: duckdb.DuckDBPyConnection) -> dict[str, set[str]]:
    """The column names of every table in the attached output file, by table."""
    stored: dict[str, set[str]] = {}
    for table, column in con.execute(
        "select table_name, column_name from information_schema.columns "
        "where table_catalog = $catalog and table_schema = 'main'",
        {"catalog": OUTPUT_CATALOG},
    ).fetchall():
        stored.setdefault(table, set()).add(column)
    return stored


def add_new_columns(con: duckdb.DuckDBPyConnection, mart: str, stored: set[str]) -> None:
    """Add to the stored table the columns the mart (with ``as_of`` and ``mature``) has and it lacks."""
    columns = [(name, kind) for name, kind, *_ in con.sql(f"describe {quote_ident(mart)}").fetchall()]
    for column, column_type in [*columns, ("as_of", "TIMESTAMP WITH TIME ZONE"), ("mature", "BOOLEAN")]:
        if column not in stored:
            con.execute(f"alter table {OUTPUT_CATALOG}.main.{quote_ident(mart)} "
                        f"add column {quote_ident(column)} {column_type}")


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
    with ThreadPoolExecutor(1, thread_name_prefix="parquet") as pool:
        files = pool.submit(write_week_files, out, tables, mondays)
        columns = {mart: table.column_names for mart, table in tables.items()}
        replace_weeks(con, out / DATABASE_FILE, columns, window, before_commit=files.result)
    return {mart: table.num_rows for mart, table in tables.items()}
