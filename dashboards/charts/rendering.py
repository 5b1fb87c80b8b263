"""Rendering a chart: Vega-Lite (Altair) to static SVG with vl-convert, offline, with a tooltip per mark.

vl-convert's SVG is static: Vega's interactive tooltip handler does not run in it. Vega-Lite writes each
mark item's fields (its tooltip fields when the chart has a tooltip encoding) into the item's
``aria-label``; ``with_titles`` copies that text into an SVG ``<title>`` child, which every browser shows
as the item's tooltip on hover, with no script. Lines and areas are skipped: their label is the first
point's, and the points drawn on them carry their own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import altair as alt
import vl_convert

from dashboards.errors import RenderFailed

if TYPE_CHECKING:
    import pandas as pd

WIDTH, HEIGHT = 360, 220
MARK = re.compile(r'<(path|rect|circle|line|text|image)\b([^>]*?\brole="graphics-symbol"[^>]*?)(/?)>')
LABEL = re.compile(r'\baria-label="([^"]*)"')
ROLE = re.compile(r'\baria-roledescription="([^"]*)"')
NO_TITLE = frozenset({"line mark", "area mark", "trail mark"})


@dataclass(frozen=True)
class Chart:
    """One rendered chart: a name, a title, its sample size, the SVG and the numbers behind it."""

    name: str
    title: str
    sample: str
    svg: str
    table: pd.DataFrame
    spec: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """The Vega-Lite spec it was rendered from (its data inlined): what the chart tests read."""


def with_titles(svg: str) -> str:
    """``svg`` with a ``<title>`` (the item's ``aria-label``, already escaped) in every mark item."""

    def titled(match: re.Match[str]) -> str:
        tag, attributes, closed = match.groups()
        label, role = LABEL.search(attributes), ROLE.search(attributes)
        if label is None or (role is not None and role.group(1) in NO_TITLE):
            return match.group(0)
        title = f"<title>{label.group(1)}</title>"
        return f"<{tag}{attributes}>{title}</{tag}>" if closed else f"<{tag}{attributes}>{title}"

    return MARK.sub(titled, svg)


def render(name: str, title: str, sample: str, chart: alt.TopLevelMixin, table: pd.DataFrame) -> Chart:
    """Render a chart to SVG with vl-convert (no network); the title carries the sample size."""
    spec = chart.properties(title=alt.TitleParams(title, subtitle=sample)).to_dict()
    try:
        svg = vl_convert.vegalite_to_svg(spec)
    except (ValueError, RuntimeError) as exc:
        raise RenderFailed(f"chart {name}: {exc}") from exc
    return Chart(name, title, sample, with_titles(svg), table, spec)
