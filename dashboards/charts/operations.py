"""What the scorer costs to run: latency percentiles per fleet, and cost per decision over weeks."""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt

from dashboards.charts.encoding import rows_of_type
from dashboards.charts.rendering import HEIGHT, WIDTH, Chart, render

if TYPE_CHECKING:
    from dashboards.marts import Marts


def latency(marts: Marts, decision_type: str) -> Chart:
    """Scorer p50 / p95 / p99 by backend and device, side by side."""
    t = rows_of_type(marts.of_week("latency"), decision_type, candidates=False)
    t = t.assign(fleet=t["backend"] + "/" + t["device"] + "/" + t["instance_type"])
    table = t.melt(
        id_vars=["fleet", "decisions"],
        value_vars=["scorer_p50_ms", "scorer_p95_ms", "scorer_p99_ms"],
        var_name="percentile",
        value_name="ms",
    )
    chart = (
        alt.Chart(table)
        .mark_bar()
        .encode(
            x=alt.X("percentile:N", title=None),
            y="ms:Q",
            color="percentile:N",
            column="fleet:N",
            tooltip=list(table.columns),
        )
        .properties(width=WIDTH // 3, height=HEIGHT)
    )
    return render("latency", "Scorer latency by fleet", f"n = {t['decisions'].sum():,} scored", chart, table)


def cost(marts: Marts, decision_type: str) -> Chart:
    """Cost per accepted decision (and per scored, while nothing is accepted) over weeks."""
    t = rows_of_type(marts["cost"], decision_type, candidates=False)
    table = t.groupby(["week", "model_name"], as_index=False)[["cost_usd", "scored", "accepted"]].sum()
    table["per_accepted"] = table["cost_usd"] / table["accepted"].where(table["accepted"] > 0)
    table["per_scored"] = table["cost_usd"] / table["scored"]
    long = table.melt(
        id_vars=["week", "model_name", "scored", "accepted"],
        value_vars=["per_accepted", "per_scored"],
        var_name="usd",
        value_name="value",
    ).dropna()
    chart = (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x="week:O",
            y=alt.Y("value:Q", title="USD per decision"),
            color="model_name:N",
            strokeDash="usd:N",
            tooltip=list(long.columns),
        )
        .properties(width=WIDTH, height=HEIGHT)
    )
    week = table[table["week"] == marts.week]
    return render(
        "cost",
        "Cost per accepted decision",
        f"n = {week['accepted'].sum():,} accepted, {week['scored'].sum():,} scored this week",
        chart,
        table,
    )
