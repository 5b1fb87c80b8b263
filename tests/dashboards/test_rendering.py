"""Tooltips in vl-convert's static SVG: each mark item gets a <title> with its tooltip fields."""

from __future__ import annotations

import re

import altair as alt
import pandas as pd

from dashboards.charts.rendering import render


def test_marks_carry_their_tooltip_fields_as_svg_titles_and_lines_do_not() -> None:
    """Two points with a tooltip naming a field not on any axis: two titles with it; the line none."""
    table = pd.DataFrame({"week": ["W1", "W2"], "accuracy": [0.8, 0.9], "labelled": [120, 340]})
    chart = (
        alt.Chart(table)
        .mark_line(point=True)
        .encode(x="week:O", y="accuracy:Q", tooltip=["week", "accuracy", "labelled"])
    )
    svg = render("t", "T", "n = 460", chart, table).svg
    titles = re.findall(r"<title>([^<]*)</title>", svg)
    assert sorted(titles) == [
        "week: W1; accuracy: 0.8; labelled: 120",
        "week: W2; accuracy: 0.9; labelled: 340",
    ]
    assert not re.search(r'aria-roledescription="line mark"[^>]*>\s*<title>', svg)
    assert svg.count("<path") == svg.count("</path>") + len(re.findall(r"<path[^>]*/>", svg))
