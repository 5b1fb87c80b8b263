"""Marts keyed by candidate and model identity: `identities`, `identity_changes`, the quality marts."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from typing import TYPE_CHECKING

import pytest
from sklearn.metrics import accuracy_score

from pipelines import synth
from pipelines.generate import Plan, generate
from pipelines.storage import open_root
from tests.pipelines.harness import AS_OF, Computed, mart, run_window
from tests.pipelines.reference import Records, load_records, scope

if TYPE_CHECKING:
    from pathlib import Path

QUALITY_MARTS = (
    "agreement", "confusion", "per_option", "calibration", "reliability", "classwise_calibration", "drift",
    "thresholds", "risk_coverage", "selective", "severe_errors",
)
CHANGE_WEEK = "2026-W45"


def test_every_quality_mart_separates_candidates_and_identities(
    ab_computed: Computed, ab_records: Records
) -> None:
    """Each quality mart has one group per candidate and model identity the records hold, in every week.

    In the change week the default candidate shows its f16 and q8_0 identities apart, beside the challenger's.
    """
    labelled = ab_records.labelled
    for week in ("2026-W44", CHANGE_WEEK):
        expected = set(labelled[labelled.week == week].model_key)
        for name in QUALITY_MARTS:
            found = {r["model_key"] for r in mart(ab_computed, name) if r.get("week", week) == week} - {"*"}
            if name == "severe_errors":
                assert found <= expected, name
                continue
            assert found == expected, (name, week)
    week_keys = set(labelled[labelled.week == CHANGE_WEEK].model_key)
    assert {k.split(" ")[0] for k in week_keys} == {"default", "challenger"}
    defaults = labelled[(labelled.week == CHANGE_WEEK) & (labelled.candidate == "default")]
    assert defaults.model_identity.str.contains('"kv_type":"q8_0"').any()
    assert defaults.model_identity.str.contains('"kv_type":"f16"').any()
    assert len(week_keys) == 2 * len(set(labelled[labelled.week == "2026-W44"].model_key)) - 2


def test_agreement_per_identity_matches_sklearn(ab_computed: Computed, ab_records: Records) -> None:
    """Per candidate and identity, labelled count and agreement equal scikit-learn's on those rows."""
    for row in mart(ab_computed, "agreement"):
        if row["model_key"] == "*":
            continue
        ref = scope(ab_records.labelled, row["decision_type"], row["week"], row["model_key"])
        assert row["labelled"] == len(ref) > 0
        assert row["agreement"] == pytest.approx(accuracy_score(ref.outcome, ref.proposal), rel=1e-12)


def test_identities_name_each_key_and_flag_the_change(ab_computed: Computed, ab_records: Records) -> None:
    """`identities` gives each key its candidate, full sha256, first decision and scored count.

    In the change week the default candidate has 8 identities per type (2 models x 2 devices, before and
    after), and `candidate_identities` says so.
    """
    scored = ab_records.decisions[ab_records.decisions.status == "scored"]
    for row in mart(ab_computed, "identities"):
        ref = scored[(scored.decision_type == row["decision_type"]) & (scored.week == row["week"])
                     & (scored.model_key == row["model_key"])]
        assert row["scored"] == len(ref) > 0
        assert set(ref.model_identity_sha256) == {row["model_identity_sha256"]}
        assert set(ref.candidate) == {row["candidate"]}
        assert row["first_seen"] == ref.received_at.min().to_pydatetime()
        per_week = scored[(scored.decision_type == row["decision_type"]) & (scored.week == row["week"])
                          & (scored.candidate == row["candidate"])]
        assert row["candidate_identities"] == per_week.model_identity_sha256.nunique()
    changed = [r for r in mart(ab_computed, "identities")
               if r["candidate"] == "default" and r["week"] == CHANGE_WEEK]
    assert {r["candidate_identities"] for r in changed} == {8}


def test_identity_changes_name_the_field_and_when(ab_computed: Computed, ab_records: Records) -> None:
    """One change per decision type, fleet and model of the default candidate: `model.kv_type` f16 -> q8_0.

    At the first decision scored under the new identity (Thursday of W45 or just after); none for the
    challenger.
    """
    rows = mart(ab_computed, "identity_changes")
    assert rows
    assert {(r["candidate"], r["field"], r["before"], r["after"], r["week"]) for r in rows} == {
        ("default", "model.kv_type", '"f16"', '"q8_0"', CHANGE_WEEK)
    }
    scored = ab_records.decisions[ab_records.decisions.status == "scored"]
    thursday = dt.datetime(2026, 11, 5, tzinfo=dt.UTC)
    for row in rows:
        new = scored[(scored.decision_type == row["decision_type"])
                     & (scored.model_identity_sha256 == row["to_identity_sha256"])]
        old = scored[(scored.decision_type == row["decision_type"])
                     & (scored.model_identity_sha256 == row["from_identity_sha256"])]
        assert row["changed_at"] == new.received_at.min().to_pydatetime() >= thursday
        assert row["previous_last_seen"] == old.received_at.max().to_pydatetime() < thursday
        assert set(new.device) == set(old.device)
    assert len(rows) == 2 * 2 * 2  # types x devices x models


@pytest.mark.parametrize(("field", "path", "value"), [
    ("kv_type", "model.kv_type", "q8_0"), ("normalization", "normalization", "pmi"),
])
def test_an_identity_differing_in_one_field_gives_two_groups(
    tmp_path: Path, field: str, path: str, value: str
) -> None:
    """One model on one fleet whose KV type (or normalization) alone changes mid-week.

    Two groups in every quality mart, and one `identity_changes` row per type naming that field.
    """
    knobs = synth.Knobs(fleets=(replace(synth.DEFAULT_FLEETS[0], share=1.0),),
                        models=(replace(synth.DEFAULT_MODELS[0], share=1.0),),
                        identity_change=synth.IdentityChange(week=0, field=field, value=value))
    plan = Plan(decisions=3_000, weeks=1, drift_week=None, seed=5, knobs=knobs)
    generate(open_root(str(tmp_path / "r")), plan)
    run = run_window(tmp_path / "r", None, first="2026-W44", last="2026-W44")
    try:
        records = load_records(tmp_path / "r", AS_OF)
        assert records.labelled.model_key.nunique() == 2
        for name in ("agreement", "calibration", "thresholds", "confusion"):
            keys = {r["model_key"] for r in mart(run, name)} - {"*"}
            assert keys == set(records.labelled.model_key), name
        changes = mart(run, "identity_changes")
        assert [(r["field"], r["after"]) for r in changes] == [(path, f'"{value}"')] * 2  # one per type
    finally:
        run.con.close()
