"""Scalar functions the SQL models call that DuckDB lacks, registered on each connection."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from duckdb.func import ARROW
from duckdb.sqltypes import BIGINT, DOUBLE
from scipy.special import betaincinv

if TYPE_CHECKING:
    import duckdb


def cp_lower(successes: pa.Array, trials: pa.Array, alpha: pa.Array) -> pa.Array:
    """One-sided Clopper-Pearson lower bound: the ``alpha`` quantile of Beta(x, n - x + 1); 0 when x = 0."""
    x = successes.to_numpy(zero_copy_only=False).astype(np.float64)
    n = trials.to_numpy(zero_copy_only=False).astype(np.float64)
    a = alpha.to_numpy(zero_copy_only=False).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = np.where(x > 0, betaincinv(np.maximum(x, 1.0), n - x + 1.0, a), 0.0)
    return pa.array(bound, type=pa.float64())


def register_udfs(con: duckdb.DuckDBPyConnection) -> None:
    """Register ``cp_lower(successes, trials, alpha)`` (vectorized, over Arrow arrays)."""
    con.create_function(
        "cp_lower", cp_lower, [BIGINT, BIGINT, DOUBLE], DOUBLE, type=ARROW, side_effects=False
    )
