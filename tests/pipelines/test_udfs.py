"""The UDFs against statsmodels and scipy: `cp_lower` and `mcnemar_exact_p`.

`cp_lower` is the one-sided Clopper-Pearson lower bound, `mcnemar_exact_p` McNemar's exact test.
"""

from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import binom
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from pipelines.arrow_buffers import date32, float_array, floats
from pipelines.udfs import cp_lower, mcnemar_exact_p


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


def test_mcnemar_exact_p_is_twice_the_binomial_tail_capped_at_one() -> None:
    """2 binom.cdf(min(b, c), b + c, 1/2) capped at 1, over small and large tables, ties, empty and null rows.

    A grid of 20,000 random tables (up to 10^8 discordant pairs, any split) besides the edges: no pairs,
    one side empty, b = c, and tails so far out that the p-value underflows to 0.
    """
    rng = np.random.default_rng(7)
    n = np.concatenate([np.arange(0, 200), rng.integers(0, 10**8, 10_000), rng.integers(0, 3_000, 10_000)])
    b = np.floor(rng.random(n.size) * (n + 1)).astype(np.int64)
    c = n - b
    edges_b = np.array([0, 0, 7, 5, 21, 1_000_000, 3])
    edges_c = np.array([0, 9, 0, 5, 600, 1_000_000, 3_000_000])
    b, c = np.concatenate([b, edges_b]), np.concatenate([c, edges_c])
    got = floats(mcnemar_exact_p(pa.array(b), pa.array(c)))
    want = np.minimum(1.0, 2.0 * binom.cdf(np.minimum(b, c), b + c, 0.5))
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    assert got[-7:-4].tolist() == [1.0, 1.0 / 256, 1.0 / 64]  # no pairs; 2 P(X <= 0) = 2^(1-n)
    assert got[-4] == got[-2] == 1.0  # b = c: the tail holds over half of the mass
    assert 0.0 < got[-3] < 1e-100  # far out in the tail, still above underflow
    assert got[-1] == 0.0  # underflows, as scipy's does
    for table in ([[40, 21], [1_068, 300]], [[300, 40], [70, 90]], [[10, 0], [9, 1]]):
        p = floats(mcnemar_exact_p(pa.array([table[0][1]]), pa.array([table[1][0]])))[0]
        assert p == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-12)
    with_null = floats(mcnemar_exact_p(pa.array([3, None]), pa.array([4, 4])))
    assert with_null[0] == 1.0
    assert np.isnan(with_null[1])


def test_floats_reads_chunks_slices_and_nulls() -> None:
    """The UDFs' Arrow-buffer reader: several chunks, a slice's offset, null as NaN, and no rows."""
    chunked = pa.chunked_array([[1, 2, None], [4, 5]])
    np.testing.assert_array_equal(floats(chunked), [1.0, 2.0, np.nan, 4.0, 5.0])
    np.testing.assert_array_equal(floats(chunked.slice(1, 3)), [2.0, np.nan, 4.0])
    assert floats(pa.array([1.5, 2.5, 3.5]).slice(1)).tolist() == [2.5, 3.5]  # an offset into the buffer
    assert floats(pa.chunked_array([], pa.int64())).size == 0
    assert float_array(np.array([0.25, 1.0])).to_pylist() == [0.25, 1.0]
    assert date32(dt.date(2026, 11, 23)) == pa.scalar(dt.date(2026, 11, 23), pa.date32())
