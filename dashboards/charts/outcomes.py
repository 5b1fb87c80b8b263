"""What the candidates proposed against production: the funnel, agreement over weeks, the confusion grid."""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt

from dashboards.charts.encoding import NAME, candidate_colour, rows_of_type
from dashboards.charts.rendering import HEIGHT, WIDTH, Chart, render
from dashboards.intervals import wilson
from dashboards.marts import ALL, CANDIDATE, CANDIDATE_NAME

if TYPE_CHECKING:
    from dashboards.marts import Marts

STAGES = ["offered", "sampled", "scored", "with_outcome", "labelled"]


def funnel(marts: Marts, decision_type: str) -> Chart:
    """Offered → sampled → scored → labelled in the review week, one bar per candidate name and stage."""
    rows = rows_of_type(marts.of_week("funnel"), decision_type)
    rows = rows[rows[CANDIDATE_NAME] != ALL].sort_values(CANDIDATE_NAME)
    table = rows.melt(id_vars=[CANDIDATE_NAME], value_vars=STAGES, var_name="stage", value_name="decisions")
    table = table.rename(columns={CANDIDATE_NAME: NAME}).astype({"decisions": "int64"})
    chart = (
        alt.Chart(table)
        .mark_bar()
        .encode(
            x=alt.X("decisions:Q"),
            y=alt.Y("stage:N", sort=STAGES, title=None),
            yOffset=alt.YOffset(f"{NAME}:N"),
            color=candidate_colour("candidate"),
            tooltip=[NAME, "stage", "decisions"],
        )
        .properties(width=WIDTH, height=max(HEIGHT // 2, 12 * len(table)))
    )
    offered = ", ".join(f"{n} {o:,}" for n, o in zip(rows[CANDIDATE_NAME], rows["offered"], strict=True))
    return render("funnel", "Funnel per candidate", f"n = {offered} offered", chart, table)


def agreement(marts: Marts, decision_type: str) -> Chart:
    """Agreement with production per candidate over weeks with Wilson 95% intervals (never "accuracy")."""
    t = rows_of_type(marts["agreement"], decision_type)
    n, p = t["labelled"].astype(float), t["agreement"]
    low, high = wilson(p, n)
    t = t.assign(low=low, high=high)
    columns = ["week", NAME, CANDIDATE, "labelled", "agreement", "low", "high", "kappa", "baseline_agreement"]
    table = t[columns]
    base = alt.Chart(table).encode(x="week:O", color=candidate_colour())
    chart = base.mark_errorbar().encode(
        y=alt.Y("low:Q", title="agreement with production"), y2="high:Q"
    ) + base.mark_line(point=True).encode(y="agreement:Q", tooltip=list(table.columns))
    week = t[t["week"] == marts.week]["labelled"].sum()
    return render(
        "agreement",
        "Agreement with production over weeks (95% Wilson)",
        f"n = {week:,} labelled this week",
        chart.properties(width=WIDTH, height=HEIGHT),
        table,
    )


CONFUSION_WIDTH = WIDTH // 2
CONFUSION_SPACING = 24


def confusion(marts: Marts, decision_type: str) -> Chart:
    """Outcome x proposal counts per candidate in the review week."""
    rows = rows_of_type(marts.of_week("confusion"), decision_type)
    table = rows[[NAME, "outcome", "proposal", "decisions", CANDIDATE]]
    base = alt.Chart().encode(x="proposal:N", y="outcome:N")
    cells = base.mark_rect().encode(
        color=alt.Color("decisions:Q", scale=alt.Scale(scheme="blues")), tooltip=list(table.columns)
    )
    text = base.mark_text(fontSize=9).encode(text="decisions:Q")
    # facet headers are the readable names, cut to the facet's width: the keys overlapped each other
    header = alt.Header(labelLimit=CONFUSION_WIDTH, labelFontSize=11, labelFontWeight="bold", title=None)
    chart = (
        alt.layer(cells, text, data=table)
        .properties(width=CONFUSION_WIDTH, height=HEIGHT // 2)
        .facet(column=alt.Column(f"{NAME}:N", header=header), spacing=CONFUSION_SPACING)
    )
    return render(
        "confusion",
        "Confusion (outcome x proposal)",
        f"n = {table['decisions'].sum():,} labelled",
        chart,
        table,
    )
