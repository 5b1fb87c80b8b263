"""What every chart shares: the decision type's rows named per candidate, and the colours that encode them.

Candidates are named as the catalog names them (``dashboards.names``, column ``NAME``), never by their
hash alone; each candidate keeps one colour (``PALETTE``) across the charts of a section, and no candidate
is drawn in an alert colour.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt

from dashboards.marts import ALL, CANDIDATE
from dashboards.names import readable

if TYPE_CHECKING:
    import pandas as pd

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


def rows_of_type(frame: pd.DataFrame, decision_type: str, *, candidates: bool = True) -> pd.DataFrame:
    """A copy of ``frame``'s rows of ``decision_type`` with each candidate's readable ``NAME``.

    ``candidates``: leave out the all-candidates (``ALL``) rows where the frame has a candidate column.
    """
    rows = frame[frame["decision_type"] == decision_type]
    if candidates and CANDIDATE in rows:
        rows = rows[rows[CANDIDATE] != ALL]
    rows = rows.copy()
    if CANDIDATE in rows:
        rows[NAME] = rows[CANDIDATE].map(readable(rows[CANDIDATE].astype(str)))
    return rows


def candidate_colour(title: str | None = None) -> alt.Color:
    """The candidate colour encoding, legend below the plot."""
    return alt.Color(
        f"{NAME}:N", title=title, scale=alt.Scale(range=PALETTE), legend=alt.Legend(orient="bottom")
    )
