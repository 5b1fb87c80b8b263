"""Run the models for a window of weeks and write each target week's marts (Parquet and a DuckDB file).

Phases, in the order `run` takes them: ``connect`` (unless a connection is handed in) -> ``bind_config``
(bind.py: ``run_params``, the ``cfg_*`` tables, the window variables) -> ``register_window`` (source.py:
list, check and register the raw relations) -> ``build_passes`` (the decision types grouped into passes
of at most ``PIPELINES_PASS_MB`` of proposals; per pass ``build``, every model in order with
``int_decisions`` one type at a time, in memory or, for a pass far larger than memory, in a DuckDB file
(``decision_store.py``), then ``check_segments``; the marts united) -> ``write_marts``
(output.py, only with an output folder).
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

from pipelines.bind import bind_config
from pipelines.decision_store import DecisionStore, size_bytes
from pipelines.errors import PipelinesError
from pipelines.ledger import carry, chosen_weeks
from pipelines.output import write_marts
from pipelines.source import register_window
from pipelines.sqlmodels import SPENT_AFTER, Model, load_models, quote_ident
from pipelines.udfs import register_udfs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from pipelines.prices import PriceTable
    from pipelines.settings import PipelineSettings
    from pipelines.source import WindowFiles
    from pipelines.storage import Root
    from pipelines.weeks import Window

BUILT_BY_TYPE = "int_decisions"
"""The model built one decision type at a time (proposals and outcomes join on decision id and type)."""

OPTIMIZERS_OFF = {
    # the hash table is built on the (latest) outcomes, as the SQL is written: DuckDB's cardinality estimates
    # for the Parquet scans can otherwise put the wide proposals on the build side
    BUILT_BY_TYPE: "build_side_probe_side",
    # with several candidates DuckDB pre-aggregates the per-decision dedupe below the join to the types, by
    # segment: each candidate is a segment of its own, so that pre-aggregate keeps every row (twice the work)
    "label_delay": "partial_aggregate_pushdown",
}
"""DuckDB optimizers turned off while a model is built, where they choose a slower plan for it."""

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
    con.execute("set temp_directory = $dir", {"dir": str(spill_directory(settings))})
    con.execute("set preserve_insertion_order = false")
    if settings.threads is not None:
        con.execute("set threads = $threads", {"threads": settings.threads})
    register_udfs(con)
    return con


def spill_directory(settings: PipelineSettings) -> Path:
    """Where DuckDB spills (``PIPELINES_TEMP_DIRECTORY``, else a folder under the system's temp directory)."""
    return settings.temp_directory or Path(tempfile.gettempdir()) / "semif-pipelines-duckdb"


def decision_store(settings: PipelineSettings) -> DecisionStore:
    """The run's choice of where each pass keeps ``int_decisions`` (``pipelines.decision_store``)."""
    return DecisionStore(size_bytes(settings.memory_limit), settings.disk_ratio, spill_directory(settings))


def build(
    con: duckdb.DuckDBPyConnection,
    models: list[Model],
    on_step: Callable[[Model], None] | None = None,
    files: WindowFiles | None = None,
    store: DecisionStore | None = None,
) -> dict[str, float]:
    """Create every model in order; return seconds per model.

    With the window's ``files``, ``int_decisions`` (the join of proposals and outcomes, whose hash tables
    dominate the job's memory) is built one decision type at a time, largest first, where ``store`` says
    (in memory without one). The columns ``SPENT_AFTER`` names are dropped once the last model reading
    them is built.
    """
    seconds: dict[str, float] = {}
    for model in models:
        started = time.perf_counter()
        try:
            with optimizers_off(con, model.name):
                if model.name == BUILT_BY_TYPE:
                    build_by_type(con, model, files, store)
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


def build_passes(  # noqa: PLR0913
    con: duckdb.DuckDBPyConnection,
    models: list[Model],
    files: WindowFiles,
    passes: list[list[str]],
    on_step: Callable[[Model], None] | None = None,
    *,
    keep: bool = False,
    store: DecisionStore | None = None,
) -> dict[str, float]:
    """Build every model once per pass (a group of decision types, ``WindowFiles.passes``); seconds per model.

    Every model keys its rows by decision type, so a mart over several passes is the union of each pass's
    rows. Between passes the marts (and with ``keep`` every table) are set aside under a per-pass name and
    the rest is dropped, so a pass holds only its own types' decisions; the parts are united at the end.
    ``on_step`` is called after every model of every pass; ``store`` as ``build``'s, its file removed after
    each pass (a pass far larger than memory writes a new one rather than reuse the freed blocks of the last).
    """
    if len(passes) == 1:
        built = build(con, models, on_step, files, store)
        check_segments(con)
        if store is not None:
            store.close(con)
        return built
    seconds: dict[str, float] = {}
    tables = [m for m in models if m.kind == "table"]
    kept = [m.name for m in tables if keep or m.is_mart]
    for index, types in enumerate(passes):
        part = files.subset(types)
        part.register(con)
        for name, spent in build(con, models, on_step, part, store).items():
            seconds[name] = seconds.get(name, 0.0) + spent
        check_segments(con)
        for model in tables:
            name = quote_ident(model.name)
            if model.name in kept:
                con.execute(f"alter table {name} rename to {pass_table(model.name, index)}")
            else:
                con.execute(f"drop table {name}")
        if store is not None:
            store.close(con)
    files.register(con)
    for name in kept:
        parts = [pass_table(name, index) for index in range(len(passes))]
        united = " union all ".join(f"select * from {table}" for table in parts)  # noqa: S608  (our names)
        con.execute(f"create table {quote_ident(name)} as {united}")
        for table in parts:
            con.execute(f"drop table {table}")
    return seconds


def pass_table(name: str, index: int) -> str:
    """The quoted name a model's table is kept under between passes."""
    return quote_ident(f"{name}__pass{index}")


def spread(
    on_step: Callable[[str], None] | None, models: list[Model], passes: int
) -> Callable[[Model], None] | None:
    """Progress over ``passes``: ``on_step`` once per model, in order, one call every ``passes`` builds."""
    if on_step is None:
        return None
    built = [0]

    def step(_: Model) -> None:
        built[0] += 1
        if built[0] % passes == 0:
            on_step(models[built[0] // passes - 1].name)

    return step


def out_of_memory(con: duckdb.DuckDBPyConnection, step: str) -> str:
    """One line for a step DuckDB could not fit: the limit, where it spilled, and the settings to change."""
    ((limit, spill),) = con.sql(
        "select current_setting('memory_limit'), current_setting('temp_directory')"
    ).fetchall()
    return (f"{step} does not fit PIPELINES_MEMORY_LIMIT ({limit}), with what spilled to {spill}: raise "
            "PIPELINES_MEMORY_LIMIT, or set PIPELINES_THREADS lower (each thread holds its own buffers)")


@contextlib.contextmanager
def optimizers_off(con: duckdb.DuckDBPyConnection, name: str) -> Iterator[None]:
    """``OPTIMIZERS_OFF[name]`` disabled for the block (nothing changes for a model without an entry)."""
    off = OPTIMIZERS_OFF.get(name)
    if off is None:
        yield
        return
    con.execute("set disabled_optimizers = $off", {"off": off})
    try:
        yield
    finally:
        con.execute("reset disabled_optimizers")


def build_by_type(con: duckdb.DuckDBPyConnection, model: Model, files: WindowFiles | None,
                  store: DecisionStore | None = None) -> None:
    """Build the join of proposals and outcomes: one decision type at a time when ``files`` has several.

    In memory, or in ``store``'s file (uncompressed; see its module) where it says the pass is too large for
    memory.
    """
    types = files.types_largest_first() if files is not None and len(files.proposals) > 1 else [None]
    target = store.target(con, model.name) if store is not None and store.on_disk(files) else None
    if target is not None:
        con.execute("set force_compression = 'uncompressed'")
    try:
        for index, decision_type in enumerate(types):
            if files is not None and decision_type is not None:
                files.register(con, decision_type)
            con.execute(model.create_statement(target) if index == 0 else model.insert_statement(target))
    finally:
        if target is not None:
            con.execute("reset force_compression")
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
    """Compute every mart for the job's window and, when ``job.out`` is set, write the target weeks there.

    With a connection handed in, the intermediate tables stay in it beside the marts, for queries
    (``queries/policy_replay.sql``).
    """
    keep = con is not None
    con = con if con is not None else connect(job.settings)
    store = None if keep else decision_store(job.settings)  # kept tables stay in the caller's database
    window = job.window
    try:
        result = RunResult(weeks=[m.isoformat() for m in window.targets()])
        bind_config(con, job.settings, window, job.prices)
        files = register_window(con, job.root, window.read_start, window.read_end, window.as_of)
        result.files = files.counts()
        passes = files.passes(job.settings.pass_mb * 2**20)
        models = load_models()
        step = spread(on_step, models, len(passes))
        result.seconds = build_passes(con, models, files, passes, step, keep=keep, store=store)
        if job.out is not None:
            result.rows = write_job_marts(con, job.out, window, on_step, job.settings.evidence_alpha,
                                          chosen_weeks(job.settings.policies))
    except duckdb.OutOfMemoryException as exc:
        raise PipelinesError(out_of_memory(con, "the run")) from exc
    except duckdb.Error as exc:
        raise PipelinesError(f"DuckDB: {exc}") from exc
    finally:
        if store is not None:
            store.close(con)
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
