"""How far the candidates' confidence can be read as a probability: reliability, ECE and PSI over weeks.

The ECE alert tick and the significant PSI band are drawn in ``ALERT``, the moderate band in
``MODERATE``; candidates keep their own colours.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

from dashboards.charts.encoding import (
    ALERT,
    MODERATE,
    NAME,
    candidate_colour,
    rows_of_type,
)
from dashboards.charts.rendering import HEIGHT, WIDTH, Chart, render
from dashboards.marts import CANDIDATE

if TYPE_CHECKING:
    from dashboards.marts import Marts


def reliability(marts: Marts, decision_type: str) -> Chart:
    """Agreement with production against mean confidence per equal-mass bin, sized by the bin's count."""
    t = rows_of_type(marts.of_week("reliability"), decision_type)
    table = t[[NAME, "bin", "mean_confidence", "agreement", "decisions", CANDIDATE]]
    diagonal = (
        alt.Chart(pd.DataFrame({"x": [0, 1], "y": [0, 1]}))
        .mark_line(color="grey", strokeDash=[4, 4])
        .encode(x="x:Q", y="y:Q")
    )
    points = (
        alt.Chart(table)
        .mark_circle(opacity=0.8)
        .encode(
            x=alt.X("mean_confidence:Q", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("agreement:Q", title="agreement with production", scale=alt.Scale(domain=[0, 1])),
            size="decisions:Q",
            color=candidate_colour(),
            tooltip=list(table.columns),
        )
    )
    return render(
        "reliability",
        "Reliability (15 equal-mass bins)",
        f"n = {table['decisions'].sum():,} labelled",
        (diagonal + points).properties(width=WIDTH, height=HEIGHT),
        table,
    )


def ece(marts: Marts, decision_type: str) -> Chart:
    """Debiased ECE with its interval over weeks; the alert line is the reference weeks' highest bound."""
    cal = rows_of_type(marts["calibration"], decision_type)
    if "one_hot_excluded" not in cal:  # marts of a pipelines version before one-hot rows were left out
        cal["one_hot_excluded"] = 0
    drift = rows_of_type(marts["drift"], decision_type)
    drift = drift[["week", CANDIDATE, "reference_ece_high", "ece_alert"]]
    columns = ["week", NAME, CANDIDATE, "labelled", "one_hot_excluded", "ece_debiased", "ece_low", "ece_high"]
    table = cal[columns].merge(drift, on=["week", CANDIDATE], how="left")
    base = alt.Chart(table).encode(x="week:O", color=candidate_colour())
    # the alert tick has no colour encoding: an encoded colour overrides the mark's own red
    tick = (
        alt.Chart(table)
        .mark_tick(color=ALERT, thickness=2)
        .encode(x="week:O", y="reference_ece_high:Q", tooltip=["week", NAME, "reference_ece_high"])
    )
    chart = (
        base.mark_errorbar().encode(y=alt.Y("ece_low:Q", title="ECE (debiased)"), y2="ece_high:Q")
        + base.mark_line(point=True).encode(y="ece_debiased:Q", tooltip=list(table.columns))
        + tick
    )
    week = table[table["week"] == marts.week]
    alerts = int(week["ece_alert"].fillna(value=False).sum())
    one_hot = int(week["one_hot_excluded"].fillna(0).sum())
    left_out = f"; {one_hot:,} one-hot rows left out (no log-probabilities)" if one_hot else ""
    return render(
        "ece",
        "ECE over weeks (red tick: alert above)",
        f"n = {int(week['labelled'].sum()) - one_hot:,} labelled; {alerts} alert(s) this week{left_out}",
        chart.properties(width=WIDTH, height=HEIGHT),
        table,
    )


def psi(marts: Marts, decision_type: str) -> Chart:
    """Confidence and mix PSI over weeks against the 0.1 / 0.25 bands."""
    t = rows_of_type(marts["drift"], decision_type)
    table = t.melt(
        id_vars=["week", NAME, CANDIDATE, "labelled"],
        var_name="psi",
        value_name="value",
        value_vars=["confidence_psi", "proposal_mix_psi", "outcome_mix_psi"],
    ).dropna()
    # the bands keep their own fixed colours; the lines are coloured by candidate, dashed by PSI kind
    bands = alt.layer(
        *(
            alt.Chart(pd.DataFrame({"y": [y], "band": [band]}))
            .mark_rule(strokeDash=[4, 4], color=colour)
            .encode(y="y:Q", tooltip=["band", "y"])
            for y, band, colour in ((0.1, "moderate", MODERATE), (0.25, "significant", ALERT))
        )
    )
    lines = (
        alt.Chart(table)
        .mark_line(point=True)
        .encode(
            x="week:O",
            y=alt.Y("value:Q", title="PSI"),
            color=candidate_colour(),
            strokeDash=alt.StrokeDash("psi:N", legend=alt.Legend(orient="bottom")),
            tooltip=list(table.columns),
        )
    )
    return render(
        "psi",
        "PSI over weeks (dashed bands: 0.1 moderate, 0.25 significant)",
        f"n = {t[t['week'] == marts.week]['labelled'].sum():,} labelled this week",
        (bands + lines).properties(width=WIDTH, height=HEIGHT),
        table,
    )
