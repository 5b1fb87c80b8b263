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


def proportion_interval(successes: float, n: float, z: float = Z95) -> tuple[float, float]:
    """``wilson`` of one proportion, clipped to [0, 1] (``(0, 1)`` with no trials)."""
    if n <= 0:
        return 0.0, 1.0
    low, high = wilson(successes / n, n, z)
    return max(0.0, float(low)), min(1.0, float(high))
