"""The weekly marts on Apache Spark: the same models (``spark_sql.py``), the same records, the same outputs.

Phases, as ``runner.run``: ``session`` (or the caller's) -> ``bind_config`` (``run_params`` and the ``cfg_*``
tables as temporary views, the window's instants as named parameters) -> ``register_window`` (the window's
``date=`` partitions listed and checked as the DuckDB engine does, then read by Spark with the records
schema) -> ``build`` (every model in order; intermediate models and marts are checkpointed, so each is
computed once) -> ``check_segments`` -> ``write`` (the marts' target weeks, small aggregates, collected to
the driver as Arrow and written by ``output.write_marts``: the same ``<out>/<mart>/week=<W>/part-0.parquet``
files, DuckDB file and declared-schema check as the DuckDB engine).
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from contracts.audit_samples import AUDIT_SAMPLES
from contracts.records import DROPS, SCHEMAS
from pipelines.bind import CONFIG_TABLES, config_rows, run_parameters
from pipelines.errors import NoInput, PipelinesError
from pipelines.ledger import chosen_weeks
from pipelines.mart_schema import model_columns
from pipelines.runner import SEGMENT_CHECK, RunResult, segment_problem, write_job_marts
from pipelines.source import WindowFiles, list_files, list_samples
from pipelines.spark_sql import SparkOptions, to_spark
from pipelines.spark_udfs import register_spark_udfs
from pipelines.sqlmodels import WINDOW_VARIABLES, Model, load_models, mart_names

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from pyspark.sql import DataFrame

    from pipelines.prices import PriceTable
    from pipelines.runner import Job
    from pipelines.settings import PipelineSettings
    from pipelines.storage import Root
    from pipelines.weeks import Window

READ_WINDOW_MARTS = frozenset({"evidence"})
"""Marts collected for the whole read window: the ledger (``pipelines.ledger.carry``) adds the reference
weeks that matured since the last run."""

SESSION_CONF = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.ansi.enabled": "false",  # x / 0 is NULL, as in DuckDB (the models guard with nullif)
    "spark.sql.execution.arrow.pyspark.enabled": "true",
}
"""Settings the generated SQL relies on; applied to the caller's session too."""


def master_for(flag: str | None, *, active: bool, environ: Mapping[str, str] = os.environ) -> str | None:
    """The master to ask for: ``--spark-master``, else none in a session or ``spark-submit``, else local.

    ``spark-submit`` leaves its gateway in the environment; its master (YARN on EMR, say) must not be
    replaced by ``local[*]``.
    """
    if flag is not None:
        return flag
    return None if active or "PYSPARK_GATEWAY_PORT" in environ else "local[*]"


def session(master: str | None = None, conf: dict[str, str] | None = None) -> SparkSession:
    """The active Spark session (``spark-submit``'s), or a new one on ``master`` (e.g. ``local[*]``).

    Either way the settings the generated SQL relies on are applied and the UDFs registered.
    """
    builder = SparkSession.builder.appName("semif-shadow-pipelines")
    if master is not None:
        builder = builder.master(master)
        if master.startswith("local"):  # the workers run this interpreter and import this `pipelines`
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            package_root = str(Path(__file__).resolve().parents[1])
            os.environ["PYTHONPATH"] = os.pathsep.join(
                [package_root, *filter(None, [os.environ.get("PYTHONPATH")])])
    for key, value in {**SESSION_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for key, value in SESSION_CONF.items():
        spark.conf.set(key, value)
    register_spark_udfs(spark)
    return spark


def bind_config(
    spark: SparkSession, settings: PipelineSettings, window: Window, prices: PriceTable
) -> dict[str, object]:
    """``run_params`` and the ``cfg_*`` tables as temporary views; the window's instants (parameters)."""
    params = run_parameters(settings, window)
    columns = ", ".join(f":{name} as {name}" for name in params)
    spark.sql(f"select {columns}", args=params).createOrReplaceTempView("run_params")
    for table, rows in config_rows(settings, prices).items():
        ddl = CONFIG_TABLES[table].replace("varchar", "string")
        spark.createDataFrame(rows, schema=ddl).createOrReplaceTempView(table)
    return {name: params[name] for name in WINDOW_VARIABLES}


def spark_path(root: Root, path: str) -> str:
    """A listed file as Spark names it: ``file://`` locally, ``s3a://`` (Hadoop's S3 connector) on S3."""
    return f"file://{path}" if root.is_local else f"s3a://{path}"


S3A_FILESYSTEM = "org.apache.hadoop.fs.s3a.S3AFileSystem"


def prepare_s3a(spark: SparkSession, settings: PipelineSettings) -> None:
    """Before an ``s3://`` run: Hadoop's S3A connector must be on the classpath (stop here, in one line).

    ``--s3-endpoint``, where given, becomes the connector's, with the region and path-style access (as
    MinIO and moto need). The connector (``hadoop-aws`` and the AWS SDK bundle it was built with) ships
    with EMR and Glue, not with the ``pyspark`` wheel: docs/pipelines-spark.md says what to add.
    """
    jvm, hadoop = spark._jvm, spark._jsc.hadoopConfiguration()  # noqa: SLF001  (py4j: no public accessor)
    if jvm is None:
        raise PipelinesError("the Spark engine needs a classic Spark session (not Spark Connect)")
    if settings.s3_endpoint:  # on AWS the connector finds the bucket's region itself
        hadoop.set("fs.s3a.endpoint", settings.s3_endpoint)
        hadoop.set("fs.s3a.endpoint.region", settings.s3_region)
        hadoop.set("fs.s3a.path.style.access", "true")
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass("s3a", hadoop)
    except Py4JJavaError as exc:
        version = jvm.org.apache.hadoop.util.VersionInfo.getVersion()
        raise PipelinesError(
            f"reading s3:// on Spark needs Hadoop's S3A connector ({S3A_FILESYSTEM}), which this Spark "
            f"lacks: add hadoop-aws-{version}.jar and the AWS SDK v2 bundle it names, e.g. "
            f"--packages org.apache.hadoop:hadoop-aws:{version} (EMR and Glue ship it; "
            "docs/pipelines-spark.md)") from exc


def register_window(spark: SparkSession, root: Root, window: Window) -> WindowFiles:
    """``raw_proposals``, ``raw_outcomes``, ``raw_drops`` over the window's ``date=`` partitions.

    ``NoInput`` if there are no proposals.

    The partitions are listed and the files checked against the records schema as in the DuckDB engine
    (``source.py``); Spark then reads them with that schema (a v1.1 column missing from a file is null).
    """
    import datetime as dt  # noqa: PLC0415

    last_day = (window.read_end - dt.timedelta(microseconds=1)).date()
    proposals, proposal_bytes = list_files(root, "proposals", window.read_start.date(), last_day)
    if not proposals:
        raise NoInput(f"no proposals under {root.uri} from {window.read_start.date()} to {last_day}")
    first = window.read_start.date()
    outcomes, _ = list_files(root, "outcomes", first, max(window.as_of.date(), first))
    drops, _ = list_files(root, "drops", first, last_day)
    samples = list_samples(root, first, last_day)
    files = WindowFiles(root, proposals, outcomes, proposal_bytes, drops=drops, audit_samples=samples)
    files.check()
    for name, paths in files.chosen().items():
        schema = from_arrow_schema({**SCHEMAS, "drops": DROPS, "audit_samples": AUDIT_SAMPLES}[name])
        reader = spark.read.schema(schema)
        frame = reader.parquet(*[spark_path(root, p) for p in paths]) if paths else spark.createDataFrame(
            [], schema)
        frame.createOrReplaceTempView(f"raw_{name}")
    return files


def build(
    spark: SparkSession,
    models: list[Model],
    window_args: dict[str, object],
    options: SparkOptions | None = None,
    on_step: Callable[[Model], None] | None = None,
) -> dict[str, float]:
    """Create every model in order as a temporary view (tables checkpointed); seconds per model."""
    seconds: dict[str, float] = {}
    for model in models:
        started = time.perf_counter()
        sql = to_spark(model.sql, options)
        args = {k: v for k, v in window_args.items() if re.search(rf":{k}\b", sql)}
        try:
            frame: DataFrame = spark.sql(sql, args=args)
            if model.kind == "table":
                frame = frame.localCheckpoint(eager=True)
        except PySparkException as exc:
            first = str(exc).strip().splitlines()[0]
            raise PipelinesError(f"model {model.name} failed on Spark: {first}") from exc
        frame.createOrReplaceTempView(model.name)
        seconds[model.name] = time.perf_counter() - started
        if on_step is not None:
            on_step(model)
    return seconds


def check_segments(spark: SparkSession) -> None:
    """Two segments sharing a hash, or decisions no segment names: stop (as ``runner.check_segments``)."""
    (row,) = spark.sql(SEGMENT_CHECK).collect()
    problem = segment_problem(row.shared, row.unnamed)
    if problem is not None:
        raise PipelinesError(problem)


def conform(table: pa.Table, mart: str) -> pa.Table:
    """A mart collected from Spark in its model's declared column order and Arrow types (a lossy cast fails).

    The ``evidence`` mart's ledger columns are not SQL: ``write_job_marts`` adds them (``ledger.carry``).
    """
    declared = pa.schema(model_columns(mart))
    missing = [f.name for f in declared if f.name not in table.column_names]
    if missing or len(table.column_names) != len(declared):
        raise PipelinesError(
            f"mart {mart} from Spark has columns {table.column_names}, declared {declared.names}")
    return pa.table([table.column(f.name).cast(f.type) for f in declared], schema=declared)


def collect_marts(spark: SparkSession, window: Window) -> dict[str, pa.Table]:
    """Every mart's rows of the target weeks (and what the DuckDB engine computes alongside: none)."""
    mondays = window.targets()
    tables = {}
    for mart in mart_names():
        first = window.read_start.date() if mart in READ_WINDOW_MARTS else mondays[0]
        frame = spark.table(mart).where(f"week_start >= date'{first}' and week_start <= date'{mondays[-1]}'")
        tables[mart] = conform(frame.toArrow(), mart)
    return tables


def marts_connection(tables: dict[str, pa.Table]) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB holding the collected marts, for ``output.write_marts``."""
    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    for mart, table in tables.items():
        con.register("incoming", table)
        con.execute(f'create table "{mart}" as select * from incoming')  # noqa: S608  (our mart names)
        con.unregister("incoming")
    return con


def run(
    job: Job,
    on_step: Callable[[str], None] | None = None,
    spark: SparkSession | None = None,
    options: SparkOptions | None = None,
) -> tuple[RunResult, dict[str, pa.Table]]:
    """Compute every mart on Spark; with ``job.out``, write the target weeks as the DuckDB engine does."""
    spark = spark if spark is not None else session("local[*]")
    if not job.root.is_local:
        prepare_s3a(spark, job.settings)
    window = job.window
    result = RunResult(weeks=[m.isoformat() for m in window.targets()])
    window_args = bind_config(spark, job.settings, window, job.prices)
    files = register_window(spark, job.root, window)
    result.files = files.counts()
    step = None if on_step is None else lambda m: on_step(m.name)
    result.seconds = build(spark, load_models(), window_args, options, step)
    check_segments(spark)
    tables = collect_marts(spark, window)
    if job.out is not None:
        with marts_connection(tables) as con:
            result.rows = write_job_marts(con, job.out, window, on_step, job.settings.evidence_alpha,
                                          chosen_weeks(job.settings.policies))
    return result, tables
