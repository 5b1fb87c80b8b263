"""Agreement marts (confusion, per_option, agreement, severe_errors) against scikit-learn, with invariants."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    precision_recall_fscore_support,
)

from pipelines.settings import PipelineSettings, high_consequence_options
from pipelines.synth import DEFAULT_TYPES
from tests.pipelines.conftest import Computed, mart, run_window
from tests.pipelines.reference import Records, scope

if TYPE_CHECKING:
    from pathlib import Path


def test_accuracy_kappa_and_baseline_match_sklearn(computed: Computed, records: Records) -> None:
    """Accuracy and Cohen's kappa equal scikit-learn's; the baseline is the most frequent outcome's share."""
    rows = mart(computed, "agreement")
    assert len(rows) == 30  # 2 types x 5 weeks x (2 models + '*')
    for row in rows:
        ref = scope(records.labelled, row["decision_type"], row["week"], row["model_key"])
        assert row["labelled"] == len(ref)
        assert row["accuracy"] == pytest.approx(accuracy_score(ref.outcome, ref.proposal), rel=1e-12)
        assert row["kappa"] == pytest.approx(cohen_kappa_score(ref.outcome, ref.proposal), rel=1e-9)
        assert row["baseline_accuracy"] == pytest.approx(
            ref.outcome.value_counts(normalize=True).max(), rel=1e-12
        )
        assert row["accuracy"] > row["baseline_accuracy"]


def test_confusion_matrix_matches_sklearn_and_sums_to_labelled(computed: Computed, records: Records) -> None:
    """Confusion cells equal sklearn's confusion_matrix and sum to the labelled count of the agreement row."""
    cells = pd.DataFrame(mart(computed, "confusion"))
    for row in mart(computed, "agreement"):
        key = (row["decision_type"], row["week"], row["model_key"])
        ref = scope(records.labelled, *key)
        labels = sorted(set(ref.outcome) | set(ref.proposal))
        mine = cells[(cells.decision_type == key[0]) & (cells.week == key[1]) & (cells.model_key == key[2])]
        assert mine.decisions.sum() == row["labelled"]
        got = (
            mine.pivot_table(index="outcome", columns="proposal", values="decisions", aggfunc="sum")
            .reindex(index=labels, columns=labels, fill_value=0)
            .fillna(0)
            .to_numpy()
        )
        np.testing.assert_array_equal(got, confusion_matrix(ref.outcome, ref.proposal, labels=labels))


def test_per_option_precision_recall_match_sklearn(computed: Computed, records: Records) -> None:
    """Per-option precision and recall equal precision_recall_fscore_support.

    Baseline precision = prevalence.
    """
    options = pd.DataFrame(mart(computed, "per_option"))
    for (decision_type, week, model_key), mine in options.groupby(["decision_type", "week", "model_key"]):
        ref = scope(records.labelled, decision_type, week, model_key)
        labels = sorted(mine.option_id)
        precision, recall, _, support = precision_recall_fscore_support(
            ref.outcome, ref.proposal, labels=labels, zero_division=np.nan
        )
        got = mine.set_index("option_id").loc[labels]
        np.testing.assert_allclose(got.precision.astype(float), precision, rtol=1e-12)
        np.testing.assert_allclose(got.recall.astype(float), recall, rtol=1e-12)
        np.testing.assert_array_equal(got.support, support)
        np.testing.assert_allclose(got.baseline_precision, support / len(ref), rtol=1e-12)


def test_per_model_rows_add_up_to_the_all_models_row(computed: Computed) -> None:
    """Confusion cells of the two models sum to the '*' cells."""
    cells = pd.DataFrame(mart(computed, "confusion"))
    keys = ["decision_type", "week", "outcome", "proposal"]
    per_model = cells[cells.model_key != "*"].groupby(keys).decisions.sum()
    everyone = cells[cells.model_key == "*"].set_index(keys).decisions
    pd.testing.assert_series_equal(per_model.sort_index(), everyone.sort_index(), check_names=False)


def test_severe_errors_are_confident_wrong_high_consequence_proposals(
    computed: Computed, records: Records
) -> None:
    """Exactly the labelled decisions proposing a catalog high-consequence option at >= 0.8 and wrong.

    Counted in agreement.
    """
    high = computed.settings.high_consequence
    lab = records.labelled
    expected = lab[
        (lab.proposal != lab.outcome)
        & (lab.proposal_probability >= computed.settings.severe_confidence)
        & np.array([p in high.get(t, []) for t, p in zip(lab.decision_type, lab.proposal, strict=True)])
    ]
    got = mart(computed, "severe_errors")
    assert sorted(r["decision_id"] for r in got) == sorted(expected.decision_id)
    assert len(got) > 0
    total = sum(r["severe_errors"] for r in mart(computed, "agreement") if r["model_key"] == "*")
    assert total == len(expected)


def write_catalog(path: Path, marked: dict[str, list[str]]) -> Path:
    """A sidecar catalog of the generator's decision types, with ``marked`` options high-consequence."""
    lines = ["version: 1", "decision_types:"]
    for spec in DEFAULT_TYPES:
        lines += [f"  {spec.name}:", "    question: Which one?", "    options:"]
        lines += [
            f"      - {{id: {o}, text: {o}, high_consequence: {str(o in marked.get(spec.name, [])).lower()}}}"
            for o in spec.options
        ]
        lines += ["    scorer: {backend: local}", '    experiment_ends_at: "2027-03-31T00:00:00Z"']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_severe_errors_follow_the_catalogs_high_consequence_marks(records_root: Path, tmp_path: Path) -> None:
    """A catalog marking `sales` gives severe_errors rows for `sales` alone; unmarked, it gives none."""
    marked = write_catalog(tmp_path / "marked.yaml", {"ticket_routing": ["sales"]})
    week = {"first": "2026-W48", "last": "2026-W48"}
    run = run_window(records_root, None, settings=PipelineSettings(catalog=marked), **week)
    rows = run.con.sql("select decision_type, proposal, count(*) from severe_errors group by all").fetchall()
    assert [(t, p) for t, p, _ in rows] == [("ticket_routing", "sales")]
    assert rows[0][2] > 0
    plain = write_catalog(tmp_path / "plain.yaml", {})
    run = run_window(records_root, None, settings=PipelineSettings(catalog=plain), **week)
    assert run.con.sql("select count(*) from severe_errors").fetchall() == [(0,)]


def test_pipelines_high_consequence_replaces_the_catalogs_types_and_adds_others(tmp_path: Path) -> None:
    """Without a catalog the setting (or its default) is the list.

    With one, each type the setting names replaces the catalog's marks ([] unmarks) and new types are added.
    """
    catalog = write_catalog(tmp_path / "c.yaml", {"ticket_routing": ["refund"], "priority": ["urgent"]})
    assert high_consequence_options(PipelineSettings(catalog=catalog)) == {
        "ticket_routing": ["refund"], "priority": ["urgent"]}
    both = PipelineSettings(catalog=catalog, high_consequence={"priority": [], "other": ["x"]})
    assert high_consequence_options(both) == {"ticket_routing": ["refund"], "other": ["x"]}
    assert high_consequence_options(PipelineSettings(high_consequence={"priority": ["high"]})) == {
        "priority": ["high"]}
