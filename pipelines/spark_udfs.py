"""The Spark forms of the models' scalar functions: the same Python as ``udfs.py``, as vectorized UDFs.

``cp_lower`` (scipy's ``betaincinv``) and ``mcnemar_exact_p`` run the functions of ``udfs.py`` on Arrow
batches (``pandas_udf``); ``identity_diff`` (a few rows) is a row UDF. ``duckdb_hash_mod1/2`` are DuckDB's
own ``hash(...) % m``, computed by DuckDB on each batch: the bootstrap's blocks and draws depend on the hash
values, so Spark draws exactly the blocks DuckDB draws (Spark's hashes are other functions). Executors need
the ``pipelines`` extra (DuckDB, scipy) installed, as the job's packaging provides (docs/pipelines-spark.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import duckdb
import pandas as pd
import pyarrow as pa
from pyspark.sql import types as T  # noqa: N812
from pyspark.sql.functions import udf
from pyspark.sql.pandas.functions import pandas_udf

from pipelines import udfs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DIFF_TYPE = T.ArrayType(T.StructType([
    T.StructField("field", T.StringType()),
    T.StructField("before", T.StringType()),
    T.StructField("after", T.StringType()),
]))


def _arrow(series: pd.Series) -> pa.Array:
    return pa.Array.from_pandas(series)


def cp_lower(successes: pd.Series, trials: pd.Series, alpha: pd.Series) -> pd.Series:
    """``udfs.cp_lower`` on one batch."""
    bound = udfs.cp_lower(_arrow(successes), _arrow(trials), _arrow(alpha))
    return pd.Series(bound.to_numpy(zero_copy_only=False))


def mcnemar_exact_p(only_a: pd.Series, only_b: pd.Series) -> pd.Series:
    """``udfs.mcnemar_exact_p`` on one batch."""
    return pd.Series(udfs.mcnemar_exact_p(_arrow(only_a), _arrow(only_b)).to_numpy(zero_copy_only=False))


def duckdb_hash_mod(modulus: pd.Series, *values: pd.Series) -> pd.Series:
    """DuckDB's ``hash(values...) % modulus`` on one batch (integers as BIGINT, as ``range`` makes them)."""
    columns = {}
    for index, series in enumerate(values):
        array = _arrow(series)
        columns[f"v{index}"] = array.cast(pa.int64()) if pa.types.is_integer(array.type) else array
    columns["m"] = _arrow(modulus).cast(pa.int64())
    batch = pa.table(columns)  # noqa: F841  (read by the query below, by name)
    keys = ", ".join(f"v{index}" for index in range(len(values)))
    with duckdb.connect() as con:
        result = con.sql(f"select (hash({keys}) % m::ubigint)::bigint as r from batch").to_arrow_table()  # noqa: S608
    return pd.Series(result.column("r").to_numpy())


def _hash_mod1(value: pd.Series, modulus: pd.Series) -> pd.Series:
    return duckdb_hash_mod(modulus, value)


def _hash_mod2(first: pd.Series, second: pd.Series, modulus: pd.Series) -> pd.Series:
    return duckdb_hash_mod(modulus, first, second)


def identity_diff(before: str | None, after: str | None) -> list[dict[str, str | None]]:
    """``udfs.identity_diff`` (a row UDF: it runs on each new identity only)."""
    return udfs.identity_diff(before, after)


def register_spark_udfs(spark: SparkSession) -> None:
    """Register every function the generated Spark SQL calls."""
    spark.udf.register("cp_lower", pandas_udf(cp_lower, T.DoubleType()))  # type: ignore[call-overload]
    spark.udf.register("mcnemar_exact_p", pandas_udf(mcnemar_exact_p, T.DoubleType()))  # type: ignore[call-overload]
    spark.udf.register("duckdb_hash_mod1", pandas_udf(_hash_mod1, T.LongType()))  # type: ignore[call-overload]
    spark.udf.register("duckdb_hash_mod2", pandas_udf(_hash_mod2, T.LongType()))  # type: ignore[call-overload]
    spark.udf.register("identity_diff", udf(identity_diff, DIFF_TYPE))
