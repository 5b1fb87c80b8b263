"""Scalar functions the SQL models call that DuckDB lacks, registered on each connection."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa  # noqa: TC002  (DuckDB evaluates the UDFs' annotations when they are registered)
from duckdb.func import ARROW
from duckdb.sqltypes import BIGINT, DOUBLE, VARCHAR
from scipy.special import betainc, betaincinv

from pipelines.arrow_buffers import float_array, floats

if TYPE_CHECKING:
    import duckdb


def cp_lower(successes: pa.Array, trials: pa.Array, alpha: pa.Array) -> pa.Array:
    """One-sided Clopper-Pearson lower bound: the ``alpha`` quantile of Beta(x, n - x + 1); 0 when x = 0."""
    x, n, a = floats(successes), floats(trials), floats(alpha)
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = np.where(x > 0, betaincinv(np.maximum(x, 1.0), n - x + 1.0, a), 0.0)
    return float_array(bound)


def mcnemar_exact_p(only_a: pa.Array, only_b: pa.Array) -> pa.Array:
    """McNemar's exact two-sided p-value: 2 P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1.

    P(X <= k) for k < n is the regularized incomplete beta I_1/2(n - k, k + 1) (scipy.special's
    ``betainc``; scipy.stats' ``binom.cdf`` gives the same to 1e-14 relative), and 1 at k = n. Importing
    scipy.stats would cost about a second of every run with two candidates.
    """
    b, c = floats(only_a), floats(only_b)
    k, n = np.minimum(b, c), b + c
    with np.errstate(invalid="ignore"):
        below = betainc(np.maximum(n - k, 1.0), k + 1.0, 0.5)
    cdf = np.where(k >= n, 1.0, below)  # NaN (a null count) stays NaN: the comparison is false
    return float_array(np.minimum(1.0, 2.0 * cdf))


DIFF_TYPE = "STRUCT(field VARCHAR, before VARCHAR, after VARCHAR)[]"


def flatten(value: Any, path: str = "") -> dict[str, str]:
    """A JSON value as ``{dotted.path: canonical JSON of the leaf}`` (objects descended, lists kept whole)."""
    if isinstance(value, dict) and value:
        found: dict[str, str] = {}
        for key, item in value.items():
            found |= flatten(item, f"{path}.{key}" if path else str(key))
        return found
    return {path: json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)}


def identity_diff(before: str | None, after: str | None) -> list[dict[str, str | None]]:
    """The fields of two model identities (canonical JSON) that differ, in path order, with both values.

    A field present on one side only has ``None`` on the other; null input reads as ``{}``.
    """
    old = flatten(json.loads(before)) if before else {}
    new = flatten(json.loads(after)) if after else {}
    return [
        {"field": name, "before": old.get(name), "after": new.get(name)}
        for name in sorted(old.keys() | new.keys())
        if old.get(name) != new.get(name)
    ]


def register_udfs(con: duckdb.DuckDBPyConnection) -> None:
    """Register ``cp_lower``, ``mcnemar_exact_p`` (vectorized, over Arrow arrays) and ``identity_diff``."""
    con.create_function(
        "cp_lower", cp_lower, [BIGINT, BIGINT, DOUBLE], DOUBLE, type=ARROW, side_effects=False
    )
    con.create_function(
        "mcnemar_exact_p", mcnemar_exact_p, [BIGINT, BIGINT], DOUBLE, type=ARROW, side_effects=False
    )
    con.create_function(  # type: ignore[call-overload]  # (the stubs do not list struct-list returns)
        "identity_diff", identity_diff, [VARCHAR, VARCHAR], DIFF_TYPE, side_effects=False,
        null_handling="special",
    )
