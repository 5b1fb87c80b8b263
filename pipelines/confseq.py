"""Anytime-valid bounds on a Bernoulli mean from cumulative counts: the one-sided beta-binomial mixture.

A weekly review looks at the same growing evidence again and again; a fixed-sample bound (Clopper-Pearson)
at level alpha is wrong about alpha of the time *per look*, so over many looks a true precision at the target
passes far more often. A confidence sequence holds at every look at once.

The bound here is Robbins' conjugate mixture martingale (Robbins 1970, "Statistical methods related to the
law of the iterated logarithm"; the one-sided beta-binomial boundary of Howard, Ramdas, McAuliffe and Sekhon
2021, "Time-uniform, nonparametric, nonasymptotic confidence sequences", Ann. Statist. 49(2), section 3):
after ``n`` Bernoulli observations with ``s`` successes, for a null value ``p0``

    M(p0) = integral over p in [p0, 1] of  p^s (1-p)^(n-s) / (p0^s (1-p0)^(n-s))  dBeta(p; a, b)
            / Beta([p0, 1]; a, b)

is a nonnegative supermartingale under every true mean ``p <= p0`` (each likelihood ratio with ``p > p0``
is one), so by Ville's inequality ``P(M(p0) >= 1/alpha at any n) <= alpha``. Its closed form needs only
the counts (``betaln``: log Beta function, ``betaincc``: regularized upper incomplete Beta):

    log M(p0) = betaln(a+s, b+f) + log betaincc(a+s, b+f, p0) - betaln(a, b) - log betaincc(a, b, p0)
                - s log p0 - f log(1-p0)

The lower bound is the smallest ``p0`` at which ``log M(p0)`` falls below ``log(1/alpha)`` (found by
bisection on ``[0, s/n]``, where ``M`` decreases from infinity to at most 1). The upper bound is the lower
bound of the complementary proportion. A ledger therefore stores only ``(successes, n)``; the bound is
valid however often, and whenever, it is recomputed.

``MIXTURE`` is the prior: uniform (``a = b = 1``), fixed before any data.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
from scipy.special import betaincc, betaln

MIXTURE: Final = (1.0, 1.0)
"""``(a, b)`` of the Beta mixing distribution (truncated to ``[p0, 1]``)."""
BISECTION_STEPS: Final = 60
"""Halvings of ``[0, s/n]``: 2^-60 is below double precision."""

Counts = npt.ArrayLike
FloatArray = npt.NDArray[np.float64]


def log_mixture(successes: Counts, trials: Counts, p0: Counts) -> FloatArray:
    """``log M(p0)`` of the one-sided mixture (``+inf`` at ``p0 = 0`` with a success)."""
    s = np.asarray(successes, dtype=np.float64)
    f = np.asarray(trials, dtype=np.float64) - s
    p = np.asarray(p0, dtype=np.float64)
    a, b = MIXTURE
    with np.errstate(divide="ignore", invalid="ignore"):
        posterior = betaln(a + s, b + f) + np.log(betaincc(a + s, b + f, p))
        prior = betaln(a, b) + np.log(betaincc(a, b, p))
        likelihood = np.where(s > 0, s * np.log(p), 0.0) + np.where(f > 0, f * np.log1p(-p), 0.0)
        return np.asarray(posterior - prior - likelihood, dtype=np.float64)


def lower_bound(successes: Counts, trials: Counts, alpha: float) -> FloatArray:
    """The anytime-valid one-sided lower bound on the mean at level ``alpha`` (0 with no success)."""
    s = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    threshold = np.log(1.0 / alpha)
    low = np.zeros(np.broadcast(s, n).shape)
    high = np.where(n > 0, s / np.maximum(n, 1.0), 0.0)
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2
        above = log_mixture(s, n, middle) >= threshold
        low = np.where(above, middle, low)
        high = np.where(above, high, middle)
    return np.where(s > 0, low, 0.0)


def upper_bound(successes: Counts, trials: Counts, alpha: float) -> FloatArray:
    """The anytime-valid one-sided upper bound on the mean at level ``alpha`` (1 with no failure)."""
    n = np.asarray(trials, dtype=np.float64)
    return 1.0 - lower_bound(n - np.asarray(successes, dtype=np.float64), n, alpha)


def clears(successes: Counts, trials: Counts, target: float, alpha: float) -> npt.NDArray[np.bool_]:
    """Whether the lower bound reaches ``target``: the sequential test of ``mean <= target`` rejects."""
    return np.asarray(lower_bound(successes, trials, alpha) >= target)


def labels_needed(estimate: float, have: int, target: float, alpha: float, power: float = 0.8) -> int:
    """More trials after ``have`` for the lower bound to clear ``target`` with probability ``power``.

    Assumes the true mean is ``estimate``: the smallest total ``n`` whose ``1 - power`` quantile of successes
    (binomial) gives a lower bound at or above ``target``. -1 when ``estimate <= target`` (more trials alone
    will not do) or when no total up to ten million does.
    """
    from scipy.stats import binom  # noqa: PLC0415  (scipy.stats is slow to import; only the ETA needs it)

    if estimate <= target:
        return -1

    def enough(n: FloatArray) -> npt.NDArray[np.bool_]:
        return clears(binom.ppf(1 - power, n, estimate), n, target, alpha)

    high = max(have, 16)
    while not enough(np.array([float(high)]))[0]:
        high *= 2
        if high > 10_000_000:
            return -1
    low = max(have, 1)
    if enough(np.array([float(low)]))[0]:
        return 0
    while high - low > 1:  # smallest n that is enough (the quantile makes it nearly monotone)
        middle = (low + high) // 2
        low, high = (low, middle) if enough(np.array([float(middle)]))[0] else (middle, high)
    return high - have
