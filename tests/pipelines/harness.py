"""Plain helpers of the pipelines tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipelines import runner, synth
from pipelines.generate import Plan
from pipelines.prices import load_prices
from pipelines.settings import PipelineSettings
from pipelines.sqlmodels import load_models
from pipelines.storage import open_root
from pipelines.weeks import window

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    import duckdb

PLAN = Plan(decisions=40_000, weeks=5, drift_week=4, seed=11)


FIRST, LAST = "2026-W44", "2026-W48"


AB_PLAN = Plan(
    decisions=16_000, weeks=2, drift_week=None, seed=13,
    knobs=synth.Knobs(challenger=synth.CHALLENGER, identity_change=synth.IdentityChange(week=1)),
)
"""Two candidates (``default`` and ``challenger``) on the same decisions; ``default``'s KV type changes
from f16 to q8_0 on Thursday of the second week (2026-W45)."""


AB_FIRST, AB_LAST = "2026-W44", "2026-W45"


AS_OF = dt.datetime(2027, 1, 31, tzinfo=dt.UTC)
"""Late enough that every generated outcome is known."""


@dataclass
class Computed:
    """One run of every model: the live connection, the output folder and what the run reported."""

    con: duckdb.DuckDBPyConnection
    out: Path
    result: runner.RunResult
    settings: PipelineSettings


def run_window(
    root: Path | str,
    out: Path | None,
    *,
    settings: PipelineSettings | None = None,
    as_of: dt.datetime = AS_OF,
    first: str = FIRST,
    last: str = LAST,
    on_step: Callable[[str], None] | None = None,
) -> Computed:
    """Run the models over ``root`` for ``first..last`` and keep the connection open for queries."""
    settings = settings or PipelineSettings()
    span = window(first, last, settings.reference_weeks, as_of, dt.timedelta(days=settings.maturity_lag_days))
    con = runner.connect(settings)
    prices = load_prices(settings.prices_file)
    job = runner.Job(settings, open_root(str(root), settings.s3_endpoint), span, prices, out)
    result = runner.run(job, on_step, con)
    return Computed(con, out or root, result, settings)


def mart(computed: Computed, name: str) -> list[dict[str, object]]:
    """All rows of a mart as dicts (name is one of ours; the query is fixed)."""
    relation = computed.con.table(name)
    return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]


def model_sql(name: str) -> str:
    """The SQL of one model, as the runner executes it."""
    return next(m.sql for m in load_models() if m.name == name)


GROUP = ("decision_type", "week_start", "model_key")
GRAIN = {
    "funnel": ("decision_type", "week_start", "candidate"),
    "funnel_reasons": ("decision_type", "week_start", "status", "reason"),
    "confusion": (*GROUP, "outcome", "proposal"),
    "per_option": (*GROUP, "option_id"),
    "severe_errors": ("decision_id", "model_key"),
    "gallery": ("decision_id", "model_key"),
    "agreement": GROUP,
    "reliability": (*GROUP, "bin"),
    "ece_bootstrap": GROUP,
    "classwise_calibration": (*GROUP, "option_id"),
    "calibration": GROUP,
    "drift_confidence": GROUP,
    "drift_mix": GROUP,
    "drift": GROUP,
    "thresholds": (*GROUP, "option_id"),
    "risk_coverage": (*GROUP, "threshold"),
    "selective": GROUP,
    "evidence": (*GROUP, "policy"),
    "label_delay": ("decision_type", "week_start", "source"),
    "latency": ("decision_type", "week_start", "backend", "device", "instance_type"),
    "cost": ("decision_type", "week_start", "backend", "device", "instance_type", "model_name"),
    "identities": GROUP,
    "identity_changes": ("decision_type", "week_start", "candidate", "to_identity_sha256", "field"),
    "paired": ("decision_type", "week_start", "candidate_a", "model_key_a", "candidate_b", "model_key_b"),
    "audit_strata": (*GROUP, "stratum"),
    "correctness": GROUP,
    "audited_difference": GROUP,
    "auditor_agreement": ("decision_type", "week_start", "sample_id"),
    "auditor_disagreements": ("decision_type", "week_start", "sample_id", "decision_id"),
}
"""Mart -> the columns that key one row (`tests/pipelines/test_mart_contracts.py` checks each mart)."""


def write_catalog(path: Path, marked: dict[str, list[str]]) -> Path:
    """A sidecar catalog of the generator's decision types, with ``marked`` options high-consequence."""
    lines = ["version: 1", "decision_types:"]
    for spec in synth.DEFAULT_TYPES:
        lines += [f"  {spec.name}:", "    question: Which one?", "    options:"]
        lines += [
            f"      - {{id: {o}, text: {o}, high_consequence: {str(o in marked.get(spec.name, [])).lower()}}}"
            for o in spec.options
        ]
        lines += ["    scorer: {backend: local}", '    experiment_ends_at: "2027-03-31T00:00:00Z"']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
