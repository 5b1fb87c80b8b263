"""The weekly CronJob's flow with no lasting disk: records, marts and the review all on S3 (moto).

`pipelines run --out s3://...` publishes the same Parquet files a local `--out` writes, and `review`
reads those marts from S3 and writes its report and summary back to S3.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from pipelines.generate import Plan, generate
from pipelines.storage import open_root

if TYPE_CHECKING:
    from tests.harness import MotoServer

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("semif-shadow"))
WEEK = "2026-W45"
AS_OF = "2026-12-31T00:00:00+00:00"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(  # noqa: S603  (our own console script, fixed arguments)
        [CLI, *args], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.slow
def test_pipelines_and_review_write_to_s3(moto: MotoServer, tmp_path: Path) -> None:
    """Every mart file of the week lands on S3 equal to the local run's; the review lands beside."""
    s3 = boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1")
    s3.create_bucket(Bucket="weekly")
    generate(open_root("s3://weekly/records", moto.endpoint), Plan(decisions=4_000, weeks=2, seed=3))
    common = ["pipelines", "run", "--root", "s3://weekly/records", "--week", WEEK, "--as-of", AS_OF,
              "--s3-endpoint", moto.endpoint]
    _cli(*common, "--out", "s3://weekly/marts")
    _cli(*common, "--out", str(tmp_path / "local"))

    local = sorted(p.relative_to(tmp_path / "local").as_posix()
                   for p in (tmp_path / "local").rglob("part-0.parquet"))
    keys = s3.list_objects_v2(Bucket="weekly", Prefix="marts/")["Contents"]
    assert sorted(k["Key"].removeprefix("marts/") for k in keys) == local
    assert len(local) >= 20
    fs = pafs.S3FileSystem(endpoint_override=moto.endpoint, region="us-east-1")
    for name in local:
        remote = pq.read_table(f"weekly/marts/{name}", filesystem=fs)
        _assert_same(remote, pq.read_table(tmp_path / "local" / name))

    done = _cli("review", "--marts", "s3://weekly/marts", "--week", WEEK, "--out",
                f"s3://weekly/reviews/{WEEK}.html", "--s3-endpoint", moto.endpoint)
    html = s3.get_object(Bucket="weekly", Key=f"reviews/{WEEK}.html")["Body"].read().decode()
    summary = s3.get_object(Bucket="weekly", Key=f"reviews/{WEEK}.md")["Body"].read().decode()
    assert "<svg" in html
    assert summary.strip()
    assert summary.strip() in done.stdout


def _assert_same(remote: pa.Table, local: pa.Table) -> None:
    """Same schema and rows; floats to 1e-12 (DuckDB's parallel sums may differ in the last bit)."""
    assert remote.schema == local.schema
    assert remote.num_rows == local.num_rows
    for name in local.column_names:
        left, right = remote.column(name), local.column(name)
        if pa.types.is_floating(left.type):
            assert np.allclose(left.to_numpy(zero_copy_only=False), right.to_numpy(zero_copy_only=False),
                               rtol=1e-12, atol=0, equal_nan=True), name
        else:
            assert left.equals(right), name
