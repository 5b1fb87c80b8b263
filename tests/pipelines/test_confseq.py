"""The anytime-valid bounds against an independent computation, and their time-uniform coverage."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq
from scipy.stats import beta

from pipelines.confseq import labels_needed, log_mixture, lower_bound, upper_bound

ALPHA = 0.025
SEQUENCES = [  # cumulative (successes, trials) after each weekly look
    [(7, 10), (19, 25), (48, 60)],
    [(940, 1000), (1905, 2000), (2868, 3000), (3830, 4000)],
    [(96, 100), (480, 500), (4760, 5000), (9560, 10000)],
    [(1, 1), (3, 4), (30, 31)],
]


def mixture_by_quadrature(successes: int, trials: int, p0: float) -> float:
    """Log M(p0) by numerically integrating the likelihood ratio against the uniform prior on [p0, 1]."""
    failures = trials - successes

    def log_likelihood(p: float) -> float:
        return successes * math.log(p) + failures * math.log1p(-p)

    mode = min(max(successes / trials, p0), 1 - 1e-12)
    peak = log_likelihood(mode)
    inner, _ = quad(lambda p: math.exp(log_likelihood(p) - peak), p0, 1.0, points=[mode], limit=400,
                    epsabs=0.0, epsrel=1e-11)
    return math.log(inner / (1 - p0)) + peak - log_likelihood(p0)


def reference_lower(successes: int, trials: int, alpha: float) -> float:
    """The smallest p0 where the quadrature's log M(p0) drops to log(1/alpha), found by Brent's method."""
    if successes == 0:
        return 0.0
    gap = lambda p0: mixture_by_quadrature(successes, trials, p0) - math.log(1 / alpha)  # noqa: E731
    return float(brentq(gap, 1e-9, successes / trials - 1e-12, xtol=1e-13))


@pytest.mark.parametrize("sequence", SEQUENCES)
def test_bounds_equal_the_quadrature_reference_on_fixed_sequences(sequence: list[tuple[int, int]]) -> None:
    """Lower bound (closed form + bisection) equals quadrature + Brent to 1e-7 at every look of each sequence.

    The upper bound is the lower bound of the failures, so it is checked the same way on the complement.
    """
    for successes, trials in sequence:
        assert float(lower_bound(successes, trials, ALPHA)) == pytest.approx(
            reference_lower(successes, trials, ALPHA), abs=1e-7)
        assert float(upper_bound(trials - successes, trials, ALPHA)) == pytest.approx(
            1 - reference_lower(successes, trials, ALPHA), abs=1e-7)


def test_the_closed_form_equals_the_integral_away_from_the_bound() -> None:
    """Log M(p0) itself matches the quadrature at null values well below and near the estimate."""
    for successes, trials in [(48, 60), (2868, 3000)]:
        for p0 in (0.5, 0.8, 0.9, successes / trials - 0.01):
            assert float(log_mixture(successes, trials, p0)) == pytest.approx(
                mixture_by_quadrature(successes, trials, p0), rel=1e-8, abs=1e-8)


def test_the_bound_is_wider_than_clopper_pearson_and_tightens_with_labels() -> None:
    """The price of looking any number of times: below the fixed-sample bound, but converging on the mean."""
    bounds = [float(lower_bound(0.96 * n, n, ALPHA)) for n in (1_000, 10_000, 100_000)]
    assert bounds[0] < float(beta.ppf(ALPHA, 960, 41))
    assert bounds[0] < bounds[1] < bounds[2] < 0.96
    assert 0.96 - bounds[2] < 0.003


def test_no_true_mean_is_excluded_at_any_look_more_than_alpha_of_the_time() -> None:
    """2,000 paths of 5,000 draws at p = 0.95, checked at 20 looks: the bound ever above 0.95 in <= alpha.

    (A 3-sigma allowance for the simulation's own error.)
    """
    rng = np.random.default_rng(11)
    steps = rng.random((2000, 5000)) < 0.95
    looks = np.arange(250, 5001, 250)
    successes = np.cumsum(steps, axis=1)[:, looks - 1]
    crossed = (lower_bound(successes, np.broadcast_to(looks, successes.shape), ALPHA) > 0.95).any(axis=1)
    assert crossed.mean() <= ALPHA + 3 * math.sqrt(ALPHA * (1 - ALPHA) / 2000)


def test_labels_needed_gives_the_bound_at_80_percent_power() -> None:
    """At an estimate of 0.97, the total the ETA names clears 0.95 in about 80% of simulated samples."""
    more = labels_needed(0.97, 1000, 0.95, ALPHA)
    assert more > 0
    total = 1000 + more
    rng = np.random.default_rng(5)
    share = float((lower_bound(rng.binomial(total, 0.97, 4000), total, ALPHA) >= 0.95).mean())
    assert 0.8 - 3 * math.sqrt(0.16 / 4000) <= share <= 0.86
    assert labels_needed(0.95, 1000, 0.95, ALPHA) == -1
    assert labels_needed(0.999, 100_000, 0.95, ALPHA) == 0
