"""The `correctness` marts: audits never change agreement; estimates equal numpy, samplics and sklearn.

One small generated trial (two candidates, production wrong on 10% of decisions) is run twice through the
pipelines: as generated, and with each week's audit sample drawn and answered by a simulated auditor
(5% wrong answers, a third of the sample double-audited), plus one changed answer and one "none of
these". Every mart that does not read audits must be byte-for-byte the same file in both runs.
"""

from __future__ import annotations

import datetime as dt
import shutil
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import cohen_kappa_score  # type: ignore[import-untyped]

from contracts.records import NONE_OF_THESE, OUTCOMES, RECORD_VERSION, SOURCE_AUDIT
from dashboards.intervals import wilson_cc
from dashboards.verdict import audited
from pipelines import synth
from pipelines.generate import Plan, generate
from pipelines.generate_audits import audit
from pipelines.settings import PipelineSettings
from pipelines.sqlmodels import mart_names
from pipelines.storage import open_root
from tests.pipelines.correctness_reference import _wilson, paired_difference, stratified_mean, units
from tests.pipelines.harness import GRAIN, run_window

if TYPE_CHECKING:
    from pathlib import Path

PLAN = Plan(decisions=12_000, weeks=2, drift_week=None, seed=21,
            knobs=synth.Knobs(challenger=synth.CHALLENGER, production_error_rate=0.1))
FIRST, LAST = "2026-W44", "2026-W45"
AUDITOR = synth.AuditKnobs(error_rate=0.05, disagreements=150, agreement_rate=0.05, overlap=0.3, seed=3)
READS_AUDITS = ("audit_strata", "correctness", "audited_difference", "auditor_agreement",
                "auditor_disagreements")
BEFORE_AUDITS = ("latency", "funnel", "funnel_reasons", "confusion", "per_option", "severe_errors",
                 "agreement", "reliability", "ece_bootstrap", "classwise_calibration", "calibration",
                 "drift_confidence", "drift_mix", "drift", "thresholds", "risk_coverage", "selective",
                 "identities", "identity_changes", "paired", "cost")
"""The marts that existed before records v1.2 (audits): none of them may change when audits arrive."""


@dataclass(frozen=True)
class Trial:
    """The records with audits, and both runs' output folders."""

    audited: Path
    plain_out: Path
    audited_out: Path


def _answer_again(root: Path) -> None:
    """auditor-1 answers two sampled decisions of W45 again, later: one with another option, one "none"."""
    path = root / "audit_samples" / f"week={LAST}" / "decision_type=ticket_routing" / "part-0.parquet"
    sample = pq.read_table(path).to_pylist()[:2]
    at = dt.datetime(2026, 11, 20, tzinfo=dt.UTC)
    rows = [{"record_version": RECORD_VERSION, "decision_id": r["decision_id"], "outcome": answer,
             "decision_type": "ticket_routing", "outcome_at": at, "source": SOURCE_AUDIT, "writer_id": "test",
             "in_options": answer != NONE_OF_THESE, "auditor": "auditor-1", "audit_sample": r["sample_id"]}
            for r, answer in zip(sample, ["billing", NONE_OF_THESE], strict=True)]
    folder = root / "outcomes" / "decision_type=ticket_routing" / "date=2026-11-20"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=OUTCOMES), folder / "test-again.parquet")


@pytest.fixture(scope="module")
def trial(tmp_path_factory: pytest.TempPathFactory) -> Trial:
    """Generate once; copy; audit the copy; run the pipelines over both."""
    plain = tmp_path_factory.mktemp("plain")
    truths: list[np.ndarray] = []
    generate(open_root(str(plain)), PLAN, truths)
    audited = tmp_path_factory.mktemp("audited") / "records"
    shutil.copytree(plain, audited)
    audit(open_root(str(audited)), PLAN, AUDITOR, np.concatenate(truths))
    _answer_again(audited)
    outs = tmp_path_factory.mktemp("plain_out"), tmp_path_factory.mktemp("audited_out")
    settings = PipelineSettings(threads=1)  # one thread: float sums in one order, so files can be compared
    for root, out in zip((plain, audited), outs, strict=True):
        run_window(root, out, settings=settings, first=FIRST, last=LAST).con.close()
    return Trial(audited, *outs)


def _mart(out: Path, name: str) -> list[dict[str, Any]]:
    return [row for path in sorted((out / name).rglob("*.parquet"))
            for row in pq.read_table(path).to_pylist()]


def test_audits_leave_every_other_mart_byte_for_byte_the_same(trial: Trial) -> None:
    """Every mart that existed before audits is the same file, byte for byte, with and without audits.

    The audit-reading marts are empty without audits and filled with them.
    """
    assert set(BEFORE_AUDITS) | set(READS_AUDITS) <= set(mart_names())
    for name in (*BEFORE_AUDITS, *READS_AUDITS):
        plain = sorted(p.relative_to(trial.plain_out) for p in (trial.plain_out / name).rglob("*.parquet"))
        audited = sorted(p.relative_to(trial.audited_out)
                         for p in (trial.audited_out / name).rglob("*.parquet"))
        assert plain == audited, name
        assert len(plain) == 2, name  # one file per week
        if name in READS_AUDITS:
            assert not _mart(trial.plain_out, name)
            assert _mart(trial.audited_out, name)
            continue
        for path in plain:
            assert (trial.plain_out / path).read_bytes() == (trial.audited_out / path).read_bytes(), path


@pytest.mark.parametrize(("week", "decision_type"), [(FIRST, "priority"), (LAST, "ticket_routing")])
def test_correctness_equals_the_numpy_reference_on_the_same_rows(trial: Trial, week: str,
                                                                  decision_type: str) -> None:
    """Every model's and production's estimate, standard error and interval equal numpy's on raw rows.

    The units are rebuilt from the records and the sample file alone (latest answer per auditor, mean over
    a decision's auditors); the strata sizes in the sample equal the labelled decisions recounted; the
    paired shares equal numpy's too.
    """
    ref = units(trial.audited, week, decision_type)
    assert ref.population == ref.sizes
    rows = [r for r in _mart(trial.audited_out, "correctness")
            if r["week"] == week and r["decision_type"] == decision_type]
    by_key = {r["model_key"]: r for r in rows}
    expected: dict[str, tuple[np.ndarray, np.ndarray, tuple[str, str] | None]] = {
        "production": (np.ones(ref.production.size), ref.production, None)}
    for (candidate, sha), (x, y) in ref.models.items():
        (key,) = [k for k in by_key if k.startswith(f"{candidate} ") and k.endswith(f"#{sha[:12]}")]
        expected[key] = (x, y, (candidate, sha))
    assert sorted(expected) == sorted(by_key)
    for key, (x, y, _) in expected.items():
        row, est = by_key[key], stratified_mean(y, x, ref.strata, ref.sizes)
        assert row["audited"] == int(x.sum())
        assert row["decisions"] == sum(ref.sizes.values())
        assert row["correctness"] == pytest.approx(est.value, rel=1e-9)
        assert row["correctness_se"] == pytest.approx(est.se, rel=1e-9)
        assert row["correctness_low"] == pytest.approx(est.low, rel=1e-9)
        assert row["correctness_high"] == pytest.approx(est.high, rel=1e-9)
    right_wrong = 0
    for key, (x, _, model) in expected.items():
        if model is None:
            continue
        row = by_key[key]
        for column, share in zip(("right_vs_wrong", "wrong_vs_right"), ref.paired[model][:2], strict=True):
            est = stratified_mean(share, x, ref.strata, ref.sizes)
            assert row[column] == pytest.approx(est.value, rel=1e-9, abs=1e-12)
        right_wrong += row["right_vs_wrong"] > 0
    assert right_wrong > 0  # with production 10% wrong, candidates are sometimes right where it is wrong


@pytest.mark.parametrize(("week", "decision_type"), [(FIRST, "priority"), (LAST, "ticket_routing")])
def test_audited_difference_equals_the_numpy_reference(trial: Trial, week: str, decision_type: str) -> None:
    """The paired difference and both sides' correctness over the candidate's decisions equal numpy's."""
    ref = units(trial.audited, week, decision_type)
    rows = {r["model_key"]: r for r in _mart(trial.audited_out, "audited_difference")
            if r["week"] == week and r["decision_type"] == decision_type}
    assert len(rows) == len(ref.models) >= 2  # every candidate identity, never production
    for (candidate, sha), (x, y) in ref.models.items():
        (key,) = [k for k in rows if k.startswith(f"{candidate} ") and k.endswith(f"#{sha[:12]}")]
        row = rows[key]
        diff = paired_difference(*ref.paired[candidate, sha], x, ref.strata, ref.sizes)
        strata = pd.DataFrame([r for r in _mart(trial.audited_out, "audit_strata")
                               if r["week"] == week and r["decision_type"] == decision_type
                               and r["model_key"] == key])
        judged = audited.paired(strata, 1.959963984540054)  # the review's own computation, the same week
        expected = (diff.value, diff.low, diff.high)
        assert (judged.diff, judged.low, judged.high) == pytest.approx(expected, rel=1e-9)
        mine, theirs = stratified_mean(y, x, ref.strata, ref.sizes), stratified_mean(
            ref.production, x, ref.strata, ref.sizes)
        assert row["audited"] == int(x.sum())
        assert row["diff"] == pytest.approx(mine.value - theirs.value, abs=1e-12)
        for column, value in (("diff", diff.value), ("diff_low", diff.low), ("diff_high", diff.high),
                              ("candidate_correctness", mine.value), ("candidate_low", mine.low),
                              ("candidate_high", mine.high), ("production_correctness", theirs.value),
                              ("production_low", theirs.low), ("production_high", theirs.high)):
            assert row[column] == pytest.approx(value, rel=1e-9, abs=1e-12), column
        assert -1 <= row["rho"] < 0  # one right where the other is wrong counts on one side only
        assert row["diff_low"] < row["diff"] < row["diff_high"]


@pytest.mark.parametrize(("successes", "n", "low", "high"), [
    (81, 263, 0.2535, 0.3682), (15, 148, 0.0598, 0.1644), (0, 20, 0.0, 0.2005), (1, 29, 0.0018, 0.1963)])
def test_the_corrected_wilson_interval_matches_newcombes_worked_examples(
        successes: int, n: int, low: float, high: float) -> None:
    """Newcombe (1998, Stat Med 17: 857-872), method 4's examples: the reference and the review agree."""
    z = 1.959963984540054
    assert _wilson(successes, n, z) == pytest.approx((low, high), abs=5e-5)
    judged = wilson_cc(successes / n, n, z)
    assert (float(judged[0]), float(judged[1])) == pytest.approx((low, high), abs=5e-5)


def test_correctness_equals_samplics_stratified_ratio(trial: Trial) -> None:
    """The samplics package's stratified ratio (weighted rights over weighted scored) gives each estimate.

    (Its standard error is the finite population's; the mart's targets the process, checked against numpy.)
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # samplics warns on import that it is archived
        from samplics.estimation import TaylorEstimator  # noqa: PLC0415
        from samplics.utils.types import PopParam  # noqa: PLC0415

    ref = units(trial.audited, LAST, "ticket_routing")
    rows = {r["model_key"]: r for r in _mart(trial.audited_out, "correctness")
            if r["week"] == LAST and r["decision_type"] == "ticket_routing"}
    m = {s: int((ref.strata == s).sum()) for s in ref.sizes}
    weights = np.array([ref.sizes[s] / m[s] for s in ref.strata])
    fpc = {s: 1 - m[s] / ref.sizes[s] for s in sorted(ref.sizes)}
    checked = 0
    cases: dict[str, tuple[np.ndarray, np.ndarray]] = {
        "production": (np.ones(ref.production.size), ref.production)}
    for (candidate, sha), (x, y) in ref.models.items():
        if x.sum() > len(ref.sizes):  # samplics needs two units a stratum
            (name,) = [k for k in rows if k.startswith(f"{candidate} ") and k.endswith(f"#{sha[:12]}")]
            cases[name] = (x, y)
    for name, (x, y) in cases.items():
        est = TaylorEstimator(PopParam.ratio)
        est.estimate(y=y, x=x, samp_weight=weights, stratum=ref.strata, fpc=fpc)
        assert rows[name]["correctness"] == pytest.approx(float(est.point_est), rel=1e-9)
        checked += 1
    assert checked >= 3


def test_auditor_agreement_equals_scikit_learn_and_lists_the_disagreements(trial: Trial) -> None:
    """Cohen's kappa of the double audits equals scikit-learn's; every pair that differs is listed once."""
    rows = [r for r in _mart(trial.audited_out, "auditor_agreement") if r["week"] == LAST]
    listed = _mart(trial.audited_out, "auditor_disagreements")
    outcomes = [r for p in sorted((trial.audited / "outcomes").rglob("*.parquet"))
                for r in pq.read_table(p).to_pylist() if r["source"] == SOURCE_AUDIT]
    for row in rows:
        latest: dict[tuple[str, str], tuple[object, str]] = {}
        for o in outcomes:
            if o["audit_sample"] == row["sample_id"]:
                key = (o["decision_id"], o["auditor"])
                answer = (o["outcome_at"], o["outcome"])
                latest[key] = max(latest.get(key, answer), answer)
        pairs = sorted((d, latest[d, "auditor-1"][1], latest[d, "auditor-2"][1])
                       for d, a in latest if a == "auditor-2")
        assert row["double_audited"] == len(pairs) > 10
        first, second = [p[1] for p in pairs], [p[2] for p in pairs]
        assert row["kappa"] == pytest.approx(cohen_kappa_score(first, second), rel=1e-9)
        differ = sorted(p[0] for p in pairs if p[1] != p[2])
        assert differ  # 5% wrong answers on each side
        assert sorted(r["decision_id"] for r in listed if r["sample_id"] == row["sample_id"]) == differ


def test_the_audit_marts_keep_their_grain_and_shares(trial: Trial) -> None:
    """One row per grain key (``harness.GRAIN``), no null key, every share and bound in [0, 1].

    Kappa lies in [-1, 1]; low <= estimate <= high wherever there is an estimate.
    """
    for name in READS_AUDITS:
        rows = _mart(trial.audited_out, name)
        keys = [tuple(r[k] for k in GRAIN[name]) for r in rows]
        assert rows, name
        assert len(set(keys)) == len(keys), name
        assert all(v is not None for key in keys for v in key), name
    for row in _mart(trial.audited_out, "correctness"):
        for measure in ("correctness", "right_vs_wrong", "wrong_vs_right"):
            if row[measure] is not None:
                assert 0 <= row[f"{measure}_low"] <= row[measure] <= row[f"{measure}_high"] <= 1, row
    assert all(-1 <= r["kappa"] <= 1 for r in _mart(trial.audited_out, "auditor_agreement"))


def test_label_delay_counts_no_audit(trial: Trial) -> None:
    """Audits are not outcomes production waits for: ``label_delay`` is the same file with and without them.

    Both runs have each week's delays of production's outcomes (source ``api``), and no ``audit`` row.
    """
    for week in (FIRST, LAST):
        path = f"label_delay/week={week}/part-0.parquet"
        assert (trial.plain_out / path).read_bytes() == (trial.audited_out / path).read_bytes(), week
    rows = _mart(trial.audited_out, "label_delay")
    assert {r["source"] for r in rows} == {"api"}
    assert {r["week"] for r in rows} == {FIRST, LAST}
