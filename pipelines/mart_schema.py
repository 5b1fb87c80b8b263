"""The declared columns and types of every mart, as written to Parquet; the writer refuses anything else.

Counts are ``int64`` everywhere (a DuckDB ``sum`` of integers is a HUGEINT, which Arrow receives as
``decimal128(38, 0)``: each mart casts its sums back), shares and money ``float64``, indices (``bin``,
``grid_index``) ``int32``. ``as_of`` and ``mature`` are appended by the writer to every mart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from pipelines.errors import PipelinesError

if TYPE_CHECKING:
    from collections.abc import Iterable

COUNT = pa.int64()
INDEX = pa.int32()
REAL = pa.float64()
TEXT = pa.string()
DATE = pa.date32()
FLAG = pa.bool_()
INSTANT = pa.timestamp("us", tz="UTC")


def columns(names: str, kind: pa.DataType) -> list[tuple[str, pa.DataType]]:
    """Several columns of one type, named in a space-separated string."""
    return [(name, kind) for name in names.split()]


WEEK = [*columns("decision_type", TEXT), ("week_start", DATE), ("week", TEXT)]
SCOPE = [*WEEK, ("model_key", TEXT)]
SCOPE_NO_WEEK = [("decision_type", TEXT), ("week_start", DATE), ("model_key", TEXT)]
FLEET = columns("backend device instance_type", TEXT)
RUN = [("as_of", INSTANT), ("mature", FLAG)]
"""Appended by the writer (``output.mart_rows``)."""
SQL_TYPES = {COUNT: "bigint", INDEX: "integer", REAL: "double", TEXT: "varchar", DATE: "date",
             FLAG: "boolean", INSTANT: "timestamptz"}
"""The DuckDB type of each declared Arrow type (what a model's column of that type is)."""
LEDGER = [
    *columns("ledger_first_week counted_through", TEXT), *columns("weeks_covered looks", COUNT),
    *columns("ledger_accepted_labelled ledger_accepted_correct ledger_severe_errors", COUNT),
    *columns("provisional_accepted_labelled provisional_accepted_correct", COUNT),
    ("provisional_severe_errors", COUNT),
    *columns("precision_lower precision_upper severe_upper alpha", REAL),
    *columns("reset_reason reset_week reset_from", TEXT), ("matures_at", INSTANT),
    ("ledger_recent", TEXT),
]
"""The ``evidence`` mart's last columns: no SQL computes them; the ledger (``pipelines/ledger.py``) adds them
to the model's table and fills them before the marts are written."""

DECLARED: dict[str, list[tuple[str, pa.DataType]]] = {
    "latency": [
        *WEEK, *FLEET, ("decisions", COUNT),
        *columns("scorer_p50_ms scorer_p95_ms scorer_p99_ms total_p50_ms total_p95_ms total_p99_ms", REAL),
        ("decisions_per_hour", REAL), ("peak_per_hour", COUNT),
    ],
    "funnel": [
        *WEEK, ("candidate", TEXT),
        *columns("offered sampled scored not_scored labelled unjoined with_outcome outside_options", COUNT),
        *columns("label_rate outside_options_rate", REAL),
    ],
    "funnel_reasons": [*WEEK, *columns("status reason", TEXT), ("decisions", COUNT)],
    "confusion": [*SCOPE, *columns("outcome proposal", TEXT), ("decisions", COUNT)],
    "per_option": [
        *SCOPE, ("option_id", TEXT),
        *columns("predicted true_positives support labelled", COUNT),
        *columns("precision recall baseline_precision baseline_recall label_rate", REAL),
    ],
    "gallery": [
        *SCOPE, ("rank", INDEX), ("decision_id", TEXT), *columns("proposal outcome", TEXT),
        ("confidence", REAL), ("severe", FLAG), ("received_at", INSTANT), ("state", TEXT),
    ],
    "severe_errors": [
        ("decision_id", TEXT), *SCOPE, ("proposal", TEXT), ("confidence", REAL), ("outcome", TEXT),
        ("received_at", INSTANT),
    ],
    "agreement": [
        *SCOPE, *columns("scored labelled", COUNT),
        *columns("label_rate agreement kappa baseline_agreement baseline_kappa", REAL),
        ("severe_errors", COUNT), ("outside_options", COUNT), ("outside_options_rate", REAL),
    ],
    "reliability": [
        *SCOPE, ("bin", INDEX),
        *columns("confidence_min confidence_max mean_confidence agreement", REAL),
        ("decisions", COUNT), ("sum_confidence", REAL), ("correct", COUNT),
    ],
    "ece_bootstrap": [
        *SCOPE_NO_WEEK, ("reps", COUNT), *columns("ece_debiased ece_low ece_high", REAL),
    ],
    "classwise_calibration": [
        *SCOPE, ("option_id", TEXT), ("decisions", COUNT), *columns("ece mce prevalence", REAL),
    ],
    "calibration": [
        *SCOPE, ("labelled", COUNT), ("label_rate", REAL),
        *columns("ece ece_debiased ece_low ece_high mce", REAL), ("bins", COUNT),
        *columns("classwise_ece brier brier_baseline log_loss log_loss_baseline", REAL),
        ("outside_options", COUNT), ("one_hot_excluded", COUNT),
    ],
    "drift_confidence": [*SCOPE_NO_WEEK, ("confidence_psi", REAL), ("reference_weeks", COUNT)],
    "drift_mix": [*SCOPE_NO_WEEK, *columns("proposal_mix_psi outcome_mix_psi", REAL)],
    "drift": [
        *SCOPE, ("labelled", COUNT),
        *columns("label_rate ece ece_low reference_ece_mean reference_ece_sd", REAL),
        ("reference_ece_weeks", COUNT), *columns("reference_ece_high ece_alert_above", REAL),
        ("ece_alert", FLAG),
        ("confidence_psi", REAL), ("confidence_psi_band", TEXT),
        *columns("proposal_mix_psi outcome_mix_psi", REAL), ("mix_psi_band", TEXT),
    ],
    "thresholds": [
        *SCOPE, ("option_id", TEXT), ("grid_index", INDEX), ("threshold", REAL),
        *columns("accepted accepted_correct", COUNT),
        *columns("precision precision_lower coverage selective_risk", REAL),
        ("labelled", COUNT), *columns("label_rate precision_target alpha_per_option", REAL),
    ],
    "risk_coverage": [
        *SCOPE, ("threshold", REAL), *columns("accepted accepted_correct", COUNT),
        *columns("coverage selective_risk", REAL),
    ],
    "selective": [
        *SCOPE,
        *columns("scored accepted routed_to_review labelled accepted_labelled accepted_correct", COUNT),
        *columns("coverage selective_risk label_rate", REAL),
    ],
    "cost": [
        *WEEK, *FLEET, ("model_name", TEXT),
        *columns("scored accepted accepted_labelled accepted_correct", COUNT),
        *columns("correct_accepted_estimate busy_hours utilization instance_hours usd_per_hour", REAL),
        *columns("uncached_tokens cached_tokens", COUNT), ("price_date", DATE),
        *columns("cost_usd cost_per_accepted cost_per_correct_accepted", REAL),
    ],
    "evidence": [
        *SCOPE, *columns("candidate policy", TEXT),
        *columns("scored accepted accepted_labelled accepted_correct severe_errors", COUNT),
        *columns("labelled unlabelled", COUNT),
        *columns("labelled_confidence_mean labelled_confidence_sd", REAL),
        *columns("unlabelled_confidence_mean unlabelled_confidence_sd", REAL),
        *LEDGER,
    ],
    "label_delay": [
        *WEEK, ("source", TEXT), ("outcomes", COUNT),
        *columns("p50_hours p90_hours p99_hours maturity_lag_days recommended_lag_days", REAL),
    ],
    "identities": [
        *SCOPE,
        *columns("candidate model_identity_sha256 model_name quantization device normalization", TEXT),
        *columns("first_seen last_seen", INSTANT), *columns("scored candidate_identities", COUNT),
    ],
    "identity_changes": [
        *WEEK, ("candidate", TEXT), *columns("changed_at previous_last_seen", INSTANT),
        *columns("from_identity_sha256 to_identity_sha256 field before after", TEXT),
    ],
    "paired": [
        *WEEK, *columns("candidate_a model_key_a candidate_b model_key_b", TEXT),
        *columns("paired correct_a correct_b both_correct only_a only_b neither", COUNT),
        *columns("agreement_a agreement_b difference difference_low difference_high mcnemar_p", REAL),
        *columns("mean_confidence_a mean_confidence_b brier_top_a brier_top_b", REAL),
        *columns("mean_scorer_ms_a mean_scorer_ms_b usd_per_1k_a usd_per_1k_b", REAL),
    ],
    "correctness": [
        *SCOPE, ("sample_id", TEXT), *columns("decisions sampled audited", COUNT),
        *columns("correctness correctness_se correctness_low correctness_high", REAL),
        *columns("right_vs_wrong right_vs_wrong_low right_vs_wrong_high", REAL),
        *columns("wrong_vs_right wrong_vs_right_low wrong_vs_right_high", REAL),
    ],
    "audit_strata": [
        *SCOPE, *columns("sample_id stratum", TEXT),
        *columns("stratum_decisions sampled audited units discordant", COUNT),
        *columns("model_right production_right right_vs_wrong wrong_vs_right", REAL),
    ],
    "audited_difference": [
        *SCOPE, ("sample_id", TEXT), *columns("decisions audited", COUNT), ("scored_decisions", REAL),
        *columns("diff diff_low diff_high rho", REAL),
        *columns("candidate_correctness candidate_low candidate_high", REAL),
        *columns("production_correctness production_low production_high", REAL),
    ],
    "auditor_agreement": [
        *WEEK, ("sample_id", TEXT), *columns("double_audited agreed", COUNT),
        *columns("observed_agreement kappa", REAL),
    ],
    "auditor_disagreements": [
        *WEEK, *columns("sample_id decision_id auditor_a answer_a auditor_b answer_b", TEXT),
    ],
}
"""Every mart's columns in order, without the writer's ``RUN`` columns."""
ADDED_AFTER_SQL = {"evidence": LEDGER}
"""A mart's last columns that Python adds to its model's table (the model's SQL does not have them)."""


def model_columns(mart: str) -> list[tuple[str, pa.DataType]]:
    """The columns a mart's SQL model gives, in order: the declared ones but ``ADDED_AFTER_SQL``'s."""
    added = {name for name, _ in ADDED_AFTER_SQL.get(mart, [])}
    return [(name, kind) for name, kind in DECLARED[mart] if name not in added]


def mart_schema(mart: str) -> pa.Schema:
    """The declared Arrow schema of a mart as written (its columns, then ``as_of`` and ``mature``)."""
    return pa.schema([*DECLARED[mart], *RUN])


def differences(declared: pa.Schema, actual: pa.Schema) -> list[str]:
    """What differs between two schemas, one phrase per column (empty when names and types agree)."""
    found = {field.name: field.type for field in actual}
    wanted = {field.name: field.type for field in declared}
    phrases = [f"{name} missing" for name in wanted if name not in found]
    phrases += [f"{name} not declared" for name in found if name not in wanted]
    phrases += [
        f"{name} is {found[name]}, declared {kind}"
        for name, kind in wanted.items()
        if name in found and found[name] != kind
    ]
    if not phrases and declared.names != actual.names:
        phrases.append(f"columns in order {actual.names}, declared {declared.names}")
    return phrases


def check_marts(tables: Iterable[tuple[str, pa.Table]]) -> None:
    """Raise ``PipelinesError`` naming every mart whose columns differ from its declared schema."""
    problems = [
        f"{mart}: {'; '.join(found)}"
        for mart, table in tables
        if (found := differences(mart_schema(mart), table.schema))
    ]
    if problems:
        raise PipelinesError("marts differ from their declared schema (pipelines/mart_schema.py): "
                             + " | ".join(problems))
