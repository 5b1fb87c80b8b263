"""The precision rule of the verdict over synthetic weekly evidence: the old rule beside the new one.

    python -P bench/verdict_sim.py                 # 2,000 trials, 26 weeks: about 10 s
    python -P bench/verdict_sim.py --trials 300    # what tests/dashboards/test_verdict_sim.py runs

Each trial is one candidate reviewed every week for ``--weeks`` weeks, ``--labelled`` labelled accepted
decisions a week. Each week is looked at twice: once before it matures (only the early labels are in:
``--early`` of them, and the late ones are the hard cases, ``--late-gap`` less precise, so the early labels
look better than the week) and once mature (all its labels).

- **old rule**: each look tests that week's labels alone with the one-sided Clopper-Pearson lower bound
  at ``alpha`` (the two-sided 95% interval's lower end), ``min_labelled`` labels, mature or not.
- **new rule** (``dashboards.verdict``): a week that is not mature never says go; a mature look tests the
  ledger's cumulative mature counts with the anytime-valid lower bound (``pipelines.confseq``) at the
  same ``alpha``.

Scenario *null*: true precision exactly at the target; a go is false. Scenario *power*: true precision at
the target + ``--margin``; the share of trials that reach go within ``--within`` weeks (a week's go counts
once it is mature, since the new rule cannot say it earlier). Every count is drawn with numpy; the bounds
are the verdict's own functions, applied to every trial and look at once.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

import numpy as np
from scipy.special import betaincinv

from pipelines.confseq import lower_bound


@dataclass(frozen=True)
class Setup:
    """One simulation's parameters (the command's options)."""

    trials: int = 2000
    weeks: int = 26
    labelled: int = 1000
    early: float = 0.7
    late_gap: float = 0.02
    target: float = 0.95
    margin: float = 0.02
    within: int = 6
    alpha: float = 0.025
    min_labelled: int = 500
    seed: int = 7


@dataclass(frozen=True)
class Outcome:
    """Per rule: the share of trials that said go, in the null scenario (any look) and the power one."""

    false_go_old: float
    false_go_old_mature: float
    false_go_new: float
    go_within_old: float
    go_within_new: float
    trials: int

    def standard_error(self, share: float) -> float:
        """The binomial standard error of a share estimated from ``trials`` trials."""
        return math.sqrt(share * (1 - share) / self.trials)


def cp_lower(successes: np.ndarray, trials: np.ndarray, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound (the two-sided interval's lower end)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        bound = betaincinv(np.maximum(successes, 1.0), trials - successes + 1.0, alpha)
    return np.where(successes > 0, bound, 0.0)


def draw(setup: Setup, precision: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Correct labels per trial and week: ``(early, late)``, the late ones ``late_gap`` less precise."""
    early_n = round(setup.labelled * setup.early)
    late_n = setup.labelled - early_n
    late_p = precision - setup.late_gap * setup.early
    early_p = (precision * setup.labelled - late_p * late_n) / early_n
    shape = (setup.trials, setup.weeks)
    early = rng.binomial(early_n, early_p, shape).astype(float)
    return early, rng.binomial(late_n, late_p, shape).astype(float)


def old_rule(setup: Setup, early: np.ndarray, late: np.ndarray) -> np.ndarray:
    """Go per trial and look (immature, mature alternating): one week's labels, fixed-horizon bound."""
    early_n = round(setup.labelled * setup.early)
    immature = cp_lower(early, np.full_like(early, early_n), setup.alpha) >= setup.target
    immature &= early_n >= setup.min_labelled
    mature = cp_lower(early + late, np.full_like(early, setup.labelled), setup.alpha) >= setup.target
    mature &= setup.labelled >= setup.min_labelled
    return np.stack([immature, mature], axis=2).reshape(setup.trials, -1)


def new_rule(setup: Setup, early: np.ndarray, late: np.ndarray) -> np.ndarray:
    """Go per trial and look: never on an immature look; the ledger's cumulative mature counts otherwise."""
    correct = np.cumsum(early + late, axis=1)
    labelled = setup.labelled * np.arange(1, setup.weeks + 1, dtype=float)
    mature = lower_bound(correct, np.broadcast_to(labelled, correct.shape), setup.alpha) >= setup.target
    mature &= labelled >= setup.min_labelled
    return np.stack([np.zeros_like(mature), mature], axis=2).reshape(setup.trials, -1)


def simulate(setup: Setup) -> Outcome:
    """Both scenarios under both rules."""
    rng = np.random.default_rng(setup.seed)
    null = draw(setup, setup.target, rng)
    power = draw(setup, setup.target + setup.margin, rng)
    looks = 2 * setup.within  # the immature and the mature look of each of the first `within` weeks
    return Outcome(
        false_go_old=float(old_rule(setup, *null).any(axis=1).mean()),
        false_go_old_mature=float(old_rule(setup, *null)[:, 1::2].any(axis=1).mean()),
        false_go_new=float(new_rule(setup, *null).any(axis=1).mean()),
        go_within_old=float(old_rule(setup, *power)[:, :looks].any(axis=1).mean()),
        go_within_new=float(new_rule(setup, *power)[:, :looks].any(axis=1).mean()),
        trials=setup.trials,
    )


def table(setup: Setup, outcome: Outcome) -> str:
    """The side-by-side table (Markdown)."""
    rows = [
        (f"P(any false go), precision = target {setup.target}, {setup.weeks} weeks x 2 looks",
         outcome.false_go_old, outcome.false_go_new),
        (f"the same, mature looks only ({setup.weeks})", outcome.false_go_old_mature, outcome.false_go_new),
        (f"P(go within {setup.within} weeks), precision = target + {setup.margin}",
         outcome.go_within_old, outcome.go_within_new),
    ]
    lines = ["| scenario | old rule | new rule |", "|---|---|---|"]
    se = outcome.standard_error
    for name, old, new in rows:
        lines.append(f"| {name} | {old:.1%} ± {se(old):.1%} | {new:.1%} ± {se(new):.1%} |")
    return "\n".join(lines)


def main() -> None:
    """Run the simulation with the command's options; print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    defaults = Setup()
    for name, value in vars(defaults).items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=type(value), default=value)
    setup = Setup(**vars(parser.parse_args()))
    print(f"{setup.trials} trials, {setup.labelled} labelled accepted a week, alpha {setup.alpha} one-sided, "
          f"{setup.early:.0%} of a week's labels in before it matures "
          f"(late ones {setup.late_gap} less precise)")
    print(table(setup, simulate(setup)))


if __name__ == "__main__":
    main()
