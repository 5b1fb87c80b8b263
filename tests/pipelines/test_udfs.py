"""The `cp_lower` UDF (one-sided Clopper-Pearson lower bound) against statsmodels and scipy."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from scipy.stats import binom
from statsmodels.stats.proportion import proportion_confint

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
