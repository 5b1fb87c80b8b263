"""The review's audited correctness: beside agreement for every candidate and production, and its go gate."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import pytest

from dashboards.config import DEFAULTS, ReviewConfig
from dashboards.marts import load_marts
from dashboards.report import review, to_html, to_markdown
from dashboards.verdict import correctness
from pipelines import synth
from pipelines.auditor import generate_audited
from pipelines.generate import Plan
from pipelines.storage import open_root
from tests.dashboards.harness import run_marts

if TYPE_CHECKING:
    from pathlib import Path

    from dashboards.report import Review

WEEK = "2026-W45"
PLAN = Plan(decisions=10_000, weeks=2, drift_week=None, seed=8,
            knobs=synth.Knobs(challenger=synth.CHALLENGER, production_error_rate=0.15))


@pytest.fixture(scope="module")
def audited_marts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two weeks, production 15% wrong, every week's sample answered by a perfect auditor."""
    records = tmp_path_factory.mktemp("audited_records")
    generate_audited(open_root(str(records)), PLAN, synth.Auditor(agreement_rate=0.05))
    return run_marts(records, tmp_path_factory.mktemp("audited_marts"), "2026-W44", WEEK)


def _review(marts: Path, config: ReviewConfig = DEFAULTS) -> Review:
    return review(load_marts(str(marts), WEEK), config)


def test_the_review_shows_audited_correctness_beside_agreement_for_production_and_every_candidate(
        audited_marts: Path) -> None:
    """Each section lists production first, then every candidate with audits, agreement beside correctness.

    HTML and Markdown both carry it; the word "accuracy" appears nowhere in either.
    """
    result = _review(audited_marts)
    html, markdown = to_html(result), to_markdown(result)
    for section in result.sections:
        keys = [r.key for r in section.audited]
        assert keys[0] == correctness.PRODUCTION
        assert set(keys[1:]) <= set(section.verdicts)
        assert len(keys) > 2
        for row in section.audited:
            assert 0 <= row.low <= row.correctness <= row.high <= 1
            assert row.agreement is not None
    assert "Who was right: audited correctness beside agreement with production" in html
    assert "agreement with production" in markdown
    assert "audited correctness" in markdown
    assert not re.search("accuracy", html, re.IGNORECASE)
    assert not re.search("accuracy", markdown, re.IGNORECASE)


def test_production_errors_make_agreement_understate_correctness(audited_marts: Path) -> None:
    """Production 15% wrong: each candidate agrees with production less often than it is right (audited)."""
    for section in _review(audited_marts).sections:
        for row in section.audited[1:]:
            if row.audited > 100:  # identities with few audits have wide intervals
                assert row.agreement is not None
                assert row.agreement < row.correctness


def test_the_gate_is_applied_where_audits_exist_and_the_report_says_which_way_it_went(
        audited_marts: Path) -> None:
    """Every candidate with audits gets the non-inferiority check; its detail names the bound and the floor.

    A margin of 0.99 lets every candidate pass; with a margin of 0, a candidate whose bound is below
    production's estimate fails, and a failing gate prevents GO and is named in the reasons.
    """
    for margin, expect in ((0.99, True), (0.0, None)):
        result = _review(audited_marts, ReviewConfig(correctness_margin=margin))
        for section in result.sections:
            rows = {r.key: r for r in section.audited}
            production = rows[correctness.PRODUCTION]
            for candidate, verdict in section.verdicts.items():
                checks = [k for k in verdict.checks if k.rule == correctness.RULE]
                if candidate not in rows or math.isnan(rows[candidate].low):
                    assert not checks
                    continue
                (check,) = checks
                floor = production.correctness - margin
                assert check.passed == (rows[candidate].low >= floor)
                if expect is not None:
                    assert check.passed is expect
                assert f"= {floor:.3f}" in check.detail
                assert ("is at least" if check.passed else "is below") in check.detail
                if not check.passed:
                    assert verdict.decision != "go"
                    assert any(correctness.RULE in r for r in verdict.reasons)


def test_without_audits_there_is_no_gate_and_the_report_says_so(generated_review: Review) -> None:
    """Marts without an audit sample: no correctness rows, no gate, one sentence in the report."""
    assert all(not s.audited for s in generated_review.sections)
    assert all(k.rule != correctness.RULE for s in generated_review.sections for v in s.verdicts.values()
               for k in v.checks)
    assert "No audited sample this week" in to_html(generated_review)
    assert "no audited sample this week" in to_markdown(generated_review)


@pytest.mark.parametrize(("low", "passed"), [(0.879, False), (0.880, True), (0.95, True)])
def test_the_gate_compares_the_lower_bound_with_productions_estimate_minus_the_margin(
        low: float, passed: bool) -> None:
    """Production at 0.90 and a 0.02 margin: the floor is 0.88; the candidate's lower bound decides."""
    rows = [correctness.Audited("production", 1.0, 300, 0.90, 0.87, 0.93, None, None),
            correctness.Audited("cand", 0.8, 300, low + 0.03, low, low + 0.06, None, None)]
    check = correctness.gate(rows, "cand", ReviewConfig(correctness_margin=0.02))
    assert check is not None
    assert check.passed is passed
    assert correctness.gate(rows, "other", DEFAULTS) is None
    assert correctness.gate(rows[1:], "cand", DEFAULTS) is None
