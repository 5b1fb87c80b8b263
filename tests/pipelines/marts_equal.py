"""Two mart folders compared row by row: counts exactly, floats within 1e-9 relative (the engines' test)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import duckdb
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa

RELATIVE = 1e-9


def sorted_rows(path: Path) -> pa.Table:
    """A mart file's rows in a total order (``as_of`` and ``mature`` kept: both engines write them)."""
    rows = pq.read_table(path)  # noqa: F841  (read by the query, by name)
    return duckdb.sql("select * from rows order by all").to_arrow_table()


def differences(left: pa.Table, right: pa.Table) -> list[str]:
    """Where two tables differ: row counts, exact values, floats beyond ``RELATIVE``."""
    if left.schema != right.schema:
        return [f"schema {left.schema} != {right.schema}"]
    if left.num_rows != right.num_rows:
        return [f"{left.num_rows} rows != {right.num_rows} rows"]
    found = []
    for name in left.column_names:
        for index, (a, b) in enumerate(zip(left[name].to_pylist(), right[name].to_pylist(), strict=True)):
            same = a == b or (
                isinstance(a, float) and isinstance(b, float)
                and (math.isclose(a, b, rel_tol=RELATIVE, abs_tol=0.0) or (math.isnan(a) and math.isnan(b)))
            )
            if not same:
                found.append(f"{name}[{index}]: {a!r} != {b!r}")
                break
    return found


def mart_files(out: Path) -> list[Path]:
    """Every mart file (``<mart>/week=<W>/part-0.parquet``) under a run's output folder, relative to it."""
    return sorted(p.relative_to(out) for p in out.rglob("part-0.parquet"))


def unequal_marts(left: Path, right: Path) -> dict[str, list[str]]:
    """Each ``part-0.parquet`` under ``left`` whose rows differ from ``right``'s (same relative path)."""
    return {str(f): d for f in mart_files(left)
            if (d := differences(sorted_rows(left / f), sorted_rows(right / f)))}
