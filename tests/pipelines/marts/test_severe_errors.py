"""The `severe_errors` mart: confident wrong proposals on the options the catalog marks high-consequence."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pipelines.settings import PipelineSettings, high_consequence_options
from tests.pipelines.harness import Computed, mart, run_window, write_catalog

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pipelines.reference import Records


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
        "ticket_routing": ["refund"],
        "priority": ["urgent"],
    }
    both = PipelineSettings(catalog=catalog, high_consequence={"priority": [], "other": ["x"]})
    assert high_consequence_options(both) == {"ticket_routing": ["refund"], "other": ["x"]}
    assert high_consequence_options(PipelineSettings(high_consequence={"priority": ["high"]})) == {
        "priority": ["high"]
    }
