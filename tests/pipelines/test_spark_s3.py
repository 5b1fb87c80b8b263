"""The Spark engine on records in S3, submitted as on EMR: ``spark-submit`` of the two-line entry point.

The records live in moto (server mode); Spark reads them through Hadoop's real S3A connector over HTTP,
given to ``spark-submit`` with ``--jars`` as docs/pipelines-spark.md says for a Spark that lacks it.
The connector here is hadoop-aws 3.3.1 with the AWS SDK v1 bundle it was built with (what this build
machine can fetch: ``make s3a-connector``), one minor version older than the Hadoop 3.4.1 client of the
``pyspark`` wheel; ``S3A_3_3_ON_HADOOP_3_4`` names the settings that take Hadoop 3.4's defaults back to
forms 3.3.1 reads. The marts must equal the DuckDB engine's on the same S3 records.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
from click.testing import CliRunner

from pipelines import synth
from pipelines.generate import Plan, generate
from pipelines.sqlmodels import mart_names
from pipelines.storage import open_root
from semif_shadow.cli import main
from tests.pipelines.marts_equal import mart_files, unequal_marts

if TYPE_CHECKING:
    from tests.harness import MotoServer

pytestmark = [
    pytest.mark.slow,
    pytest.mark.own_process,  # spark-submit starts a JVM: `make test` runs this file apart
]

REPO = Path(__file__).resolve().parents[2]
CONNECTOR = ("hadoop-aws-3.3.1.jar", "aws-java-sdk-bundle-1.11.901.jar")
S3A_3_3_ON_HADOOP_3_4 = {
    # Hadoop 3.4's core-default.xml writes these with units ("30s", "24h"); hadoop-aws 3.3.1 reads numbers.
    "fs.s3a.connection.establish.timeout": "30000",  # ms
    "fs.s3a.connection.timeout": "200000",  # ms
    "fs.s3a.threads.keepalivetime": "60",  # s
    "fs.s3a.multipart.purge.age": "86400",  # s
    # 3.4's default chain names SDK v2 classes; the v1 bundle's environment provider reads AWS_*.
    "fs.s3a.aws.credentials.provider": "com.amazonaws.auth.EnvironmentVariableCredentialsProvider",
}
PLAN = Plan(decisions=300, weeks=2, first_monday=dt.date(2026, 11, 16), drift_week=None, seed=11,
            knobs=synth.Knobs(challenger=synth.CHALLENGER))
"""Two candidates on 300 decisions over 2026-W47..W48."""
WEEK, AS_OF = "2026-W48", "2026-12-05T00:00:00Z"
ENTRY_POINT = "from semif_shadow.cli import main\nmain()\n"  # docs/pipelines-spark.md, "On EMR Serverless"


def connector_jars() -> list[Path]:
    """The two jars ``make s3a-connector`` fetched (``SEMIF_S3A_JARS``, default its cache folder)."""
    folder = Path(os.environ.get("SEMIF_S3A_JARS", Path.home() / ".cache/semif-shadow/s3a-connector"))
    jars = [folder / name for name in CONNECTOR]
    missing = [str(jar) for jar in jars if not jar.is_file()]
    if missing:
        pytest.fail(f"Hadoop's S3A connector is missing ({', '.join(missing)}): run `make s3a-connector`")
    return jars


def test_spark_submit_reads_records_in_s3_and_equals_duckdb(moto: MotoServer, tmp_path: Path) -> None:
    """``spark-submit --jars ... weekly.py pipelines run --engine spark --root s3://...``: DuckDB's marts.

    The driver lists and checks the window's files through pyarrow; Spark reads them as ``s3a://`` paths
    (``spark_runner.spark_path``), so equal marts mean the S3A connector read every file from moto.
    """
    jars = connector_jars()
    boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1").create_bucket(Bucket="spark-s3a")
    root = "s3://spark-s3a/shadow"
    generate(open_root(root, moto.endpoint), PLAN)
    common = ["pipelines", "run", "--root", root, "--s3-endpoint", moto.endpoint, "--week", WEEK,
              "--as-of", AS_OF]
    env = {"PIPELINES_BOOTSTRAP_REPS": "50"}  # the bootstrap's cost, not its logic, grows with reps
    duck = CliRunner(env=env).invoke(main, [*common, "--engine", "duckdb", "--out", str(tmp_path / "duckdb")])
    assert duck.exit_code == 0, duck.output

    entry = tmp_path / "weekly.py"
    entry.write_text(ENTRY_POINT)
    conf = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "4", "spark.driver.memory": "1g",
            **{f"spark.hadoop.{key}": value for key, value in S3A_3_3_ON_HADOOP_3_4.items()}}
    command = [str(Path(sys.executable).with_name("spark-submit")), "--master", "local[2]",
               "--jars", ",".join(map(str, jars)),
               *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")],
               str(entry), *common, "--engine", "spark", "--out", str(tmp_path / "spark")]
    child_env = {**os.environ, **env, "PYSPARK_PYTHON": sys.executable,
                 "PYTHONPATH": os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])}
    ran = subprocess.run(command, env=child_env, capture_output=True, text=True, timeout=1800, check=False)  # noqa: S603
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-6000:]
    assert f"in {len(mart_names())} marts under {tmp_path / 'spark'}" in ran.stdout

    files = {side: mart_files(tmp_path / side) for side in ("duckdb", "spark")}
    assert files["spark"] == files["duckdb"]
    assert {f.parts[0] for f in files["spark"]} == set(mart_names())
    unequal = unequal_marts(tmp_path / "duckdb", tmp_path / "spark")
    assert not unequal, unequal
