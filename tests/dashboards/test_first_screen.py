"""The review's first screen: what a rollout meeting reads in its first 1400x900 pixels, charts or not.

Records shaped like a trial's (one decision type, one scorer fleet, a champion and a challenger on the
same decisions, three weeks): the banner is the page's first element and holds each candidate's verdict
sentence and binding constraint, the scorecard's first row is in the viewport, and both stay there with
every chart removed from the page. The Markdown carries the banner and the scorecard.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import pytest

from dashboards.config import DEFAULTS
from dashboards.marts import load_marts
from dashboards.report import review, to_html, to_markdown
from dashboards.screen import trust
from pipelines.generate import generate
from pipelines.storage import open_root
from tests.dashboards.browser import chromium, load
from tests.dashboards.harness import TRIAL, TRIAL_WEEK, run_marts

if TYPE_CHECKING:
    from pathlib import Path

    from dashboards.report import Review

WIDTH, HEIGHT = 1400, 900
FIRST_VIEWPORT = f"""JSON.stringify((() => {{
  const inView = el => el !== null && el.getBoundingClientRect().bottom <= {HEIGHT}
    && el.getBoundingClientRect().top >= 0 && el.getBoundingClientRect().height > 0;
  const lines = Array.from(document.querySelectorAll('#decision p.line')).map(p => ({{
    candidate: p.dataset.candidate,
    text: p.querySelector('.sentence').textContent,
    visible: inView(p.querySelector('.sentence')),
  }}));
  const first = document.querySelector('#scorecard table tr:nth-child(2)');
  return {{
    first: document.body.firstElementChild.id,
    lines: lines,
    row: first ? Array.from(first.cells).map(c => c.textContent) : null,
    row_visible: inView(first),
    svgs: document.querySelectorAll('svg').length,
  }};
}})())"""


@pytest.fixture(scope="module")
def trial_review(tmp_path_factory: pytest.TempPathFactory) -> Review:
    """The review of the last week of trial-shaped records, with the default rules."""
    records = tmp_path_factory.mktemp("trial-records")
    generate(open_root(str(records)), TRIAL)
    marts = run_marts(records, tmp_path_factory.mktemp("trial-marts"), "2026-W44", TRIAL_WEEK)
    return review(load_marts(str(marts), TRIAL_WEEK), DEFAULTS)


def without_charts(page: str) -> str:
    """The page with every chart's SVG cut out (as if no chart had rendered)."""
    return re.sub(r"<svg\b.*?</svg>", "", page, flags=re.DOTALL)


@pytest.mark.parametrize("charts", ["with charts", "without charts"])
def test_the_first_viewport_holds_every_verdict_and_the_scorecards_first_row(
    trial_review: Review, tmp_path: Path, charts: str
) -> None:
    """At 1400x900 in Chromium: every verdict sentence and the scorecard's first row are in view.

    The banner is the body's first element; each candidate's sentence (with its binding constraint) and
    the scorecard's first row are inside the first viewport, with and without the charts in the page.
    """
    if chromium() is None:
        pytest.fail("chromium is not installed: `make` installs it (apt-get install -y chromium)")
    page = to_html(trial_review)
    if charts == "without charts":
        page = without_charts(page)
    path = tmp_path / "review.html"
    path.write_text(page, encoding="utf-8")
    state = json.loads(load(path, FIRST_VIEWPORT, width=WIDTH, height=HEIGHT).result)
    assert (state["svgs"] == 0) == (charts == "without charts")
    assert state["first"] == "decision"
    (section,) = trial_review.sections
    assert {line["candidate"] for line in state["lines"]} == set(section.verdicts)
    for line, expected in zip(state["lines"], section.lines, strict=True):
        assert line["visible"], line
        assert line["text"] == expected.sentence
        assert expected.binding
        assert expected.binding in line["text"]
    (card,) = section.scorecards
    assert state["row_visible"]
    assert state["row"][0] == card.rows[0].metric == "agreement with production (paired)"
    assert state["row"][3] == card.rows[0].shown_difference()


def test_every_failing_gate_is_named_not_only_the_one_that_decided(trial_review: Review) -> None:
    """Each candidate's line names every failing gate of its verdict, with how far it is from passing."""
    for section in trial_review.sections:
        for line in section.lines:
            verdict = section.verdicts[line.candidate]
            failing = {k.rule for k in verdict.checks if not k.passed and k.kind != "warning"}
            assert {rule for rule, _ in line.failing} == failing
            assert len(line.failing) > 1
            assert all(gap for _, gap in line.failing)


def test_the_markdown_carries_the_banner_and_the_scorecard(trial_review: Review) -> None:
    """review.md: a Decision section with each candidate's sentence and a Scorecard table with its rows."""
    text = to_markdown(trial_review)
    decision = text.partition("## Decision\n")[2].partition("\n## ")[0]
    scorecard = text.partition("## Scorecard\n")[2].partition("\n## ")[0]
    (section,) = trial_review.sections
    for line in section.lines:
        assert line.sentence in decision
        assert f"**{line.decision.upper()}**" in decision
    (card,) = section.scorecards
    assert card.recommendation in scorecard
    for row in card.rows:
        assert f"| {row.metric} | {row.champion} | {row.challenger} | {row.shown_difference()} |" in scorecard
    assert "Holm-adjusted" in scorecard


def test_the_trust_strip_says_what_the_numbers_rest_on(trial_review: Review) -> None:
    """The strip: as of, maturity, label rate, audits, policy and health checks."""
    labels = [f.label for f in trial_review.facts]
    assert labels == ["as of", "maturity", "label rate", "audits", "policy", "health checks"]
    policy = next(f for f in trial_review.facts if f.label == "policy")
    assert policy.value == "none given"
    assert policy.warn
    page = to_html(trial_review)
    assert "<div id='trust'>" in page
    assert "label rate</b>: challenger" in page


def test_candidates_on_one_scorer_are_said_to_share_p99_and_cost() -> None:
    """Two candidates of one model, quantization and device share a scorer: the caveat names them.

    They differ only in normalization; a candidate on another device is not in the caveat.
    """
    keys = [
        "pmi gemma-3-270m/Q4_K_M/cpu/pmi #a99b86715c64",
        "none gemma-3-270m/Q4_K_M/cpu/none #0f3c5d2e9a11",
        "gpu gemma-3-270m/Q4_K_M/cuda/none #77aa00bb11cc",
    ]
    assert trust.shared_scorers(keys) == [
        "p99 and cost are shared by none and pmi (one scorer: gemma-3-270m/Q4_K_M/cpu)"
    ]
