"""Simulated weeks with known truth: do the correctness intervals cover it, and how wrong is agreement?

Each week: ``POPULATION`` labelled decisions with 4 options; production wrong on a share ``e_p`` (another
option, uniformly); the candidate scores 97% of decisions and is wrong on a share ``e_c``, half the time
making production's own mistake when both are wrong. The week's audit sample is drawn as
``semif-shadow audit sample`` draws it (strata: the candidate disagrees with production / agrees; 60% of
the audits on disagreements, capped by their number, the rest on agreements), a perfect auditor answers,
and the ``correctness`` mart's estimator (stratified ratio, linearization variance with the fpc, one right
and one wrong pseudo-decision per stratum for the interval) is applied to production and the candidate.

Agreement with production differs from the candidate's correctness by
P(candidate = production != truth) - P(candidate = truth != production) = e_p (e_c q - (1 - e_c)), with
q = 1/2 + 1/2 x 1/3 the chance that two wrong answers are the same: that is the "predicted" column.

    .venv/bin/python -m bench.correctness_sim              # coverage and agreement's bias, 400 weeks
    .venv/bin/python -m bench.correctness_sim --widths     # interval width by audits per week
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

POPULATION = 10_000
OPTIONS = 4
SCORED = 0.97
SAME_MISTAKE = 0.5
Z = 1.959963984540054
SAME_WRONG = SAME_MISTAKE + (1 - SAME_MISTAKE) / (OPTIONS - 1)
"""The chance that the candidate's wrong answer is production's when both are wrong."""


@dataclass(frozen=True)
class Week:
    """One simulated week: its settings, the truths, the estimates with their intervals, agreement."""

    audits: int
    production_error: float
    candidate_error: float
    truth: dict[str, float]
    estimate: dict[str, float]
    low: dict[str, float]
    high: dict[str, float]
    agreement: float


def ratio(y: np.ndarray, x: np.ndarray, strata: np.ndarray, sizes: np.ndarray) -> tuple[float, float]:
    """The stratified ratio estimate and the interval's standard error (strata numbered 0..len(sizes)-1)."""
    m = np.bincount(strata, minlength=sizes.size).astype(float)
    sx = np.bincount(strata, x, minlength=sizes.size)
    sy = np.bincount(strata, y, minlength=sizes.size)
    syy = np.bincount(strata, y * y, minlength=sizes.size)
    w = np.divide(sizes, m, out=np.zeros(sizes.size), where=m > 0)
    x_hat = float((w * sx).sum())
    r = float((w * sy).sum()) / x_hat
    se1 = sy - r * sx + 1 - 2 * r  # with the two pseudo-decisions (y=1 and y=0, both x=1)
    se2 = syy - 2 * r * sy + r * r * sx + (1 - r) ** 2 + r * r
    s2 = (se2 - se1 * se1 / (m + 2)) / (m + 1)
    fpc = 1 - np.divide(m, sizes, out=np.ones(sizes.size), where=sizes > 0)
    terms = np.where(m > 0, sizes * sizes * fpc / np.maximum(m, 1) * s2, 0.0)
    return r, float(np.sqrt(terms.sum())) / x_hat


def simulate_week(rng: np.random.Generator, audits: int, production_error: float,
                  candidate_error: float) -> Week:
    """Draw one week's population, its stratified sample and the estimates (see the module docstring)."""
    n, k = POPULATION, OPTIONS
    truth = rng.integers(0, k, n)
    production = np.where(rng.random(n) < production_error, (truth + rng.integers(1, k, n)) % k, truth)
    wrong = rng.random(n) < candidate_error
    mistake = np.where((production != truth) & (rng.random(n) < SAME_MISTAKE), production,
                       (truth + rng.integers(1, k, n)) % k)
    candidate = np.where(wrong, mistake, truth)
    scored = rng.random(n) < SCORED
    strata = (scored & (candidate != production)).astype(np.int64) ^ 1  # 0: disagree, 1: agree
    sizes = np.bincount(strata, minlength=2).astype(float)
    wanted = np.minimum([round(0.6 * audits), 0], sizes)
    wanted[1] = min(audits - wanted[0], sizes[1])
    chosen = np.concatenate([rng.choice(np.flatnonzero(strata == h), int(wanted[h]), replace=False)
                             for h in (0, 1)])
    x = scored[chosen].astype(float)
    units = {"candidate": ((candidate[chosen] == truth[chosen]) * x, x),
             "production": ((production[chosen] == truth[chosen]).astype(float), np.ones(chosen.size))}
    estimate, low, high = {}, {}, {}
    for name, (y, xs) in units.items():
        r, se = ratio(y, xs, strata[chosen], sizes)
        estimate[name], low[name], high[name] = r, max(r - Z * se, 0.0), min(r + Z * se, 1.0)
    truths = {"candidate": float((candidate == truth)[scored].mean()),
              "production": float((production == truth).mean())}
    agreement = float((candidate == production)[scored].mean())
    return Week(int(chosen.size), production_error, candidate_error, truths, estimate, low, high, agreement)


def simulate(weeks: int, seed: int = 0) -> list[Week]:
    """``weeks`` weeks with audits from 100 to 1,000 and production error rates from 2% to 20%."""
    rng = np.random.default_rng(seed)
    return [simulate_week(rng, int(rng.integers(100, 1001)), float(rng.uniform(0.02, 0.20)),
                          float(rng.uniform(0.05, 0.25))) for _ in range(weeks)]


def predicted_bias(production_error: float, candidate_error: float) -> float:
    """Agreement minus the candidate's correctness expected from the two error rates."""
    return production_error * (candidate_error * SAME_WRONG - (1 - candidate_error))


def coverage_table(weeks: list[Week]) -> str:
    """Coverage by audits and production error rate, and agreement's bias beside the predicted one."""
    lines = [("| audits | production error | weeks | candidate covered | production covered "
              "| agreement - correctness | predicted |"), "|---|---|---|---|---|---|---|"]
    for lo, hi in ((100, 400), (400, 700), (700, 1001)):
        for elo, ehi in ((0.02, 0.08), (0.08, 0.14), (0.14, 0.201)):
            some = [w for w in weeks if lo <= w.audits < hi and elo <= w.production_error < ehi]
            if not some:
                continue
            covered = {name: np.mean([w.low[name] <= w.truth[name] <= w.high[name] for w in some])
                       for name in ("candidate", "production")}
            bias = np.mean([w.agreement - w.truth["candidate"] for w in some])
            predicted = np.mean([predicted_bias(w.production_error, w.candidate_error) for w in some])
            lines.append(f"| {lo}-{min(hi, 1000)} | {elo:.0%}-{min(ehi, 0.2):.0%} | {len(some)} "
                         f"| {covered['candidate']:.1%} | {covered['production']:.1%} | {bias:+.3f} "
                         f"| {predicted:+.3f} |")
    return "\n".join(lines)


def width_table(seed: int = 0, reps: int = 50) -> str:
    """The median 95% interval width of production's and the candidate's correctness by audits a week.

    Production 10% wrong, the candidate 12%; 60% of the audits on disagreements.
    """
    rng = np.random.default_rng(seed)
    lines = ["| audits a week | candidate: median width | production: median width |", "|---|---|---|"]
    for audits in (100, 200, 400, 700, 1000):
        found = [simulate_week(rng, audits, 0.10, 0.12) for _ in range(reps)]
        widths = {name: float(np.median([w.high[name] - w.low[name] for w in found]))
                  for name in ("candidate", "production")}
        lines.append(f"| {audits} | ±{widths['candidate'] / 2:.3f} | ±{widths['production'] / 2:.3f} |")
    return "\n".join(lines)


def main() -> None:
    """Print the coverage table (or the width table with ``--widths``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--weeks", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--widths", action="store_true", help="interval width by audits a week")
    args = parser.parse_args()
    print(width_table(args.seed) if args.widths else coverage_table(simulate(args.weeks, args.seed)))


if __name__ == "__main__":
    main()
