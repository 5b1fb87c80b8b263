"""The `drift_mix` mart: proposal and outcome mix PSI against numpy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import WEEKS, Records, current_rows, psi, reference_rows

if TYPE_CHECKING:
    import pandas as pd


def mix_psi(current: pd.Series, reference: pd.Series) -> float:
    """PSI of two categorical mixes over the union of their categories."""
    categories = sorted(set(current) | set(reference))
    a = current.value_counts(normalize=True).reindex(categories, fill_value=0).to_numpy()
    e = reference.value_counts(normalize=True).reindex(categories, fill_value=0).to_numpy()
    return psi(a, e)


def test_mix_psi_matches_numpy(computed: Computed, records: Records) -> None:
    """Proposal-mix PSI (scored) and outcome-mix PSI (labelled) equal numpy's over the same windows."""
    scored = records.decisions[records.decisions.status == "scored"]
    for row in mart(computed, "drift"):
        key = (row["decision_type"], row["week"], row["model_key"])
        if row["week"] == WEEKS[0]:
            assert row["proposal_mix_psi"] is None
            continue
        assert row["proposal_mix_psi"] == pytest.approx(
            mix_psi(current_rows(scored, *key).proposal, reference_rows(scored, *key).proposal), rel=1e-9
        )
        assert row["outcome_mix_psi"] == pytest.approx(
            mix_psi(
                current_rows(records.labelled, *key).outcome, reference_rows(records.labelled, *key).outcome
            ),
            rel=1e-9,
        )


def test_drift_mix_invariants(computed: Computed) -> None:
    """Both mix PSIs are non-negative; the first week has no reference, so no row."""
    rows = mart(computed, "drift_mix")
    first = min(row["week_start"] for row in mart(computed, "funnel"))
    assert rows
    assert all(row["week_start"] > first for row in rows)
    assert all(row["proposal_mix_psi"] >= 0 and row["outcome_mix_psi"] >= 0 for row in rows)
