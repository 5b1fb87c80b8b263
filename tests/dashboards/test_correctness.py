"""The review's audited correctness: beside agreement for every candidate and production, and its go gate."""

from __future__ import annotations

import math
import re
from statistics import NormalDist
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest

from dashboards.config import DEFAULTS, ReviewConfig
from dashboards.marts import Marts, load_marts
from dashboards.report import review, to_html, to_markdown
from dashboards.verdict import audited, correctness
from pipelines import synth
from pipelines.generate import Plan
from pipelines.generate_audits import generate_audited
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
    generate_audited(open_root(str(records)), PLAN, synth.AuditKnobs(agreement_rate=0.05))
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


def test_the_first_screen_shows_productions_audited_correctness_beside_each_candidates(
        audited_marts: Path) -> None:
    """Every banner line of a candidate with audits says both sides' correctness and the paired difference.

    The numbers are the ``audited_difference`` mart's row of that candidate, in HTML and Markdown.
    """
    result = _review(audited_marts)
    html, markdown = to_html(result), to_markdown(result)
    marts = load_marts(str(audited_marts), WEEK)
    rows = marts.of_week("audited_difference")
    shown = 0
    for section in result.sections:
        for line in section.lines:
            (row,) = rows[(rows["decision_type"] == section.decision_type)
                          & (rows["candidate"] == line.candidate)].to_dict("records")
            expected = (f"right on {row['candidate_correctness']:.1%} [{row['candidate_low']:.1%}, "
                        f"{row['candidate_high']:.1%}], production on {row['production_correctness']:.1%}")
            assert expected in line.audited
            assert f"difference {100 * row['diff']:+.1f} pts [{100 * row['diff_low']:+.1f}" in line.audited
            assert line.audited in html.replace("&#x27;", "'")
            assert line.audited in markdown
            shown += 1
    assert shown >= 2


def test_production_errors_make_agreement_understate_correctness(audited_marts: Path) -> None:
    """Production 15% wrong: each candidate agrees with production less often than it is right (audited)."""
    for section in _review(audited_marts).sections:
        for row in section.audited[1:]:
            if row.audited > 100:  # identities with few audits have wide intervals
                assert row.agreement is not None
                assert row.agreement < row.correctness


def test_the_gate_is_applied_where_audits_exist_and_the_report_says_which_way_it_went(
        audited_marts: Path) -> None:
    """Every candidate with audits gets the audited gate; its detail names the difference and the bound.

    A margin of 0.99 lets every candidate pass; with a margin of 0, a candidate whose pooled bound is below
    zero fails, and a failing gate prevents GO and is named in the reasons with the audits still needed.
    """
    marts = load_marts(str(audited_marts), WEEK)
    for margin, expect in ((0.99, True), (0.0, None)):
        result = _review(audited_marts, ReviewConfig(correctness_margin=margin))
        for section in result.sections:
            for candidate, verdict in section.verdicts.items():
                (check,) = [k for k in verdict.checks if k.rule == correctness.RULE]
                found = audited.pool(marts, section.decision_type, candidate)
                assert found is not None
                if found.strata.empty:
                    assert not check.passed
                    continue
                assert found.look == 2
                assert found.weeks == ("2026-W44", WEEK)
                bound = audited.paired(found.strata, NormalDist().inv_cdf(1 - audited.look_alpha(0.025, 2)))
                assert check.passed == (bound.low >= -margin)
                if expect is not None:
                    assert check.passed is expect
                assert f"{bound.diff:+.3f}, lower bound {bound.low:+.3f} at look 2" in check.detail
                if not check.passed:
                    assert verdict.decision != "go"
                    assert any(correctness.RULE in r for r in verdict.reasons)
                    assert "more audit" in check.detail


def test_without_audits_there_is_no_gate_and_the_report_says_so(generated_review: Review) -> None:
    """Marts without an audit sample: no correctness rows, no gate, one sentence in the report."""
    assert all(not s.audited for s in generated_review.sections)
    assert all(k.rule != correctness.RULE for s in generated_review.sections for v in s.verdicts.values()
               for k in v.checks)
    assert "No audited sample this week" in to_html(generated_review)
    assert "no audited sample this week" in to_markdown(generated_review)


def _strata(week: str, audited: tuple[int, int], sizes: tuple[int, int] = (100, 900),
            **sums: tuple[float, float]) -> dict[str, list[object]]:
    """One week's ``audit_strata`` rows of candidate ``cand``: (disagree, agree) strata."""
    return {"decision_type": ["t", "t"], "week": [week, week], "sample_id": [f"{week}-t", f"{week}-t"],
            "candidate": ["cand", "cand"], "stratum": ["disagree", "agree"],
            "stratum_decisions": list(sizes), "audited": list(audited), "units": list(audited),
            "discordant": [audited[0], 0],
            **{k: list(v) for k, v in sums.items()}}


def _marts(*weeks: dict[str, list[object]], week: str = "2026-W45", pairs: tuple[int, int] = (0, 0)) -> Marts:
    """``audit_strata`` of ``weeks``; ``pairs``: (double audits, of which disagreed) in the review week."""
    frame = pd.concat([pd.DataFrame(w) for w in weeks], ignore_index=True)
    agreement = pd.DataFrame({"decision_type": ["t"], "week": [week], "sample_id": [f"{week}-t"],
                              "double_audited": [pairs[0]], "agreed": [pairs[0] - pairs[1]]})
    return Marts({"audit_strata": frame, "auditor_agreement": agreement}, week, "test")


BALANCED = {"model_right": (50.0, 18.0), "production_right": (50.0, 18.0), "right_vs_wrong": (45.0, 0.0),
            "wrong_vs_right": (45.0, 0.0)}
"""100 disagreements audited in full (45 each way), 18 of 900 agreements, all right on both sides."""


def test_the_gate_fails_closed_where_a_stratum_of_the_review_week_has_no_audit() -> None:
    """No agreement audited in the review week: the gate fails (WAIT) and says to answer one in each."""
    check = audited.gate(_marts(_strata("2026-W45", (100, 0), **BALANCED)), "t", "cand", DEFAULTS)
    assert check is not None
    assert not check.passed
    assert "stratum without any audit" in check.detail


def test_an_earlier_week_with_an_unaudited_stratum_is_left_out_and_named() -> None:
    """W44's agreements never audited: W45 alone is pooled, W44 named, the look still counts both."""
    marts = _marts(_strata("2026-W44", (100, 0), **BALANCED), _strata("2026-W45", (100, 18), **BALANCED))
    found = audited.pool(marts, "t", "cand")
    assert found is not None
    assert (found.weeks, found.incomplete, found.look) == (("2026-W45",), ("2026-W44",), 2)
    check = audited.gate(marts, "t", "cand", DEFAULTS)
    assert check is not None
    assert "left out, a stratum unaudited: 2026-W44" in check.detail


def test_a_single_audit_in_a_stratum_still_gives_a_bound_of_its_width() -> None:
    """One agreement audited: no zero variance; the bound is finite and below the estimate (Wilson, n = 1)."""
    sums = {"model_right": (50.0, 1.0), "production_right": (50.0, 1.0), "right_vs_wrong": (45.0, 0.0),
            "wrong_vs_right": (45.0, 0.0)}
    found = audited.pool(_marts(_strata("2026-W45", (100, 1), **sums)), "t", "cand")
    assert found is not None
    p = audited.paired(found.strata, 1.96)
    assert p.diff == 0.0
    assert -0.2 < p.low < p.diff < p.high < 0.2


def test_a_candidate_without_audited_decisions_fails_and_no_sample_means_no_gate() -> None:
    """A sample without the candidate's decisions fails; no sample of the type: no gate unless required."""
    marts = _marts(_strata("2026-W45", (100, 18), **BALANCED))
    other = audited.gate(marts, "t", "other", DEFAULTS)
    assert other is not None
    assert not other.passed
    assert audited.gate(marts, "u", "cand", DEFAULTS) is None
    required = audited.gate(marts, "u", "cand", ReviewConfig(require_audits=True))
    assert required is not None
    assert not required.passed


@pytest.mark.parametrize(("worse", "passed"), [(0, True), (48, False)])
def test_the_gate_passes_on_the_paired_bound_and_spends_its_level_over_looks(
        worse: int, *, passed: bool) -> None:
    """400 disagreements of 4,000 decisions, balanced, pass a 0.02 margin; 48 more for production fail it.

    The same week reviewed as the third look tests at alpha_3 = 0.025 * 6 / (9 pi^2): a wider bound.
    """
    sums = {"model_right": (200.0, 72.0), "production_right": (200.0, 72.0),
            "wrong_vs_right": (180.0 + worse, 0.0), "right_vs_wrong": (180.0 - worse, 0.0)}
    one = _marts(_strata("2026-W45", (400, 72), (400, 3600), **sums))
    check = audited.gate(one, "t", "cand", ReviewConfig(correctness_margin=0.02))
    assert check is not None
    assert check.passed is passed
    assert "at look 1 (one-sided 98.48%)" in check.detail
    three = _marts(_strata("2026-W43", (0, 0), **sums), _strata("2026-W44", (0, 0), **sums),
                   _strata("2026-W45", (400, 72), (400, 3600), **sums))
    later = audited.gate(three, "t", "cand", ReviewConfig(correctness_margin=0.02))
    assert later is not None
    assert "at look 3 (one-sided 99.83%)" in later.detail


def test_auditor_error_narrows_the_margin_and_past_half_of_it_the_gate_waits() -> None:
    """Double audits that disagree lower the floor to margin (1 - 2e); past half the margin the gate waits.

    e is the largest error with 2e(1 - e) <= d; the wait names the disagreements; without double audits the
    detail says the error is not measured.
    """
    sums = {"model_right": (200.0, 72.0), "production_right": (200.0, 72.0),
            "wrong_vs_right": (180.0, 0.0), "right_vs_wrong": (180.0, 0.0)}
    strata = _strata("2026-W45", (400, 72), (400, 3600), **sums)
    config = ReviewConfig(correctness_margin=0.02)
    clean = audited.gate(_marts(strata, pairs=(40, 0)), "t", "cand", config)
    assert clean is not None
    assert clean.passed
    assert "-0.0200 (the margin less twice the auditor error 0.0%" in clean.detail
    some = audited.gate(_marts(strata, pairs=(400, 4)), "t", "cand", config)  # d = 1%: e = 0.50%
    assert some is not None
    assert some.passed
    assert "-0.0198 (" in some.detail
    much = audited.gate(_marts(strata, pairs=(100, 6)), "t", "cand", config)  # d = 6%: e = 3.09%
    assert much is not None
    assert not much.passed
    assert "the auditors disagree on 6 of 100 double audits" in much.detail
    unmeasured = audited.gate(_marts(strata), "t", "cand", config)
    assert unmeasured is not None
    assert "auditor error not measured: no double audits" in unmeasured.detail
    upper = float(audited.wilson(np.array([0.06]), np.array([100.0]), 1.96)[1][0])
    found = audited.auditor_error(_marts(strata, pairs=(100, 6)), "t", ("2026-W45",), 1.96)
    assert found is not None
    assert (found.pairs, found.disagreed) == (100, 6)
    assert found.estimate == pytest.approx((1 - math.sqrt(1 - 0.12)) / 2)
    assert found.upper == pytest.approx((1 - math.sqrt(1 - 2 * upper)) / 2)
