"""The `cp_lower` UDF (one-sided Clopper-Pearson lower bound) against statsmodels and scipy."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

from pipelines.arrow_buffers import date32, float_array, floats
from pipelines.udfs import cp_lower


def test_cp_lower_matches_statsmodels_and_the_binomial_tail() -> None:
    """cp_lower(x.

    N, a) is statsmodels' Clopper-Pearson lower limit at level 1 - 2a, and P(X >= x | n, L) = a.
    """
    x = np.array([0, 1, 5, 95, 100, 9_990, 123_456])
    n = np.array([10, 10, 20, 100, 100, 10_000, 130_000])
    a = np.full(x.size, 0.0125)
    got = cp_lower(pa.array(x), pa.array(n), pa.array(a)).to_numpy()
    lower, _ = proportion_confint(x, n, alpha=2 * a, method="beta")
    np.testing.assert_allclose(got, np.nan_to_num(lower), rtol=1e-9, atol=1e-15)
    tail = binom.sf(x[1:] - 1, n[1:], got[1:])
    np.testing.assert_allclose(tail, a[1:], rtol=1e-6)


def test_floats_reads_chunks_slices_and_nulls() -> None:
    """The UDFs' Arrow-buffer reader: several chunks, a slice's offset, null as NaN, and no rows."""
    chunked = pa.chunked_array([[1, 2, None], [4, 5]])
    np.testing.assert_array_equal(floats(chunked), [1.0, 2.0, np.nan, 4.0, 5.0])
    np.testing.assert_array_equal(floats(chunked.slice(1, 3)), [2.0, np.nan, 4.0])
    assert floats(pa.array([1.5, 2.5, 3.5]).slice(1)).tolist() == [2.5, 3.5]  # an offset into the buffer
    assert floats(pa.chunked_array([], pa.int64())).size == 0
    assert float_array(np.array([0.25, 1.0])).to_pylist() == [0.25, 1.0]
    assert date32(dt.date(2026, 11, 23)) == pa.scalar(dt.date(2026, 11, 23), pa.date32())
