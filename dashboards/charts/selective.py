"""Selective risk against coverage, with a ◆ per candidate at its policy (or the week's own thresholds)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

from dashboards.charts.encoding import NAME, candidate_colour, rows_of_type
from dashboards.charts.rendering import HEIGHT, WIDTH, Chart, render
from dashboards.marts import CANDIDATE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dashboards.marts import Marts
    from dashboards.policies import Replayed


def policy_points(marts: Marts, decision_type: str, policies: Sequence[Replayed] = ()) -> pd.DataFrame:
    """One ◆ per candidate: its replayed policy (out of sample), else the week's own thresholds (in-sample).

    ``coverage`` and ``selective_risk`` are null, and ``why`` says why, where no point can be drawn.
    """
    own = rows_of_type(marts.of_week("selective"), decision_type)
    replayed = {p.policy.model_key: p for p in policies if p.policy.decision_type == decision_type}
    rows = []
    for r in own.itertuples():
        p = replayed.get(str(getattr(r, CANDIDATE)))
        if p is not None and not p.in_sample:
            accepted, labelled, correct = (
                p.count("accepted"),
                p.count("accepted_labelled"),
                p.count("accepted_correct"),
            )
            source, coverage = f"policy chosen on {p.policy.chosen_on}", p.coverage
        else:
            accepted, labelled = int(r.accepted), int(r.accepted_labelled)
            correct, coverage = int(r.accepted_correct), float(r.coverage)
            source = "week's own thresholds (in-sample)"
        why = (
            "nothing accepted at its thresholds"
            if accepted == 0
            else "no accepted decision has an outcome yet"
            if labelled == 0
            else ""
        )
        risk = 1 - correct / labelled if labelled else None
        rows.append((getattr(r, NAME), source, accepted, labelled, coverage if not why else None, risk, why))
    columns = [NAME, "source", "accepted", "accepted_labelled", "coverage", "selective_risk", "why"]
    return pd.DataFrame(rows, columns=columns)


def risk_coverage(marts: Marts, decision_type: str, policies: Sequence[Replayed] = ()) -> Chart:
    """Selective risk against coverage; ◆ per candidate at its policy, and why where none is drawn."""
    t = rows_of_type(marts.of_week("risk_coverage"), decision_type)
    table = t[[NAME, "threshold", "accepted", "coverage", "selective_risk", CANDIDATE]]
    points = policy_points(marts, decision_type, policies)
    enc = {"color": candidate_colour()}
    curve = alt.Chart(table).mark_line().encode(x="coverage:Q", y="selective_risk:Q", **enc)
    steps = table[(table["threshold"] * 100).round() % 5 == 0]  # hover points every 0.05 of threshold
    marks = (
        alt.Chart(steps)
        .mark_circle(size=14)
        .encode(x="coverage:Q", y="selective_risk:Q", tooltip=list(table.columns), **enc)
    )
    drawn = points[points["why"] == ""]
    point = (
        alt.Chart(drawn)
        .mark_point(size=110, shape="diamond", filled=True, stroke="black", strokeWidth=1)
        .encode(
            x="coverage:Q",
            y="selective_risk:Q",
            tooltip=[f"{NAME}:N", "source:N", "accepted:Q", "accepted_labelled:Q", "coverage:Q"],
            **enc,
        )
    )
    missing = "; ".join(
        f"no ◆ ({why}): {', '.join(group[NAME])}" for why, group in points[points["why"] != ""].groupby("why")
    )
    sample = f"n = {int(t.groupby(CANDIDATE)['accepted'].max().sum()):,} labelled" + (
        f"; {missing}" if missing else ""
    )
    sources = sorted(set(drawn["source"].str.startswith("policy").map({True: "policy", False: "in-sample"})))
    title = f"Risk-coverage (◆ {' / '.join(sources) or 'policy'})"
    return render(
        "risk_coverage",
        title,
        sample,
        (curve + marks + point).properties(width=WIDTH, height=HEIGHT),
        pd.concat([table, points.assign(threshold=None)], ignore_index=True),
    )
