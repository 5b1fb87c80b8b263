"""The SQL models under ``models/``: their order, kind (view or table) and text, and the quoting helper.

Staging models are views over the registered raw relations (``raw_proposals``, ``raw_outcomes``,
``raw_drops``, ``raw_audit_samples``), except those in ``STORED_STAGING``;
intermediate models and marts are tables. Values reach the SQL only through the one-row ``run_params``
table, the ``cfg_*`` tables and the window variables (``WINDOW_VARIABLES``), all filled with bound
parameters (``runner.py``); identifiers only through ``quote_ident``.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Literal

Kind = Literal["view", "table"]

ORDER: tuple[tuple[str, str], ...] = (
    ("staging", "stg_proposals"),
    ("staging", "stg_outcomes"),
    ("staging", "stg_drops"),
    ("staging", "stg_audits"),
    ("staging", "stg_audit_samples"),
    # the one pass over the proposals' strings and option lists: every later model reads its tables
    ("intermediate", "int_decisions"),
    ("intermediate", "int_segment_hours"),
    ("intermediate", "int_segment_weeks"),
    ("intermediate", "int_segments"),
    ("intermediate", "int_scopes"),
    # every model reading int_decisions comes first, the widest columns' readers earliest (SPENT_AFTER)
    ("marts", "latency"),
    ("marts", "label_delay"),
    ("intermediate", "int_segment_week_cost"),
    ("marts", "paired"),
    ("intermediate", "int_audited"),
    ("intermediate", "int_cube"),
    ("marts", "classwise_calibration"),
    ("intermediate", "int_flagged"),
    ("marts", "severe_errors"),
    ("marts", "gallery"),
    ("intermediate", "int_calibration_labelled"),
    ("marts", "funnel"),
    ("marts", "funnel_reasons"),
    ("intermediate", "int_reference_window"),
    ("marts", "drift_confidence"),
    ("intermediate", "int_cube_scoped"),
    ("intermediate", "int_label_rates"),
    ("intermediate", "int_calibration_buckets"),
    ("intermediate", "int_calibration_edges"),
    ("intermediate", "int_calibration_binned"),
    ("marts", "confusion"),
    ("marts", "per_option"),
    ("marts", "agreement"),
    ("marts", "reliability"),
    ("marts", "ece_bootstrap"),
    ("marts", "calibration"),
    ("marts", "drift_mix"),
    ("marts", "drift"),
    ("marts", "thresholds"),
    ("marts", "risk_coverage"),
    ("intermediate", "int_accepted"),
    ("marts", "selective"),
    ("marts", "evidence"),
    ("marts", "identities"),
    ("marts", "identity_changes"),
    ("marts", "cost"),
    ("intermediate", "int_audit_pairs"),
    ("marts", "audit_strata"),
    ("intermediate", "int_audit_estimates"),
    ("marts", "correctness"),
    ("marts", "audited_difference"),
    ("marts", "auditor_agreement"),
    ("marts", "auditor_disagreements"),
)
"""Every model in dependency order."""

PRODUCTION = "production"
"""The audit models' ``model_key`` for production's own outcome. The models write it, and an outcome's
source ``contracts.records.SOURCE_AUDIT``, as SQL literals; ``tests/pipelines/test_sqlmodels.py`` checks
that every such literal equals its constant."""

STORED_STAGING = frozenset({"stg_audits"})
"""Staging models stored as tables: read by several models, each read of a view would scan its raw relation
again (``stg_audits``: the outcomes, 52 ms a read at 1M decisions, for the 1.6% of rows that are audits)."""

SPENT_AFTER: dict[str, tuple[str, tuple[str, ...]]] = {
    "latency": ("int_decisions", ("scorer_ms", "total_ms", "prompt_tokens", "cached_tokens")),
    "label_delay": ("int_decisions", ("outcome_delay_us", "outcome_source")),
    "int_audited": ("int_decisions", ("decision_key",)),
    "classwise_calibration": ("int_decisions", ("probabilities",)),
    "int_flagged": ("int_decisions", ("decision_id", "state", "received_at", "outcome_other",
                                      "proposal_other")),
    "int_calibration_labelled": ("int_decisions", ("block",)),
    "funnel": ("int_decisions", ("sampled", "joined", "outcome_pos")),
}
"""Columns no model after the named one reads: ``{model: (table, columns)}``. The DuckDB runner drops them
once that model is built, so they stop holding memory: every reader of ``int_decisions`` comes right after
it in ``ORDER``, the widest columns' first (the table is about 160 bytes a proposal when built and about a
fifth of that once its readers are done; what does not fit ``memory_limit`` is spilled and read back by
those readers). What ``queries/policy_replay.sql`` and the checks read after a run stays."""

WINDOW_VARIABLES = ("read_start", "read_end", "as_of")
"""DuckDB variables holding the window's instants, copied from ``run_params``. The staging models filter the
raw timestamps with ``getvariable(name)``: a constant, so the filter runs inside the Parquet scan."""


def window_variable_statements() -> list[str]:
    """``set variable`` statements copying the window's instants from ``run_params`` (after filling it)."""
    return [
        f"set variable {quote_ident(name)} = (select {quote_ident(name)} from run_params)"  # noqa: S608
        for name in WINDOW_VARIABLES
    ]


@dataclass(frozen=True)
class Model:
    """One SQL model: its layer, name, how it is materialized and its SQL."""

    layer: str
    name: str
    sql: str

    @property
    def kind(self) -> Kind:
        """Staging models are views (but ``STORED_STAGING``); everything downstream is materialized."""
        return "view" if self.layer == "staging" and self.name not in STORED_STAGING else "table"

    @property
    def is_mart(self) -> bool:
        """Whether the model is written out as a mart."""
        return self.layer == "marts"

    def create_statement(self, target: str | None = None) -> str:
        """``create or replace <kind> <name> as <sql>``; ``target``: another (quoted, qualified) name."""
        return f"create or replace {self.kind} {target or quote_ident(self.name)} as\n{self.sql}"

    def insert_statement(self, target: str | None = None) -> str:
        """``insert into <name> <sql>``: more rows for a table built in parts."""
        return f"insert into {target or quote_ident(self.name)}\n{self.sql}"


def quote_ident(name: str) -> str:
    """Quote a SQL identifier (double quotes, embedded quotes doubled); the only way names enter SQL."""
    if not name or "\x00" in name:
        raise ValueError(f"not a usable identifier: {name!r}")
    return '"' + name.replace('"', '""') + '"'


def load_models() -> list[Model]:
    """Every model in dependency order, read from the package's ``models/`` folder."""
    return [load_model(name) for _, name in ORDER]


LAYER_OF = {model: layer for layer, model in ORDER}
"""Each model's layer (its folder under ``models/``)."""


def load_model(name: str) -> Model:
    """One model by name, read from the package's ``models/`` folder (``KeyError`` if there is none)."""
    layer = LAYER_OF[name]
    path = resources.files("pipelines") / "models" / layer / f"{name}.sql"
    return Model(layer, name, path.read_text(encoding="utf-8").strip())


def mart_names() -> list[str]:
    """The names of the marts, in order."""
    return [name for layer, name in ORDER if layer == "marts"]
