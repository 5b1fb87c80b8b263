"""The report's charts: Vega-Lite specs built with Altair, rendered offline to SVG by vl-convert.

Each builder takes the marts (report vocabulary) and a decision type and returns a ``Chart``: its SVG,
the sample size it shows, and the numbers behind it as a small table. No chart holds row data.
Candidates are named as the catalog names them (``dashboards.names``, column ``NAME``), never by their
hash alone; each candidate keeps one colour across the charts of a section.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from dashboards.comparison import paired
from dashboards.marts import ALL, CANDIDATE, CANDIDATE_NAME
from dashboards.names import readable
from dashboards.rendering import HEIGHT, WIDTH, Chart, render

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from dashboards.marts import Marts
    from dashboards.policies import Replayed

Z95 = 1.959964
NAME = "name"
"""The column holding each row's readable candidate name."""
ALERT = "#d62728"
"""The colour of alert lines (the ECE alert tick, the significant PSI band): no candidate is drawn in it."""
MODERATE = "#ff9f1c"
PALETTE = [
    "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22",
    "#aec7e8", "#98df8a", "#c5b0d5", "#c49c94", "#f7b6d2", "#9edae5", "#393b79", "#637939",
]  # fmt: skip
"""Candidate colours (Tableau 20 without its reds and oranges): neither alert colour is among them."""


def _type(frame: pd.DataFrame, decision_type: str, *, candidates: bool = True) -> pd.DataFrame:
    rows = frame[frame["decision_type"] == decision_type]
    if candidates and CANDIDATE in rows:
        rows = rows[rows[CANDIDATE] != ALL]
    rows = rows.copy()
    if CANDIDATE in rows:
        rows[NAME] = rows[CANDIDATE].map(readable(rows[CANDIDATE].astype(str)))
    return rows


def _colour(title: str | None = None) -> alt.Color:
    """The candidate colour encoding, legend below the plot."""
    return alt.Color(
        f"{NAME}:N", title=title, scale=alt.Scale(range=PALETTE), legend=alt.Legend(orient="bottom")
    )


STAGES = ["offered", "sampled", "scored", "with_outcome", "labelled"]


def funnel(marts: Marts, decision_type: str) -> Chart:
    """Offered → sampled → scored → labelled in the review week, one bar per candidate name and stage."""
    rows = _type(marts.of_week("funnel"), decision_type)
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
            color=_colour("candidate"),
            tooltip=[NAME, "stage", "decisions"],
        )
        .properties(width=WIDTH, height=max(HEIGHT // 2, 12 * len(table)))
    )
    offered = ", ".join(f"{n} {o:,}" for n, o in zip(rows[CANDIDATE_NAME], rows["offered"], strict=True))
    return render("funnel", "Funnel per candidate", f"n = {offered} offered", chart, table)


AGREEMENT_COLUMNS = {"accuracy": "agreement", "baseline_accuracy": "baseline_agreement"}
"""The marts' ``accuracy`` is agreement with production's outcome: the report never calls it accuracy."""


def agreement(marts: Marts, decision_type: str) -> Chart:
    """Agreement with production per candidate over weeks with Wilson 95% intervals (never "accuracy")."""
    t = _type(marts["agreement"], decision_type).rename(columns=AGREEMENT_COLUMNS)
    n, p = t["labelled"].astype(float), t["agreement"]
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * np.sqrt(p * (1 - p) / n + Z95**2 / (4 * n**2)) / (1 + Z95**2 / n)
    t = t.assign(low=centre - half, high=centre + half)
    columns = ["week", NAME, CANDIDATE, "labelled", "agreement", "low", "high", "kappa", "baseline_agreement"]
    table = t[columns]
    base = alt.Chart(table).encode(x="week:O", color=_colour())
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
    rows = _type(marts.of_week("confusion"), decision_type)
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


def reliability(marts: Marts, decision_type: str) -> Chart:
    """Agreement with production against mean confidence per equal-mass bin, sized by the bin's count."""
    t = _type(marts.of_week("reliability"), decision_type).rename(columns=AGREEMENT_COLUMNS)
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
            color=_colour(),
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
    columns = ["week", NAME, CANDIDATE, "labelled", "one_hot_excluded", "ece_debiased", "ece_low", "ece_high"]
    table = cal[columns].merge(drift, on=["week", CANDIDATE], how="left")
    base = alt.Chart(table).encode(x="week:O", color=_colour())
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
    t = _type(marts["drift"], decision_type)
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
            color=_colour(),
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


def policy_points(marts: Marts, decision_type: str, policies: Sequence[Replayed] = ()) -> pd.DataFrame:
    """One ◆ per candidate: its replayed policy (out of sample), else the week's own thresholds (in-sample).

    ``coverage`` and ``selective_risk`` are null, and ``why`` says why, where no point can be drawn.
    """
    own = _type(marts.of_week("selective"), decision_type)
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
    t = _type(marts.of_week("risk_coverage"), decision_type)
    table = t[[NAME, "threshold", "accepted", "coverage", "selective_risk", CANDIDATE]]
    points = policy_points(marts, decision_type, policies)
    enc = {"color": _colour()}
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


def build_all(marts: Marts, decision_type: str, policies: Sequence[Replayed] = ()) -> list[Chart]:
    """Every chart of a decision type (``policies``: the replayed policies the risk-coverage ◆ shows)."""
    return [
        risk_coverage(marts, decision_type, policies)
        if build is risk_coverage
        else build(marts, decision_type)
        for build in BUILDERS
    ]
