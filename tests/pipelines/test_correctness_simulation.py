"""The correctness estimator against known truth: 95% intervals cover it; agreement is biased as predicted.

The simulated weeks (``bench/correctness_sim.py``) span 100 to 1,000 audits and production error rates
from 2% to 20%; each week's population, sample and truth are drawn with numpy, and the estimator is the
``correctness`` mart's (checked here against the numpy reference that the mart is checked against).
"""

from __future__ import annotations

import numpy as np
import pytest

from bench.correctness_sim import Week, predicted_bias, ratio, simulate, simulate_week
from tests.pipelines.correctness_reference import stratified_ratio

WEEKS = 300


@pytest.fixture(scope="module")
def weeks() -> list[Week]:
    """300 simulated weeks (about a second)."""
    return simulate(WEEKS, seed=11)


def test_the_weeks_span_the_sizes_and_error_rates(weeks: list[Week]) -> None:
    """Audits from 100 to 1,000 and production error rates from 2% to 20%, spread over the range."""
    audits = np.array([w.audits for w in weeks])
    errors = np.array([w.production_error for w in weeks])
    assert audits.min() >= 100
    assert audits.max() <= 1000
    assert np.mean(audits < 300) > 0.1
    assert np.mean(audits > 800) > 0.1
    assert errors.min() >= 0.02
    assert errors.max() <= 0.20
    assert np.mean(errors < 0.05) > 0.1
    assert np.mean(errors > 0.17) > 0.1


@pytest.mark.parametrize("model", ["candidate", "production"])
def test_95_percent_intervals_cover_the_true_correctness_in_at_least_93_percent_of_weeks(
        weeks: list[Week], model: str) -> None:
    """Each week's interval holds the population's true correctness (the finite population's share)."""
    covered = np.mean([w.low[model] <= w.truth[model] <= w.high[model] for w in weeks])
    assert covered >= 0.93, covered
    assert covered < 0.995  # an interval that always covers would be too wide to be useful


def test_estimates_are_unbiased(weeks: list[Week]) -> None:
    """Over the weeks, the mean error of each estimate is within 0.003 of zero."""
    for model in ("candidate", "production"):
        errors = [w.estimate[model] - w.truth[model] for w in weeks]
        assert abs(np.mean(errors)) < 0.003, model


def test_agreement_is_biased_against_the_truth_by_what_the_production_error_rate_predicts(
        weeks: list[Week]) -> None:
    """Agreement minus the candidate's true correctness is e_p (e_c q - (1 - e_c)), week by week.

    The bias is negative (production's mistakes score a right candidate wrong) and grows with e_p.
    """
    bias = np.array([w.agreement - w.truth["candidate"] for w in weeks])
    predicted = np.array([predicted_bias(w.production_error, w.candidate_error) for w in weeks])
    assert np.all(bias < 0)
    assert abs(np.mean(bias - predicted)) < 0.002
    assert np.max(np.abs(bias - predicted)) < 0.02
    errors = np.array([w.production_error for w in weeks])
    assert np.corrcoef(errors, bias)[0, 1] < -0.9


def test_the_simulations_estimator_is_the_marts_reference() -> None:
    """The vectorised estimator of the simulation equals the numpy reference on one week's units."""
    rng = np.random.default_rng(5)
    strata = rng.integers(0, 2, 300)
    x = (rng.random(300) < 0.95).astype(float)
    y = (rng.random(300) < 0.8) * x
    sizes = np.array([700.0, 9000.0])
    r, se = ratio(y, x, strata, sizes)
    ref = stratified_ratio(y, x, strata.astype(str), {"0": 700, "1": 9000})
    assert r == pytest.approx(ref.value, rel=1e-12)
    assert se == pytest.approx(ref.se_adjusted, rel=1e-12)
    week = simulate_week(np.random.default_rng(1), 100, 0.2, 0.1)
    assert week.audits == 100
