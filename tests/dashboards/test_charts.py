"""The chart defects a reader saw, each pinned on the rendered SVG (or, for overlap, the page's layout)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections import defaultdict
from typing import TYPE_CHECKING

import pytest

from dashboards import charts
from dashboards.marts import CANDIDATE, CANDIDATE_NAME, load_marts
from dashboards.names import readable
from tests.dashboards.browser import chromium, load
from tests.dashboards.harness import WEEK

if TYPE_CHECKING:
    from pathlib import Path

    from dashboards.marts import Marts

TYPE = "ticket_routing"
HEADERS = """JSON.stringify(Array.from(document.querySelectorAll('.role-column-header text')).map(t => {
  const box = t.getBoundingClientRect();
  return [t.textContent, box.left, box.right];
}))"""


def marks(svg: str, role: str) -> list[dict[str, str]]:
    """Every mark item of ``role`` (its ``aria-roledescription``) with its attributes."""
    found = re.findall(rf'<\w+ ([^>]*aria-roledescription="{re.escape(role)}"[^>]*)>', svg)
    return [dict(re.findall(r'([\w-]+)="([^"]*)"', attributes)) for attributes in found]


def named(label: str) -> str:
    """The ``name`` field of a mark's aria-label."""
    found = re.search(r"(?:^|; )name: ([^;]+)", label)
    assert found, label
    return found.group(1)


@pytest.fixture(scope="module")
def marts(marts_dir: Path) -> Marts:
    """The generated marts of the drifted week (two candidates, ten identities per type)."""
    return load_marts(str(marts_dir), WEEK)


def test_the_funnel_names_every_candidate(marts: Marts) -> None:
    """One bar per candidate name and stage, each bar naming its candidate, with the mart's counts."""
    chart = charts.funnel(marts, TYPE)
    mart = marts.of_week("funnel")
    mart = mart[mart["decision_type"] == TYPE]
    names = set(mart[CANDIDATE_NAME])
    assert names == {"default", "challenger"}
    bars = marks(chart.svg, "bar")
    assert len(bars) == len(names) * len(charts.STAGES)
    assert {named(b["aria-label"]) for b in bars} == names
    for row in mart.itertuples():
        for stage in charts.STAGES:
            got = chart.table[(chart.table["name"] == row.candidate_name) & (chart.table["stage"] == stage)]
            assert got["decisions"].tolist() == [getattr(row, stage)]


def test_every_psi_line_is_coloured_by_its_candidate(marts: Marts) -> None:
    """Each candidate's PSI lines share one colour, different candidates differ, none in an alert colour."""
    chart = charts.psi(marts, TYPE)
    colours = defaultdict(set)
    for line in marks(chart.svg, "line mark"):
        colours[named(line["aria-label"])].add(line["stroke"])
    assert set(colours) == set(chart.table["name"])
    assert len(colours) > 1
    assert all(len(c) == 1 for c in colours.values())
    used = {next(iter(c)) for c in colours.values()}
    assert len(used) == min(len(colours), len(charts.PALETTE))
    assert not used & {charts.ALERT, charts.MODERATE}


def test_the_ece_alert_tick_is_red_and_no_candidate_is(marts: Marts) -> None:
    """Every tick of the alert line is drawn in the alert colour; no candidate's mark is."""
    svg = charts.ece(marts, TYPE).svg
    ticks = marks(svg, "tick")
    assert ticks
    assert {t.get("fill") for t in ticks} == {charts.ALERT}
    for role in ("point", "errorbar", "line mark"):
        drawn = marks(svg, role)
        assert drawn
        assert all(charts.ALERT not in (m.get("fill"), m.get("stroke")) for m in drawn), role


def test_risk_coverage_draws_a_diamond_per_policy_or_says_why_not(marts: Marts) -> None:
    """A ◆ per candidate whose thresholds accept labelled decisions, else its name and why in the subtitle.

    In the generated week no thresholds accept anything: every candidate is named; once one candidate's
    accept labelled decisions, its ◆ is drawn at its coverage and selective risk and it is not named.
    """
    chart = charts.risk_coverage(marts, TYPE)
    names = readable(marts.candidates(TYPE))
    drawn = {named(m["aria-label"]) for m in marks(chart.svg, "point")}
    selective = marts.of_week("selective")
    selective = selective[selective["decision_type"] == TYPE]
    for key, name in names.items():
        accepted = int(selective[selective[CANDIDATE] == key]["accepted"].iloc[0])
        assert (name in drawn) == (accepted > 0)
        assert (name in chart.sample) == (accepted == 0)
    # one candidate's thresholds accepting 40 of its labelled decisions, 30 of them right
    key = next(iter(names))
    frame = marts.frames["selective"].copy()
    row = (frame["week"] == WEEK) & (frame["decision_type"] == TYPE) & (frame[CANDIDATE] == key)
    frame.loc[row, ["accepted", "accepted_labelled", "accepted_correct", "coverage"]] = [50, 40, 30, 0.3]
    changed = dataclasses.replace(marts, frames={**marts.frames, "selective": frame})
    chart = charts.risk_coverage(changed, TYPE)
    diamonds = [m for m in marks(chart.svg, "point") if named(m["aria-label"]) == names[key]]
    assert len(diamonds) == 1
    assert "coverage: 0.3" in diamonds[0]["aria-label"]
    point = chart.table[chart.table["name"] == names[key]].dropna(subset=["selective_risk", "source"])
    assert point["selective_risk"].tolist() == pytest.approx([0.25])
    assert f"{names[key]}," not in chart.sample
    assert not chart.sample.endswith(names[key])


def test_confusion_column_titles_are_names_that_do_not_overlap(marts: Marts, tmp_path: Path) -> None:
    """The facet titles are the readable names, laid out by Chromium without overlapping each other."""
    if chromium() is None:
        pytest.fail("chromium is not installed: `make` installs it (apt-get install -y chromium)")
    chart = charts.confusion(marts, TYPE)
    page = tmp_path / "confusion.html"
    page.write_text(f"<!doctype html><html><body>{chart.svg}</body></html>", encoding="utf-8")
    headers = json.loads(load(page, HEADERS, width=4000).result)
    assert sorted(h[0] for h in headers) == sorted(readable(marts.candidates(TYPE)).values())
    boxes = sorted((left, right) for _, left, right in headers)
    assert all(right <= nxt_left for (_, right), (nxt_left, _) in itertools.pairwise(boxes))
