"""Run the models for a window of weeks and write each target week's marts (Parquet and a DuckDB file).

Phases, in the order `run` takes them: ``connect`` (unless a connection is handed in) -> ``bind_config``
(``run_params``, the ``cfg_*`` tables, the window variables) -> ``register_window`` (source.py: list,
check and register the raw relations) -> ``build`` (every model in order; ``int_decisions`` one decision
type at a time) -> ``check_segments`` -> ``write_marts`` (output.py, only with an output folder).
Every step is deterministic (ordered ties, hash-seeded bootstrap), and a week's outputs are replaced
whole, so rerunning a week gives the same result unless late outcomes arrived in between.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
from scipy.special import ndtri

from pipelines.errors import PipelinesError
from pipelines.ledger import carry, chosen_weeks, policy_rows
from pipelines.output import write_marts
from pipelines.settings import high_consequence_options
from pipelines.source import register_window
from pipelines.sqlmodels import SPENT_AFTER, Model, load_models, quote_ident, window_variable_statements
from pipelines.udfs import register_udfs

if TYPE_CHECKING:
    from collections.abc import Callable

    from pipelines.prices import PriceTable
    from pipelines.settings import PipelineSettings
    from pipelines.source import WindowFiles
    from pipelines.storage import Root
    from pipelines.weeks import Window

BUILT_BY_TYPE = "int_decisions"
"""The model built one decision type at a time (proposals and outcomes join on decision id and type)."""

IDENTITY_SETTLE_MINUTES = 60
"""Identities first seen this long after their candidate and fleet started are changes (identity_changes)."""
PSI_RESOLUTION = 1000
PSI_FLOOR = 1e-4


@dataclass
class RunResult:
    """What a run did: the weeks written, rows per mart, seconds per model, files read."""

    weeks: list[str]
    rows: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)


def connect(settings: PipelineSettings, database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """A DuckDB connection in UTC with the memory limit, threads and UDFs the models need."""
    con = duckdb.connect(database)
    con.execute("set TimeZone = 'UTC'")
    con.execute("set memory_limit = $limit", {"limit": settings.memory_limit})
    # Buffer blocks come from one region kept for the connection's life instead of being returned to the
    # OS and faulted in again: less system time at large sizes, for a little more peak memory.
    # Only a speed-up: a value DuckDB will not take for it leaves the default allocator.
    with contextlib.suppress(duckdb.Error):
        con.execute("set block_allocator_memory = $limit", {"limit": settings.memory_limit})
    spill = settings.temp_directory or Path(tempfile.gettempdir()) / "semif-pipelines-duckdb"
    con.execute("set temp_directory = $dir", {"dir": str(spill)})
    con.execute("set preserve_insertion_order = false")
    if settings.threads is not None:
        con.execute("set threads = $threads", {"threads": settings.threads})
    register_udfs(con)
    return con


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


def build(
    con: duckdb.DuckDBPyConnection,
    models: list[Model],
    on_step: Callable[[Model], None] | None = None,
    files: WindowFiles | None = None,
) -> dict[str, float]:
    """Create every model in order; return seconds per model.

    With the window's ``files``, ``int_decisions`` (the join of proposals and outcomes, whose hash tables
    dominate the job's memory) is built one decision type at a time, largest first. The columns
    ``SPENT_AFTER`` names are dropped once the last model reading them is built.
    """
    seconds: dict[str, float] = {}
    for model in models:
        started = time.perf_counter()
        try:
            if model.name == BUILT_BY_TYPE:
                build_by_type(con, model, files)
            else:
                con.execute(model.create_statement())
            if model.name in SPENT_AFTER:
                table, columns = SPENT_AFTER[model.name]
                for column in columns:  # a misnamed column fails the run rather than stay in memory
                    con.execute(f"alter table {quote_ident(table)} drop column {quote_ident(column)}")
        except duckdb.OutOfMemoryException as exc:
            raise PipelinesError(out_of_memory(con, f"model {model.name}")) from exc
        except duckdb.Error as exc:
            raise PipelinesError(f"model {model.name} failed: {exc}") from exc
        seconds[model.name] = time.perf_counter() - started
        if on_step is not None:
            on_step(model)
    return seconds


def out_of_memory(con: duckdb.DuckDBPyConnection, step: str) -> str:
    """One line for a step DuckDB could not fit: the limit, where it spilled, and the settings to change."""
    ((limit, spill),) = con.sql(
        "select current_setting('memory_limit'), current_setting('temp_directory')"
    ).fetchall()
    return (f"{step} does not fit PIPELINES_MEMORY_LIMIT ({limit}), with what spilled to {spill}: raise "
            "PIPELINES_MEMORY_LIMIT, or set PIPELINES_THREADS lower (each thread holds its own buffers)")


def build_by_type(con: duckdb.DuckDBPyConnection, model: Model, files: WindowFiles | None) -> None:
    """Build the join of proposals and outcomes: one decision type at a time when ``files`` has several.

    The hash table is built on the (latest) outcomes, as the SQL is written: DuckDB's cardinality estimates
    for the Parquet scans can otherwise put the wide proposals on the build side.
    """
    types = files.types_largest_first() if files is not None and len(files.proposals) > 1 else [None]
    con.execute("set disabled_optimizers = 'build_side_probe_side'")
    try:
        for index, decision_type in enumerate(types):
            if files is not None and decision_type is not None:
                files.register(con, decision_type)
            con.execute(model.create_statement() if index == 0 else model.insert_statement())
    finally:
        con.execute("reset disabled_optimizers")
        if files is not None:
            files.register(con)


SEGMENT_CHECK = (
    "select (select count(*) - count(distinct segment) from int_segments) as shared,"
    " (select count(*) from int_decisions) - (select coalesce(sum(offered), 0) from int_segment_hours)"
    " as unnamed"
)
"""Both engines' check of the segments: hashes naming two segments, decisions whose segment is not named."""


def segment_problem(shared: int, unnamed: int) -> str | None:
    """What ``SEGMENT_CHECK``'s counts say is wrong, if anything."""
    if shared:
        return "two segments share a hash in int_segments; results would be merged"
    if unnamed:
        return f"{unnamed} decisions have a segment int_segment_hours does not name; marts would miss them"
    return None


def check_segments(con: duckdb.DuckDBPyConnection) -> None:
    """Decisions carry their segment as a 64-bit hash: refuse to go on if two segments ever shared one.

    Also if a segment's strings were not found: every decision must be counted in ``int_segment_hours``.
    """
    (shared, unnamed) = con.sql(SEGMENT_CHECK).fetchall()[0]
    problem = segment_problem(shared, unnamed)
    if problem is not None:
        raise PipelinesError(problem)


@dataclass(frozen=True)
class Job:
    """One run's inputs: settings, where the records are, which weeks, the prices, and where to write."""

    settings: PipelineSettings
    root: Root
    window: Window
    prices: PriceTable
    out: Path | None = None


def run(
    job: Job,
    on_step: Callable[[str], None] | None = None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> RunResult:
    """Compute every mart for the job's window and, when ``job.out`` is set, write the target weeks there."""
    con = con if con is not None else connect(job.settings)
    window = job.window
    try:
        result = RunResult(weeks=[m.isoformat() for m in window.targets()])
        bind_config(con, job.settings, window, job.prices)
        files = register_window(con, job.root, window.read_start, window.read_end, window.as_of)
        result.files = files.counts()
        step = None if on_step is None else lambda m: on_step(m.name)
        result.seconds = build(con, load_models(), step, files)
        check_segments(con)
        if job.out is not None:
            result.rows = write_job_marts(con, job.out, window, on_step, job.settings.evidence_alpha,
                                          chosen_weeks(job.settings.policies))
    except duckdb.OutOfMemoryException as exc:
        raise PipelinesError(out_of_memory(con, "the run")) from exc
    except duckdb.Error as exc:
        raise PipelinesError(f"DuckDB: {exc}") from exc
    return result


def write_job_marts(con: duckdb.DuckDBPyConnection, out: Path, window: Window,  # noqa: PLR0913, PLR0917
                    on_step: Callable[[str], None] | None, alpha: float,
                    chosen: dict[str, str] | None = None) -> dict[str, int]:
    """Write the marts under ``out`` (either engine's, from a DuckDB connection); rows per mart.

    The ``evidence`` mart's ledger columns are added and filled first, from the ledger already written
    under ``out`` (``pipelines.ledger.carry``, at the one-sided level ``alpha``).
    """
    try:
        carry(con, window, out, alpha, chosen)
        rows = write_marts(con, out, window)
    except OSError as exc:
        raise PipelinesError(f"cannot write the marts under {out}: {exc}") from exc
    if on_step is not None:
        on_step("write")
    return rows


def default_as_of() -> dt.datetime:
    """Now, in UTC: outcomes known up to this instant are used."""
    return dt.datetime.now(dt.UTC)
