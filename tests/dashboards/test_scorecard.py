"""The scorecard's differences and intervals against numpy and statsmodels on the same rows."""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow.dataset as pads
import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from dashboards.config import DEFAULTS
from dashboards.intervals import Z95
from dashboards.marts import CANDIDATE, identity_of, load_marts
from dashboards.report import review
from dashboards.screen.scorecard import Row, Scorecard, recommend
from dashboards.screen.stats import (
    Difference,
    holm,
    independent_difference,
    paired_difference,
    per_accepted,
    ratio_difference,
)
from dashboards.verdict.decision import P99_HARD, Check, Decision, Verdict
from pipelines import synth
from pipelines.generate_audits import generate_audited
from pipelines.storage import open_root
from tests.dashboards.harness import TRIAL, TRIAL_WEEK, WEEK, run_marts
from tests.pipelines.harness import AS_OF

if TYPE_CHECKING:
    from pathlib import Path

    from dashboards.report import Review

WEEK_START, WEEK_END = pd.Timestamp("2026-11-23", tz="UTC"), pd.Timestamp("2026-11-30", tz="UTC")


def correct_per_decision(records: Path, decision_type: str, key: str) -> pd.Series:
    """Decision id -> whether one identity's proposal equals production's latest outcome, W48 labelled.

    Read straight from the records with pyarrow and pandas (not the pipelines): the latest ``outcome_at``
    known at ``AS_OF`` wins, ties to the greater outcome id, audits never count.
    """
    ident = identity_of(key)
    proposals = (
        pads.dataset(records / "proposals", format="parquet", partitioning="hive").to_table().to_pandas()
    )
    p = proposals[
        (proposals["decision_type"] == decision_type)
        & (proposals["status"] == "scored")
        & (proposals["candidate"] == ident.name)
        & proposals["model_identity_sha256"].str.startswith(ident.sha256_prefix)
        & (proposals["received_at"] >= WEEK_START)
        & (proposals["received_at"] < WEEK_END)
    ]
    outcomes = (
        pads.dataset(records / "outcomes", format="parquet", partitioning="hive").to_table().to_pandas()
    )
    if "source" in outcomes:
        outcomes = outcomes[outcomes["source"].fillna("") != "audit"]
    outcomes = outcomes[outcomes["outcome_at"] <= pd.Timestamp(AS_OF)]
    latest = outcomes.sort_values(["outcome_at", "outcome"]).groupby("decision_id")["outcome"].last()
    joined = p.set_index("decision_id").join(latest, how="inner")
    return joined["proposal"] == joined["outcome"]


def test_the_paired_agreement_difference_equals_numpy_and_statsmodels_on_the_records(
    generated_review: Review, records_dir: Path
) -> None:
    """Agreement difference, its interval and p against numpy and statsmodels on the records' rows.

    On the decisions both identities scored with an outcome, read from the records: the difference is
    numpy's mean of b - a, its interval mean ± z·std/√n, and the p-value statsmodels' exact McNemar.
    """
    for section in generated_review.sections:
        assert section.scorecards
        for card in section.scorecards:
            a = correct_per_decision(records_dir, section.decision_type, card.champion)
            b = correct_per_decision(records_dir, section.decision_type, card.challenger)
            both = a.index.intersection(b.index)
            xa, xb = a[both].to_numpy(int), b[both].to_numpy(int)
            diff = xb - xa
            assert card.paired == len(both) > 50
            got = card.rows[0].difference
            assert got is not None
            assert got.value == pytest.approx(diff.mean(), abs=1e-12)
            half = Z95 * diff.std() / math.sqrt(len(diff))
            assert (got.low, got.high) == pytest.approx((diff.mean() - half, diff.mean() + half), abs=1e-12)
            table = [
                [int(((xa == 1) & (xb == 1)).sum()), int(((xa == 1) & (xb == 0)).sum())],
                [int(((xa == 0) & (xb == 1)).sum()), int(((xa == 0) & (xb == 0)).sum())],
            ]
            assert got.p == pytest.approx(mcnemar(table, exact=True).pvalue, rel=1e-9)


def test_the_severe_error_difference_equals_statsmodels_on_the_agreement_mart(
    generated_review: Review, marts_dir: Path
) -> None:
    """Severe errors per labelled, challenger - champion, as statsmodels computes it.

    Newcombe's interval and the pooled z-test on the agreement mart's counts of the two identities.
    """
    agreement = load_marts(str(marts_dir), WEEK).of_week("agreement")
    for section in generated_review.sections:
        rows = agreement[agreement["decision_type"] == section.decision_type].set_index(CANDIDATE)
        for card in section.scorecards:
            xa, na = (int(rows.loc[card.champion, c]) for c in ("severe_errors", "labelled"))
            xb, nb = (int(rows.loc[card.challenger, c]) for c in ("severe_errors", "labelled"))
            row = next(r for r in card.rows if r.metric == "severe errors per labelled")
            low, high = confint_proportions_2indep(xb, nb, xa, na, method="newcomb", compare="diff")
            assert row.difference is not None
            assert row.difference.value == pytest.approx(xb / nb - xa / na, abs=1e-12)
            assert (row.difference.low, row.difference.high) == pytest.approx((low, high), abs=1e-9)
            assert row.difference.p == pytest.approx(proportions_ztest([xb, xa], [nb, na])[1], rel=1e-9)


@pytest.mark.parametrize(("xb", "nb", "xa", "na"), [(12, 400, 30, 410), (0, 50, 3, 60), (95, 100, 80, 100)])
def test_independent_differences_equal_statsmodels(xb: int, nb: int, xa: int, na: int) -> None:
    """Newcombe's hybrid score interval and the pooled z-test, as statsmodels computes them."""
    got = independent_difference(xb, nb, xa, na)
    low, high = confint_proportions_2indep(xb, nb, xa, na, method="newcomb", compare="diff")
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-9)
    assert got.p == pytest.approx(proportions_ztest([xb, xa], [nb, na])[1], rel=1e-9)


def test_paired_difference_equals_numpy_on_rows_built_from_the_counts() -> None:
    """Rows with 40 only-A and 70 only-B discordant decisions of 500: numpy's mean, std/√n, McNemar."""
    xa = np.array([1] * 40 + [0] * 70 + [1] * 300 + [0] * 90)
    xb = np.array([0] * 40 + [1] * 70 + [1] * 300 + [0] * 90)
    got = paired_difference(40, 70, 500)
    diff = xb - xa
    assert got.value == pytest.approx(diff.mean())
    assert got.high - got.value == pytest.approx(Z95 * diff.std() / math.sqrt(500))
    assert got.p == pytest.approx(mcnemar([[300, 40], [70, 90]], exact=True).pvalue)


def test_cost_per_accepted_difference_equals_a_numerical_delta_method() -> None:
    """Cost per accepted decision: the delta method against a numerical derivative.

    Cost per accepted = cost per scored / coverage: the delta-method variance equals numpy's numerical
    derivative of c / p times the binomial variance of the coverage, summed over the two candidates.
    """
    a, b = per_accepted(0.0004, 0.30, 1_000), per_accepted(0.0004, 0.45, 1_200)
    h = 1e-7
    var = 0.0
    for cost, p, n in ((0.0004, 0.30, 1_000), (0.0004, 0.45, 1_200)):
        slope = np.gradient(np.array([cost / (p - h), cost / p, cost / (p + h)]), h)[1]
        var += slope**2 * p * (1 - p) / n
    got = ratio_difference(b, a)
    assert got.value == pytest.approx(0.0004 / 0.45 - 0.0004 / 0.30)
    assert got.high - got.value == pytest.approx(Z95 * math.sqrt(var), rel=1e-5)


def test_holm_equals_statsmodels() -> None:
    """Holm's step-down adjustment, as statsmodels' multipletests computes it, in the input's order."""
    p = [0.01, 0.04, 0.03, 0.5, 0.001, 0.2]
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))


def test_the_review_states_holm_over_every_comparison(generated_review: Review) -> None:
    """The adjusted p-values are statsmodels' Holm over every raw p-value of every scorecard."""
    rows = [r for s in generated_review.sections for c in s.scorecards for r in c.rows]
    tested = [r for r in rows if r.difference is not None and r.difference.p is not None]
    assert generated_review.family == len(tested) > 2
    expected = multipletests([r.difference.p for r in tested], method="holm")[1]  # type: ignore[union-attr]
    assert [r.holm_p for r in tested] == pytest.approx(list(expected))


def test_the_recommendation_names_a_gate_both_fail_on_one_scorer() -> None:
    """The recommendation: carry the better forward, and say when the scorer, not the model, fails both.

    A challenger shown better (Holm p < 0.05) is carried forward; when both are rejected on the
    scorer's p99, it says the scorer sets it; with no difference shown, the champion is kept.
    """
    p99 = Check(P99_HARD, passed=False, detail="scorer p99 2258 ms, hard budget 2000 ms", kind="reject")
    rejected = Verdict(Decision.REJECT, ("p99",), (p99,), 0, binding=p99)
    lead = Row(
        "agreement with production (paired)", "21%", "48%", Difference(0.27, 0.22, 0.32, 1e-9), 100, "pts"
    )
    card = Scorecard("ticket_routing", "none k", "pmi k", {"none k": "none", "pmi k": "pmi"}, 500, (lead,))
    verdicts = {("ticket_routing", "none k"): rejected, ("ticket_routing", "pmi k"): rejected}
    shown = recommend(dataclasses.replace(card, rows=(dataclasses.replace(lead, holm_p=1e-6),)), verdicts)
    assert shown.startswith("Carry forward pmi over none: agreement with production +27.0 pts [+22.0, +32.0]")
    assert f"both fail '{P99_HARD}', which their one scorer sets, not the model" in shown
    unshown = recommend(dataclasses.replace(card, rows=(dataclasses.replace(lead, holm_p=0.2),)), verdicts)
    assert unshown.startswith("Keep none for now: no difference shown yet")


@pytest.fixture(scope="module")
def audited_review(tmp_path_factory: pytest.TempPathFactory) -> tuple[Review, pd.DataFrame]:
    """The trial-shaped review with production wrong on 10% and each week's audit sample answered."""
    records = tmp_path_factory.mktemp("audited-records")
    plan = dataclasses.replace(TRIAL, knobs=dataclasses.replace(TRIAL.knobs, production_error_rate=0.1))
    generate_audited(open_root(str(records)), plan, synth.AuditKnobs(seed=3))
    marts = load_marts(
        str(run_marts(records, tmp_path_factory.mktemp("audited-marts"), "2026-W44", TRIAL_WEEK)), TRIAL_WEEK
    )
    return review(marts, DEFAULTS), marts.of_week("correctness")


def test_audited_correctness_is_compared_where_audits_exist(
    audited_review: tuple[Review, pd.DataFrame],
) -> None:
    """With audits, the scorecard compares audited correctness, and the trust strip counts the audits.

    The difference is of the correctness mart's estimates, its se the two standard errors combined; the
    recommendation reads it.
    """
    result, mart = audited_review
    (section,) = result.sections
    (card,) = section.scorecards
    row = next(r for r in card.rows if r.metric == "audited correctness")
    est = mart.set_index(CANDIDATE)
    a, b = est.loc[card.champion], est.loc[card.challenger]
    assert row.difference is not None
    assert row.difference.value == pytest.approx(b["correctness"] - a["correctness"], abs=1e-12)
    se = math.hypot(a["correctness_se"], b["correctness_se"])
    assert row.difference.high - row.difference.value == pytest.approx(Z95 * se, rel=1e-6)
    assert "audited correctness" in card.recommendation or card.recommendation.startswith("Carry forward")
    audits = next(f for f in result.facts if f.label == "audits")
    assert audits.value == f"{int(est.loc['production', 'audited']):,} decisions"
