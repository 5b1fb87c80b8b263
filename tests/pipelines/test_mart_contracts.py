"""Every mart's grain, not-null keys and accepted values (jaffle-shop style unique / not_null tests)."""

from __future__ import annotations

import pytest

from pipelines.sqlmodels import mart_names
from tests.pipelines.harness import GRAIN, Computed, mart

AUDITED = frozenset({"audit_strata", "correctness", "audited_difference", "auditor_agreement",
                     "auditor_disagreements"})
"""Marts with rows only where audits exist: their grain is checked on audited records
(``tests/pipelines/marts/test_correctness.py``)."""
TWO_CANDIDATES = frozenset({"identity_changes", "paired"})
"""Marts whose rows need two candidates or an identity change: checked on the A/B records."""
ACCEPTED = {
    ("drift", "confidence_psi_band"): {"stable", "moderate", "significant", None},
    ("drift", "mix_psi_band"): {"stable", "moderate", "significant", None},
    ("funnel_reasons", "status"): {"dropped", "timeout", "error", "invalid_response", "lost"},
}
SHARES = ("label_rate", "agreement", "agreement_a", "agreement_b", "kappa", "coverage", "selective_risk",
          "precision", "recall", "ece", "mce")


def test_every_mart_has_a_declared_grain() -> None:
    """The table below covers every mart the runner builds."""
    assert set(GRAIN) == set(mart_names())


@pytest.mark.parametrize("name", sorted(set(GRAIN) - AUDITED))
def test_mart_grain_is_unique_and_keys_are_not_null(
    computed: Computed, ab_computed: Computed, name: str
) -> None:
    """One row per grain key, no null key, accepted values only, and shares within [-1, 1] or [0, 1].

    On the one-candidate records, and on the two-candidate ones for the marts that need them.
    """
    rows = mart(ab_computed if name in TWO_CANDIDATES else computed, name)
    assert rows, name
    keys = [tuple(row[k] for k in GRAIN[name]) for row in rows]
    assert len(keys) == len(set(keys)), name
    assert all(v is not None for key in keys for v in key), name
    for (mart_name, column), allowed in ACCEPTED.items():
        if mart_name == name:
            assert {row[column] for row in rows} <= allowed
    for column in SHARES:
        values = [row[column] for row in rows if column in row and row[column] is not None]
        low = -1.0 if column == "kappa" else 0.0
        assert all(low <= float(v) <= 1.0 for v in values), (name, column)
