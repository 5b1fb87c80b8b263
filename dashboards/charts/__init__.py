"""The report's charts: Vega-Lite specs built with Altair, rendered offline to SVG by vl-convert.

Each builder takes the marts (report vocabulary) and a decision type and returns a ``Chart``: its SVG,
the sample size it shows, and the numbers behind it as a small table. No chart holds row data.
Candidates are named as the catalog names them (``dashboards.names``, column ``NAME``), never by their
hash alone; each candidate keeps one colour across the charts of a section.

One module per part of a section, in the order ``BUILDERS`` draws them:

- ``outcomes``: the funnel, agreement with production over weeks, the confusion grid;
- ``confidence``: reliability, ECE and PSI over weeks;
- ``selective``: risk-coverage with each candidate's policy point;
- ``dashboards.charts.comparison``: the paired comparison of two candidates;
- ``operations``: scorer latency per fleet, cost per decision;

and ``encoding`` for what they share (rows named per candidate, the palette and the alert colours).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dashboards.charts.comparison import paired
from dashboards.charts.confidence import ece, psi, reliability
from dashboards.charts.encoding import ALERT, MODERATE, NAME, PALETTE
from dashboards.charts.operations import cost, latency
from dashboards.charts.outcomes import (
    CONFUSION_SPACING,
    CONFUSION_WIDTH,
    STAGES,
    agreement,
    confusion,
    funnel,
)
from dashboards.charts.selective import policy_points, risk_coverage

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from dashboards.charts.rendering import Chart
    from dashboards.marts import Marts
    from dashboards.policies import Replayed

__all__ = [
    "ALERT",
    "BUILDERS",
    "CONFUSION_SPACING",
    "CONFUSION_WIDTH",
    "MODERATE",
    "NAME",
    "PALETTE",
    "STAGES",
    "agreement",
    "build_all",
    "confusion",
    "cost",
    "ece",
    "funnel",
    "latency",
    "paired",
    "policy_points",
    "psi",
    "reliability",
    "risk_coverage",
]

BUILDERS: tuple[Callable[[Marts, str], Chart], ...] = (
    funnel,
    agreement,
    confusion,
    reliability,
    ece,
    psi,
    risk_coverage,
    paired,
    latency,
    cost,
)
"""Every chart of a decision type's section, in order."""


def build_all(marts: Marts, decision_type: str, policies: Sequence[Replayed] = ()) -> list[Chart]:
    """Every chart of a decision type (``policies``: the replayed policies the risk-coverage ◆ shows)."""
    return [
        risk_coverage(marts, decision_type, policies)
        if build is risk_coverage
        else build(marts, decision_type)
        for build in BUILDERS
    ]
