"""The paired comparison of two candidates on the same decisions (the ``paired`` mart).

One row per pair of identities (``<candidate> <model>/.../<device>/<norm> #sha`` on each side), never the
candidate-wide ``'*'`` rows, so an identity change or a CPU and a GPU pool are not blended: the
difference in agreement with production (B - A) with its 95% paired Wald interval, and McNemar's exact
p-value, on the decisions both scored and that have an outcome.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

from dashboards.charts.rendering import HEIGHT, WIDTH, Chart, render
from dashboards.marts import ALL, identity_of

if TYPE_CHECKING:
    from dashboards.marts import Marts

SIGNIFICANT = 0.05
"""McNemar p-value below which the point is drawn as a significant difference."""
COLUMNS = [
    "pair",
    "paired",
    "only_a",
    "only_b",
    "difference",
    "difference_low",
    "difference_high",
    "mcnemar_p",
]


def short(key: str) -> str:
    """A short label for a grouping key: ``candidate model/device #sha6``."""
    ident = identity_of(key)
    name = key.partition(" ")[0] if " #" in key else ident.model_name
    return f"{name} {'/'.join(p for p in (ident.model_name, ident.device) if p)} #{ident.sha256_prefix[:6]}"


def pairs_of(marts: Marts, decision_type: str) -> pd.DataFrame:
    """The review week's identity-level pairs of a decision type, labelled ``B vs A``."""
    frame = marts.of_week("paired")
    if frame.empty:
        return pd.DataFrame(columns=COLUMNS)
    rows = frame[
        (frame["decision_type"] == decision_type)
        & (frame["model_key_a"] != ALL)
        & (frame["model_key_b"] != ALL)
    ]
    pair = [
        f"{short(b)} vs {short(a)}" for a, b in zip(rows["model_key_a"], rows["model_key_b"], strict=True)
    ]
    return rows.assign(pair=pair)[COLUMNS].sort_values("pair").reset_index(drop=True)


def paired(marts: Marts, decision_type: str) -> Chart:
    """Agreement B - A per pair of identities with the paired interval; filled when McNemar p < 0.05."""
    table = pairs_of(marts, decision_type)
    title = "Paired comparison (agreement with production B - A, 95% paired Wald)"
    if table.empty:
        note = pd.DataFrame({"note": ["no two candidates scored and labelled the same decisions this week"]})
        chart = (
            alt.Chart(note).mark_text(fontSize=12).encode(text="note:N").properties(width=WIDTH, height=40)
        )
        return render("paired", title, "n = 0 paired decisions", chart, note)
    table = table.assign(significant=table["mcnemar_p"] < SIGNIFICANT)
    base = alt.Chart(table).encode(y=alt.Y("pair:N", title=None, axis=alt.Axis(labelLimit=260)))
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color="grey").encode(x="x:Q")
    bars = base.mark_errorbar(ticks=True).encode(
        x=alt.X("difference_low:Q", title="agreement with production B - A"), x2="difference_high:Q"
    )
    points = base.mark_point(size=70, filled=True).encode(
        x="difference:Q",
        color=alt.Color(
            "significant:N", title=f"McNemar p < {SIGNIFICANT}", legend=alt.Legend(orient="bottom")
        ),
        tooltip=[*COLUMNS],
    )
    chart = (zero + bars + points).properties(width=WIDTH, height=max(HEIGHT // 2, 22 * len(table)))
    return render("paired", title, f"n = {int(table['paired'].sum()):,} paired decisions", chart, table)
