"""The report's charts: Vega-Lite specs built with Altair, rendered offline to SVG by vl-convert.

Each builder takes the marts (report vocabulary) and a decision type and returns a ``Chart``: its SVG,
the sample size it shows, and the numbers behind it as a small table. No chart holds row data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from dashboards.comparison import paired
from dashboards.marts import ALL, CANDIDATE
from dashboards.rendering import HEIGHT, WIDTH, Chart, render

if TYPE_CHECKING:
    from collections.abc import Callable

    from dashboards.marts import Marts

Z95 = 1.959964


def _type(frame: pd.DataFrame, decision_type: str, *, candidates: bool = True) -> pd.DataFrame:
    rows = frame[frame["decision_type"] == decision_type]
    if candidates and CANDIDATE in rows:
        rows = rows[rows[CANDIDATE] != ALL]
    return rows.copy()


def funnel(marts: Marts, decision_type: str) -> Chart:
    """Offered → sampled → scored → labelled in the review week."""
    row = _type(marts.of_week("funnel"), decision_type).iloc[0]
    stages = ["offered", "sampled", "scored", "with_outcome", "labelled"]
    table = pd.DataFrame({"stage": stages, "decisions": [int(row[s]) for s in stages]})
    chart = (
        alt.Chart(table)
        .mark_bar()
        .encode(
            x=alt.X("decisions:Q"),
            y=alt.Y("stage:N", sort=stages),
            tooltip=["stage", "decisions"],
        )
        .properties(width=WIDTH, height=HEIGHT // 2)
    )
    return render("funnel", "Funnel", f"n = {row['offered']:,} offered", chart, table)


def agreement(marts: Marts, decision_type: str) -> Chart:
    """Accuracy per candidate over weeks with Wilson 95% intervals."""
    t = _type(marts["agreement"], decision_type)
    n, p = t["labelled"].astype(float), t["accuracy"]
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * np.sqrt(p * (1 - p) / n + Z95**2 / (4 * n**2)) / (1 + Z95**2 / n)
    t = t.assign(low=centre - half, high=centre + half)
    table = t[["week", CANDIDATE, "labelled", "accuracy", "low", "high", "kappa", "baseline_accuracy"]]
    base = alt.Chart(table).encode(
        x="week:O", color=alt.Color(f"{CANDIDATE}:N", legend=alt.Legend(orient="bottom"))
    )
    chart = base.mark_errorbar().encode(y=alt.Y("low:Q", title="accuracy"), y2="high:Q") + base.mark_line(
        point=True
    ).encode(y="accuracy:Q", tooltip=list(table.columns))
    week = t[t["week"] == marts.week]["labelled"].sum()
    return render(
        "agreement",
        "Agreement over weeks (95% Wilson)",
        f"n = {week:,} labelled this week",
        chart.properties(width=WIDTH, height=HEIGHT),
        table,
    )


def confusion(marts: Marts, decision_type: str) -> Chart:
    """Outcome x proposal counts per candidate in the review week."""
    table = _type(marts.of_week("confusion"), decision_type)[[CANDIDATE, "outcome", "proposal", "decisions"]]
    base = alt.Chart().encode(x="proposal:N", y="outcome:N")
    cells = base.mark_rect().encode(
        color=alt.Color("decisions:Q", scale=alt.Scale(scheme="blues")), tooltip=list(table.columns)
    )
    text = base.mark_text(fontSize=9).encode(text="decisions:Q")
    chart = (
        alt.layer(cells, text, data=table)
        .properties(width=WIDTH // 2, height=HEIGHT // 2)
        .facet(column=alt.Column(f"{CANDIDATE}:N"))
    )
    return render(
        "confusion",
        "Confusion (outcome x proposal)",
        f"n = {table['decisions'].sum():,} labelled",
        chart,
        table,
    )


def reliability(marts: Marts, decision_type: str) -> Chart:
    """Accuracy against mean confidence per equal-mass bin, sized by the bin's count."""
    t = _type(marts.of_week("reliability"), decision_type)
    table = t[[CANDIDATE, "bin", "mean_confidence", "accuracy", "decisions"]]
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
            y=alt.Y("accuracy:Q", scale=alt.Scale(domain=[0, 1])),
            size="decisions:Q",
            color=alt.Color(f"{CANDIDATE}:N", legend=alt.Legend(orient="bottom")),
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
    cal = _type(marts["calibration"], decision_type)
    if "one_hot_excluded" not in cal:  # marts of a pipelines version before one-hot rows were left out
        cal["one_hot_excluded"] = 0
    drift = _type(marts["drift"], decision_type)[["week", CANDIDATE, "reference_ece_high", "ece_alert"]]
    columns = ["week", CANDIDATE, "labelled", "one_hot_excluded", "ece_debiased", "ece_low", "ece_high"]
    table = cal[columns].merge(drift, on=["week", CANDIDATE], how="left")
    base = alt.Chart(table).encode(
        x="week:O", color=alt.Color(f"{CANDIDATE}:N", legend=alt.Legend(orient="bottom"))
    )
    chart = (
        base.mark_errorbar().encode(y=alt.Y("ece_low:Q", title="ECE (debiased)"), y2="ece_high:Q")
        + base.mark_line(point=True).encode(y="ece_debiased:Q", tooltip=list(table.columns))
        + base.mark_tick(color="red", thickness=2).encode(y="reference_ece_high:Q")
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
    t = _type(marts["drift"], decision_type)
    table = t.melt(
        id_vars=["week", CANDIDATE, "labelled"],
        var_name="psi",
        value_name="value",
        value_vars=["confidence_psi", "proposal_mix_psi", "outcome_mix_psi"],
    ).dropna()
    bands = (
        alt.Chart(pd.DataFrame({"y": [0.1, 0.25], "band": ["moderate", "significant"]}))
        .mark_rule(strokeDash=[4, 4])
        .encode(y="y:Q", color=alt.Color("band:N", scale=alt.Scale(range=["orange", "red"])))
    )
    lines = (
        alt.Chart(table)
        .mark_line(point=True)
        .encode(
            x="week:O",
            y=alt.Y("value:Q", title="PSI"),
            strokeDash="psi:N",
            detail=f"{CANDIDATE}:N",
            tooltip=list(table.columns),
        )
    )
    return render(
        "psi",
        "PSI over weeks (bands 0.1, 0.25)",
        f"n = {t[t['week'] == marts.week]['labelled'].sum():,} labelled this week",
        (bands + lines).resolve_scale(color="independent").properties(width=WIDTH, height=HEIGHT),
        table,
    )


def risk_coverage(marts: Marts, decision_type: str) -> Chart:
    """Selective risk against coverage; the points are the policy's (per-option thresholds)."""
    t = _type(marts.of_week("risk_coverage"), decision_type)
    table = t[[CANDIDATE, "threshold", "accepted", "coverage", "selective_risk"]]
    policy = _type(marts.of_week("selective"), decision_type)[
        [CANDIDATE, "coverage", "selective_risk", "accepted"]
    ]
    enc = {"color": alt.Color(f"{CANDIDATE}:N", legend=alt.Legend(orient="bottom"))}
    curve = alt.Chart(table).mark_line().encode(x="coverage:Q", y="selective_risk:Q", **enc)
    steps = table[(table["threshold"] * 100).round() % 5 == 0]  # hover points every 0.05 of threshold
    marks = (
        alt.Chart(steps)
        .mark_circle(size=14)
        .encode(x="coverage:Q", y="selective_risk:Q", tooltip=list(table.columns), **enc)
    )
    point = (
        alt.Chart(policy.dropna())
        .mark_point(size=90, shape="diamond", filled=True)
        .encode(x="coverage:Q", y="selective_risk:Q", tooltip=list(policy.columns), **enc)
    )
    return render(
        "risk_coverage",
        "Risk-coverage (◆ policy)",
        f"n = {int(t.groupby(CANDIDATE)['accepted'].max().sum()):,} labelled",
        (curve + marks + point).properties(width=WIDTH, height=HEIGHT),
        table,
    )


def latency(marts: Marts, decision_type: str) -> Chart:
    """Scorer p50 / p95 / p99 by backend and device, side by side."""
    t = _type(marts.of_week("latency"), decision_type, candidates=False)
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
    t = _type(marts["cost"], decision_type, candidates=False)
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
