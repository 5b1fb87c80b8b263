"""The whole verdict on the shipped path (``bench/verdict_sim.py``) against an independent reference.

Each decision type is one replicate: a policy chosen on week 0 with ``pipelines.policy.choose``, then every
week the records written, ``semif-shadow pipelines run --policy ...``, the policies replayed and ``judge()``
applied, as ``semif-shadow review`` does. The reference recomputes, from the simulation's own draws and the
policy files' thresholds, the ledger's counts (every mature labelled accepted decision since the week after
the policy's week) and the precision rule written from its paper (Robbins' beta-binomial mixture, here with
``scipy.stats.beta``) at the documented level, 2.5% one-sided. Every look of every type must agree: a bound
twice too loose (5%) flips looks near the target, which the power run has by design.

Whether the rule holds its error rate over 26 looks at scale (1,000 types) is the bench's table in
docs/review.md; here the null run checks that no look goes where the reference says it may not, over 26
looks, and that the ledger keeps counting past the reference window.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import betaln
from scipy.stats import beta

from bench.verdict_sim import Result, Setup, draw, simulate
from dashboards.verdict.rules import PRECISION, PRECISION_REACHABLE

ALPHA = 0.025
TARGET = 0.95
GRID = 100
POWER = Setup(types=40, weeks=6, shift=0.02)
NULL = Setup(types=6, weeks=26, shift=0.0, seed=9)


def clears(correct: int, labelled: int, target: float = TARGET, alpha: float = ALPHA) -> bool:
    """The mixture martingale at ``target`` reaches 1/alpha: the anytime-valid lower bound clears it.

    M(p0) = int_p0^1 (p/p0)^s ((1-p)/(1-p0))^f dp / (1 - p0) (a uniform prior truncated to [p0, 1]).
    """
    s, f = correct, labelled - correct
    if labelled == 0 or s / labelled <= target:
        return False
    integral = betaln(s + 1, f + 1) + beta.logsf(target, s + 1, f + 1)
    log_m = integral - math.log1p(-target) - s * math.log(target) - f * math.log1p(-target)
    return bool(log_m >= math.log(1 / alpha))


def reference_counts(setup: Setup, result: Result) -> np.ndarray:
    """(types, weeks, 2): labelled accepted correct and labelled accepted at each type's policy, cumulated."""
    counts = np.zeros((setup.types, setup.weeks, 2), np.int64)
    for t in range(setup.types):
        grid_index = result.thresholds[t]
        for week in range(1, setup.weeks + 1):
            tw, _ = draw(setup, week, t)
            proposal, confidence = tw.p.argmax(axis=1), tw.p.max(axis=1)
            needed = np.array([np.inf if grid_index[o] is None else grid_index[o] for o in "abcde"])
            accepted = np.floor(confidence * GRID) >= needed[proposal]
            counts[t, week - 1] = ((proposal == tw.production) & accepted).sum(), accepted.sum()
    return counts.cumsum(axis=1)


@pytest.fixture(scope="module")
def power(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """Precision at the target + 0.02, six weekly looks, 40 types."""
    return simulate(POWER, tmp_path_factory.mktemp("verdict_power"))


@pytest.fixture(scope="module")
def null(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """Precision exactly at the target, 26 weekly looks, 6 types."""
    return simulate(NULL, tmp_path_factory.mktemp("verdict_null"))


def agrees_with_reference(setup: Setup, result: Result) -> None:
    """Every look: the ledger's counts, the precision rule, and go exactly where only precision could fail."""
    counts = reference_counts(setup, result)
    assert np.array_equal(result.ledger, counts)
    expected = np.vectorize(clears)(counts[..., 0], counts[..., 1])
    assert np.array_equal(result.precision_passed, expected), np.argwhere(result.precision_passed != expected)
    assert np.array_equal(result.went_go(), expected)
    assert set(result.held_back) <= {PRECISION, PRECISION_REACHABLE}


@pytest.mark.slow
def test_power_run_agrees_with_the_reference_on_every_look(power: Result) -> None:
    """240 looks: counts, the precision rule at 2.5% and the verdict equal the reference's."""
    agrees_with_reference(POWER, power)
    assert 0 < power.went_go()[:, 0].sum() < POWER.types  # looks on both sides: a looser bound shows


@pytest.mark.slow
def test_the_verdict_goes_within_six_weeks_at_the_target_plus_two_points(power: Result) -> None:
    """1,000 labelled decisions a week, precision 0.97: >= 80% (- 2 SE) of the types go by look 6."""
    share = float(power.went_go()[:, :6].any(axis=1).mean())
    assert share >= 0.8 - 2 * math.sqrt(0.8 * 0.2 / POWER.types), share


@pytest.mark.slow
def test_null_run_over_26_looks_agrees_with_the_reference(null: Result) -> None:
    """Precision at the target: 156 looks; the ledger counts all 26 weeks (past the 4-week read window)."""
    agrees_with_reference(NULL, null)
    assert null.ledger[0, -1, 1] == 26 * NULL.labelled
