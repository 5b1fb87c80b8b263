"""The scorecard's estimators: differences of two candidates' rates with their 95% intervals, and Holm.

- **Paired** (both candidates on the same decisions, from the ``paired`` mart's McNemar table): the
  difference of agreement B - A = (only_b - only_a) / n with the paired Wald interval, se = sqrt(only_a +
  only_b - (only_b - only_a)^2 / n) / n, and McNemar's exact two-sided p-value (a binomial test on the
  discordant pairs).
- **Independent** (each candidate's own decisions: precision and coverage at its policy, severe errors):
  Newcombe's hybrid score interval of p1 - p2 from the two Wilson intervals (Newcombe 1998, method 10),
  and the pooled two-proportion z-test.
- **Ratios** (cost per accepted decision = cost per scored / coverage): the delta method, var(c / p) =
  c^2 var(p) / p^4 with var(p) = p (1 - p) / n.
- **Estimates with a standard error** (audited correctness, from the ``correctness`` mart's
  ``correctness_se``): the difference's se as if independent (conservative: the candidates are audited
  on the same decisions, which correlates them positively), and its Wald interval.
- **Holm's step-down** adjustment of every p-value of a review (all candidates and decision types).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scipy.stats import binomtest, norm

from dashboards.intervals import Z95, proportion_interval

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass(frozen=True)
class Difference:
    """An estimate of B - A with its 95% interval and a two-sided p-value (None where none applies)."""

    value: float
    low: float
    high: float
    p: float | None


def paired_difference(only_a: int, only_b: int, n: int) -> Difference:
    """Agreement B - A on ``n`` paired decisions from the discordant counts; McNemar's exact p."""
    if n == 0:
        return Difference(math.nan, math.nan, math.nan, None)
    value = (only_b - only_a) / n
    se = math.sqrt(max(only_a + only_b - (only_b - only_a) ** 2 / n, 0.0)) / n
    discordant = only_a + only_b
    p = 1.0 if discordant == 0 else float(binomtest(only_b, discordant, 0.5).pvalue)
    return Difference(value, value - Z95 * se, value + Z95 * se, p)


def independent_difference(x_b: int, n_b: int, x_a: int, n_a: int) -> Difference:
    """Rate B - A of two independent binomial samples: Newcombe's interval, the pooled z-test's p."""
    if n_a == 0 or n_b == 0:
        return Difference(math.nan, math.nan, math.nan, None)
    p_b, p_a = x_b / n_b, x_a / n_a
    (l_b, u_b), (l_a, u_a) = proportion_interval(x_b, n_b), proportion_interval(x_a, n_a)
    value = p_b - p_a
    low = value - math.sqrt((p_b - l_b) ** 2 + (u_a - p_a) ** 2)
    high = value + math.sqrt((u_b - p_b) ** 2 + (p_a - l_a) ** 2)
    pooled = (x_a + x_b) / (n_a + n_b)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n_a + 1 / n_b))
    p = 1.0 if se == 0 else float(2 * norm.sf(abs(value) / se))
    return Difference(value, low, high, p)


def per_accepted(cost_per_scored: float, coverage: float, scored: int) -> tuple[float, float]:
    """Cost per accepted decision and its delta-method variance (coverage binomial on ``scored``)."""
    if coverage <= 0 or scored <= 0 or math.isnan(cost_per_scored):
        return math.nan, math.nan
    value = cost_per_scored / coverage
    var_coverage = coverage * (1 - coverage) / scored
    return value, cost_per_scored**2 * var_coverage / coverage**4


def ratio_difference(b: tuple[float, float], a: tuple[float, float]) -> Difference:
    """B - A of two independent delta-method estimates ``(value, variance)``; Wald interval and p."""
    value, var = b[0] - a[0], b[1] + a[1]
    if math.isnan(value) or math.isnan(var):
        return Difference(math.nan, math.nan, math.nan, None)
    se = math.sqrt(var)
    p = None if se == 0 else float(2 * norm.sf(abs(value) / se))
    return Difference(value, value - Z95 * se, value + Z95 * se, p)


def se_difference(b: tuple[float, float], a: tuple[float, float]) -> Difference:
    """B - A of two estimates given as ``(value, standard error)``, as if independent."""
    value, se = b[0] - a[0], math.hypot(b[1], a[1])
    p = None if se == 0 else float(2 * norm.sf(abs(value) / se))
    return Difference(value, value - Z95 * se, value + Z95 * se, p)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input's order."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [0.0] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted
