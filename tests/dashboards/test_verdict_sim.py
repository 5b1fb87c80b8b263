"""bench/verdict_sim.py at 300 trials: the new rule's guarantees hold; the old rule's repeated looks don't."""

from __future__ import annotations

import math

from bench.verdict_sim import Setup, simulate

TRIALS = 300


def widened(share: float) -> float:
    """Two of the simulation's own standard errors at ``share`` over ``TRIALS`` trials."""
    return 2 * math.sqrt(share * (1 - share) / TRIALS)


def test_new_rule_keeps_false_go_under_alpha_over_26_weekly_looks_and_reruns() -> None:
    """At precision exactly at the target: P(any false go) <= 2.5% (+ 2 SE) for the new rule.

    The old rule's per-look 2.5% compounds over the looks (several times alpha).
    """
    outcome = simulate(Setup(trials=TRIALS))
    assert outcome.false_go_new <= 0.025 + widened(0.025)
    assert outcome.false_go_old_mature >= 4 * 0.025
    assert outcome.false_go_old > outcome.false_go_old_mature


def test_new_rule_reaches_go_within_six_weeks_at_target_plus_two_points() -> None:
    """Precision target + 0.02, 1,000 labelled accepted a week: >= 80% (- 2 SE) of trials go by week 6."""
    outcome = simulate(Setup(trials=TRIALS, weeks=6))
    assert outcome.go_within_new >= 0.8 - widened(0.8)
