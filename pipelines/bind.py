"""The values a run binds before its models: ``run_params``, the ``cfg_*`` tables and the window variables.

``run_params`` holds the window and every setting the models read. Both engines fill the same rows;
values enter SQL only here, as bound parameters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scipy.special import ndtri

from pipelines.ledger import policy_rows
from pipelines.settings import high_consequence_options
from pipelines.sqlmodels import quote_ident, window_variable_statements

if TYPE_CHECKING:
    import duckdb

    from pipelines.prices import PriceTable
    from pipelines.settings import PipelineSettings
    from pipelines.weeks import Window

IDENTITY_SETTLE_MINUTES = 60
"""Identities first seen this long after their candidate and fleet started are changes (identity_changes)."""
PSI_RESOLUTION = 1000
PSI_FLOOR = 1e-4


PARAMETER_TYPES = {
    "read_start": "timestamptz",
    "read_end": "timestamptz",
    "as_of": "timestamptz",
    "bootstrap_level": "double",
    "precision_target": "double",
    "alpha": "double",
    "severe_confidence": "double",
    "psi_floor": "double",
    "utilization": "double",
    "paired_z": "double",
    "maturity_lag_days": "double",
}
"""The SQL types of ``run_params``' columns other than ``integer``."""


def run_parameters(settings: PipelineSettings, window: Window) -> dict[str, object]:
    """The one row of ``run_params``: the window and every setting the models read (both engines)."""
    return {
        "read_start": window.read_start,
        "read_end": window.read_end,
        "as_of": window.as_of,
        "ece_bins": settings.ece_bins,
        "classwise_bins": settings.classwise_bins,
        "bootstrap_reps": settings.bootstrap_reps,
        "bootstrap_blocks": settings.bootstrap_blocks,
        "bootstrap_level": settings.bootstrap_level,
        "precision_target": settings.precision_target,
        "alpha": settings.alpha,
        "grid": round(1 / settings.threshold_step),
        "severe_confidence": settings.severe_confidence,
        "reference_weeks": settings.reference_weeks,
        "min_reference_weeks": settings.min_reference_weeks,
        "psi_bins": settings.psi_bins,
        "psi_resolution": PSI_RESOLUTION,
        "psi_floor": PSI_FLOOR,
        "utilization": settings.utilization,
        # the normal quantile from scipy.special (what scipy.stats.norm.ppf computes, bit for bit): importing
        # scipy.stats is slow, and every run would pay for it
        "paired_z": float(ndtri(0.5 + settings.bootstrap_level / 2)),
        "identity_settle_minutes": IDENTITY_SETTLE_MINUTES,
        "maturity_lag_days": window.maturity_lag.total_seconds() / 86400,
    }


CONFIG_TABLES = {
    "cfg_high_consequence": "decision_type varchar, option_id varchar",
    "cfg_instance_prices": "instance_type varchar, usd_per_hour double, price_date date",
    "cfg_token_prices":
        "model_name varchar, usd_per_mtok_input double, usd_per_mtok_cached double, price_date date",
    "cfg_policies":
        "decision_type varchar, model_key varchar, policy varchar, option_id varchar, grid_index integer",
}
"""The configuration tables the models join, with their columns (the same in both engines)."""


def config_rows(settings: PipelineSettings, prices: PriceTable) -> dict[str, list[list[object]]]:
    """The rows of each ``CONFIG_TABLES`` table: high-consequence options, instance and token prices."""
    return {
        "cfg_high_consequence": [
            [t, o] for t, options in high_consequence_options(settings).items() for o in options
        ],
        "cfg_instance_prices": [[k, v, prices.date] for k, v in prices.instances.items()],
        "cfg_token_prices": [
            [k, v.input_per_mtok, v.cached_input_per_mtok, prices.date] for k, v in prices.tokens.items()
        ],
        "cfg_policies": policy_rows(settings.policies),
    }


def bind_config(
    con: duckdb.DuckDBPyConnection, settings: PipelineSettings, window: Window, prices: PriceTable
) -> None:
    """Fill ``run_params``, the ``cfg_*`` tables and the window variables with bound parameters.

    (The only way values enter SQL.)
    """
    params = run_parameters(settings, window)
    columns = ", ".join(
        f"${name}::{PARAMETER_TYPES.get(name, 'integer')} as {quote_ident(name)}" for name in params
    )
    con.execute(f"create or replace table run_params as select {columns}", params)
    for statement in window_variable_statements():
        con.execute(statement)
    for table, rows in config_rows(settings, prices).items():
        con.execute(f"create or replace table {table} ({CONFIG_TABLES[table]})")
        if rows:
            marks = ", ".join("?" * len(rows[0]))
            con.executemany(f"insert into {table} values ({marks})", rows)  # noqa: S608  (our table names)
