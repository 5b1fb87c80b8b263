"""The review's shared interval arithmetic: the 95% normal quantile and the Wilson score interval.

It sits below the verdict, the first screen and the charts, so each reads one definition.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile (``scipy.stats.norm.ppf(0.975)``)."""


def wilson(p: ArrayLike, n: ArrayLike, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of each share ``p`` on ``n`` trials (Wilson 1927), unclipped."""
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z * z / (4 * n * n))
    return center - half, center + half


def wilson_cc(p: ArrayLike, n: ArrayLike, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval with continuity correction (Newcombe 1998, method 4), clipped to [0, 1].

    It keeps its coverage at a handful of trials, where the plain Wilson interval does not (one of two
    audits wrong: plain Wilson's upper limit 0.906, this one's 0.973). The same formula as the audit
    marts' SQL (``pipelines/models/intermediate/int_audit_estimates.sql``).
    """
    p, n = np.asarray(p, dtype=float), np.asarray(n, dtype=float)
    zz, denominator = z * z, 2 * (n + z * z)
    low = (2 * n * p + zz - 1 - z * np.sqrt(np.maximum(zz - 2 - 1 / n + 4 * p * (n * (1 - p) + 1), 0.0)))
    high = (2 * n * p + zz + 1 + z * np.sqrt(np.maximum(zz + 2 - 1 / n + 4 * p * (n * (1 - p) - 1), 0.0)))
    low = np.where(p <= 0, 0.0, np.maximum(low / denominator, 0.0))
    high = np.where(p >= 1, 1.0, np.minimum(high / denominator, 1.0))
    return low, high


def proportion_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """``wilson`` of one proportion, clipped to [0, 1] (``(0, 1)`` with no trials)."""
    if n <= 0:
        return 0.0, 1.0
    low, high = wilson(successes / n, n, z)
    return max(0.0, float(low)), min(1.0, float(high))
