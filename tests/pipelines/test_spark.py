"""The Spark engine against the DuckDB engine: every mart equal on the same records, and each rewrite equal.

One local SparkSession for the test session (``spark`` fixture; JVM start-up is slow); both engines run
through ``semif-shadow pipelines run --engine``, the Spark one in that session. The records: two
candidates, an identity change, a drifted week, one-hot chat rows beside the scored ones, and an ``as_of``
inside the last week, so that week's late outcomes are missing (immature) and duplicated outcomes resolve
to the latest known.
"""

from __future__ import annotations

import datetime as dt
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3
import duckdb
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from dashboards.marts import load_marts
from pipelines import synth
from pipelines.generate import Plan, generate
from pipelines.generate_audits import generate_audited
from pipelines.spark_sql import SparkOptions, to_spark
from pipelines.sqlmodels import mart_names
from pipelines.storage import open_root
from semif_shadow.cli import main
from tests.pipelines.marts_equal import mart_files, unequal_marts
from tests.pipelines.one_hot import add_one_hot_rows

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from pyspark.sql import SparkSession

    from tests.harness import MotoServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.own_process,  # pyspark forks its JVM with a preexec_fn: `make test` runs this file apart
    # py4j and PySpark's Arrow collection leave sockets to the garbage collector
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]

PLAN = Plan(
    decisions=4_000, weeks=6, drift_week=5, seed=5,
    knobs=synth.Knobs(challenger=synth.CHALLENGER, identity_change=synth.IdentityChange(week=4)),
)
"""Two candidates on 4,000 decisions over 2026-W44..W49; W49 drifted; ``default`` changes identity in W48."""
AUDITOR = synth.AuditKnobs(error_rate=0.05, agreement_rate=0.05, overlap=0.3)
"""Each week's audit sample answered, 5% of answers wrong, 30% double-audited."""
FIRST, LAST = "2026-W47", "2026-W49"
AS_OF = dt.datetime(2026, 12, 9, 12, tzinfo=dt.UTC)
"""Inside W49 (Monday 2026-11-30 .. ): that week is immature, its late outcomes not yet known."""


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One local Spark session (two cores, few shuffle partitions) for every Spark test."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.fail("the Spark engine needs Java: `make system-packages` installs default-jre-headless")
    from pipelines import spark_runner  # noqa: PLC0415  (imports pyspark)

    session = spark_runner.session("local[2]", {
        "spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "1g",
    })
    yield session
    session.stop()


def run_cli(*args: str) -> Result:
    """``semif-shadow pipelines run ARGS`` through the command line (the bootstrap at 50 replicates)."""
    env = {"PIPELINES_BOOTSTRAP_REPS": "50"}  # the bootstrap's cost, not its logic, grows with reps
    return CliRunner(env=env).invoke(main, ["pipelines", "run", "--as-of", AS_OF.isoformat(), *args])


@dataclass(frozen=True)
class Engines:
    """Both engines' output folders, and what ``pipelines run --engine spark`` printed."""

    duckdb: Path
    spark: Path
    spark_output: str


@pytest.fixture(scope="session")
def engines(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Engines:  # noqa: ARG001
    """The same generated records run by both engines through ``semif-shadow pipelines run --engine``.

    The Spark run finds the ``spark`` fixture's session active and uses it (as under ``spark-submit``).
    """
    root = tmp_path_factory.mktemp("spark_records")
    generate_audited(open_root(str(root)), PLAN, AUDITOR)  # audits: the correctness marts compared too
    add_one_hot_rows(root)  # chat rows without log-probabilities: `one_hot` excluded alike on both engines
    outs = tmp_path_factory.mktemp("duckdb_marts"), tmp_path_factory.mktemp("spark_marts")
    span = ("--since", FIRST, "--until", LAST)
    ran = [run_cli("--engine", engine, "--root", str(root), *span, "--out", str(out))
           for engine, out in zip(("duckdb", "spark"), outs, strict=True)]
    for result in ran:
        assert result.exit_code == 0, result.output
    return Engines(outs[0], outs[1], ran[1].output)


def test_every_mart_is_equal_on_both_engines(engines: Engines) -> None:
    """``pipelines run --engine spark`` writes what ``--engine duckdb`` writes.

    Same files, same rows, counts exact, floats within 1e-9 relative, for every mart and target week.
    """
    duck, spark_out = engines.duckdb, engines.spark
    files = mart_files(duck)
    assert files == mart_files(spark_out)
    assert {f.parts[0] for f in files} == set(mart_names())
    unequal = unequal_marts(duck, spark_out)
    assert not unequal, unequal
    rows = sum(pq.read_metadata(duck / f).num_rows for f in files)
    assert rows > 1_000  # the comparison saw real marts (both candidates, three weeks)


def test_the_engines_agree_on_audited_correctness(engines: Engines) -> None:
    """The correctness mart has rows in every target week, the auditor marts some; both engines agree."""
    weeks = sorted((engines.duckdb / "correctness").glob("week=*/part-0.parquet"))
    assert len(weeks) == 3
    assert all(pq.read_metadata(p).num_rows > 0 for p in weeks)
    for mart in ("auditor_agreement", "auditor_disagreements"):
        assert sum(pq.read_metadata(p).num_rows for p in (engines.duckdb / mart).glob("week=*/*.parquet")) > 0
    assert not unequal_marts(engines.duckdb, engines.spark)


def test_the_review_reads_the_spark_engines_marts(engines: Engines) -> None:
    """``semif-shadow review`` loads the Spark output as it loads DuckDB's (same layout)."""
    marts = load_marts(str(engines.spark), LAST)
    assert marts.decision_types()
    keys = marts.candidates(marts.decision_types()[0])  # model keys: "<candidate> <model>/.../ #<sha>"
    assert {key.split()[0] for key in keys} == {"challenger", "chat", "default"}  # chat: the one-hot rows


def test_the_spark_run_reports_its_weeks_and_marts(engines: Engines) -> None:
    """``pipelines run --engine spark`` prints each target week's state and what it wrote, as DuckDB's."""
    assert "2026-W48: final" in engines.spark_output
    assert "2026-W49: NOT mature" in engines.spark_output  # as_of inside W49
    assert f"in {len(mart_names())} marts under {engines.spark}" in engines.spark_output


def test_an_s3_root_without_the_s3a_connector_stops_in_one_line(
    spark: SparkSession, moto: MotoServer, tmp_path: Path,
) -> None:
    """``--engine spark --root s3://...`` on a Spark without hadoop-aws: one line naming the jars, exit 1.

    The records are there (moto); without the check the run lists them and then fails inside the JVM
    reading ``s3a://``. ``--s3-endpoint`` is handed to the S3A connector.
    """
    from py4j.protocol import Py4JJavaError  # noqa: PLC0415  (with pyspark)

    jvm = spark._jvm
    assert jvm is not None
    try:
        jvm.org.apache.hadoop.fs.FileSystem.getFileSystemClass("s3a", spark._jsc.hadoopConfiguration())
    except Py4JJavaError:
        pass
    else:
        pytest.skip("this Spark has the S3A connector")
    s3 = boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="spark-records")
    generate(open_root("s3://spark-records/records", moto.endpoint),
             Plan(decisions=200, weeks=1, first_monday=dt.date(2026, 11, 23), drift_week=None))
    result = run_cli("--engine", "spark", "--root", "s3://spark-records/records", "--week", "2026-W48",
                     "--out", str(tmp_path), "--s3-endpoint", moto.endpoint)
    version = jvm.org.apache.hadoop.util.VersionInfo.getVersion()
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, SystemExit), result.exception  # click's one line, not a Py4J error
    assert f"hadoop-aws-{version}.jar" in result.output
    assert f"--packages org.apache.hadoop:hadoop-aws:{version}" in result.output
    assert "Traceback" not in result.output
    assert "Py4J" not in result.output
    assert spark._jsc.hadoopConfiguration().get("fs.s3a.endpoint") == moto.endpoint


EXPRESSIONS = [
    ("strftime(d, '%G-W%V')", "d"),  # ISO week label, around year ends
    ("list_position(['a', 'b', 'c'], x)", "x"),  # absent -> NULL, not 0
    ("[10, 20, 30][i + 1]", "i"),  # 1-based subscripts
    ("hash(x) % 7::ubigint", "x"),  # the bootstrap's blocks: DuckDB's own hash
    ("hash(i::bigint, i::bigint + 1) % 16::ubigint", "i"),  # the bootstrap's draws
    ("list_dot_product([0.25, 0.5], [0.5, 0.125])", "x"),
    ("date_trunc('week', make_timestamp(epoch_us(t)))::date", "t"),
    ("(d - to_days(7 * 4))::date", "d"),  # (DuckDB's difference is a timestamp; the models compare it)
]
VALUES = {
    "d": ["2026-12-28", "2027-01-03", "2027-01-04", "2020-12-31", "2021-01-01"],
    "x": ["a", "c", "zz"],
    "i": [0, 1, 2],
    "t": ["2026-11-29 23:59:59.999999+00", "2026-11-30 00:00:00+00"],
}
CASTS = {"d": "date", "x": "varchar", "i": "integer", "t": "timestamptz"}


@pytest.mark.parametrize(("expression", "variable"), EXPRESSIONS)
def test_each_rewrite_equals_duckdb(spark: SparkSession, expression: str, variable: str) -> None:
    """A DuckDB expression, and its Spark form from ``to_spark``, give the same values on the same inputs."""
    values = VALUES[variable]
    inputs = " union all ".join(f"select '{v}'::{CASTS[variable]} as {variable}" for v in values)
    sql = f"with v as ({inputs}) select {expression} as r from v order by {variable}"  # noqa: S608
    expected = [row[0] for row in _duckdb(sql)]
    actual = [row.r for row in spark.sql(to_spark(sql)).collect()]
    assert [_plain(v) for v in actual] == [_plain(v) for v in expected], to_spark(sql)


def _duckdb(sql: str) -> list[tuple[object, ...]]:
    with duckdb.connect() as con:
        con.execute("set TimeZone = 'UTC'")
        return con.sql(sql).fetchall()


def _plain(value: object) -> object:
    return str(value) if isinstance(value, dt.date) else value


def test_approximate_quantiles_are_chosen_only_when_asked() -> None:
    """Exact ``percentile`` by default; ``percentile_approx`` (bounded rank error) only with the option."""
    sql = "select quantile_cont(x, [0.5, 0.99]) from t"
    assert "PERCENTILE(" in to_spark(sql)
    assert "PERCENTILE_APPROX(" in to_spark(sql, SparkOptions(approx_quantiles=True))
