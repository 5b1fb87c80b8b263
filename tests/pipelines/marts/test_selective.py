"""The `selective` mart: coverage and selective risk at the thresholds, and invariants."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import Records, reference_accepted, scope


def test_selective_invariants(computed: Computed) -> None:
    """Accepted + routed = scored.

    Accepted labelled = the thresholds' accepted counts; where anything is accepted its precision reaches the
    target (each option's accepted set does).
    """
    thresholds = pd.DataFrame(mart(computed, "thresholds"))
    for row in mart(computed, "selective"):
        assert row["accepted"] + row["routed_to_review"] == row["scored"]
        if row["model_key"] == "*":
            continue
        mine = thresholds[
            (thresholds.decision_type == row["decision_type"])
            & (thresholds.week == row["week"])
            & (thresholds.model_key == row["model_key"])
        ]
        assert row["accepted_labelled"] == mine.accepted.fillna(0).sum()
        if row["accepted_labelled"]:
            assert row["selective_risk"] <= 1 - computed.settings.precision_target


def test_selective_matches_an_independent_threshold_search(computed: Computed, records: Records) -> None:
    """Every row's counts, coverage and selective risk, recomputed from a numpy/statsmodels threshold search.

    The accepted decisions are found without the `thresholds` mart; '*' rows sum their models.
    """
    settings = computed.settings
    scored = records.decisions[records.decisions.status == "scored"].copy()
    scored["accepted"] = reference_accepted(records, settings.alpha, settings.precision_target)
    rows = mart(computed, "selective")
    assert sum(bool(r["accepted"]) for r in rows) >= 2  # not vacuous: some rows accept
    for row in rows:
        ref = scope(scored, row["decision_type"], row["week"], row["model_key"])
        labelled = ref[ref.outcome.notna()]
        taken = labelled[labelled.accepted]
        correct = int((taken.proposal == taken.outcome).sum())
        assert (row["scored"], row["accepted"], row["routed_to_review"]) == (
            len(ref), int(ref.accepted.sum()), int((~ref.accepted).sum())), row
        assert (row["labelled"], row["accepted_labelled"], row["accepted_correct"]) == (
            len(labelled), len(taken), correct), row
        assert row["coverage"] == pytest.approx(len(taken) / len(labelled), rel=1e-12)
        if len(taken):
            assert row["selective_risk"] == pytest.approx(1 - correct / len(taken), rel=1e-12)
        else:
            assert row["selective_risk"] is None
