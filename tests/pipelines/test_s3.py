"""An s3:// root served by moto's server on loopback.

Generated there, read through pyarrow, same marts as local.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
import pytest

from pipelines.generate import Plan, generate
from pipelines.settings import PipelineSettings
from pipelines.sqlmodels import mart_names
from pipelines.storage import open_root
from tests.pipelines.harness import run_window

if TYPE_CHECKING:
    from pathlib import Path

    from tests.harness import MotoServer

SMALL = Plan(decisions=4_000, weeks=2, seed=3)


def same_row(a: tuple[object, ...], b: tuple[object, ...]) -> bool:
    """Equal rows, floats within 1e-12 relative."""
    return len(a) == len(b) and all(
        x == pytest.approx(y, rel=1e-12, abs=1e-15) if isinstance(x, float) and isinstance(y, float)
        else x == y
        for x, y in zip(a, b, strict=True)
    )


@pytest.fixture
def bucket(moto: MotoServer) -> str:
    """A fresh bucket on the moto server."""
    boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1").create_bucket(
        Bucket="shadow-records"
    )
    return "shadow-records"


def test_s3_root_gives_the_same_marts_as_a_local_root(moto: MotoServer, bucket: str, tmp_path: Path) -> None:
    """The same generated records under s3:// (moto) and in a local folder give identical marts, every one."""
    generate(open_root(f"s3://{bucket}/records", moto.endpoint), SMALL)
    generate(open_root(str(tmp_path / "local")), SMALL)
    keys = boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1").list_objects_v2(
        Bucket=bucket, Prefix="records/proposals/decision_type=priority/"
    )["Contents"]
    parquet = [k["Key"] for k in keys if k["Key"].endswith(".parquet")]
    assert parquet
    assert all(k.startswith("records/proposals/decision_type=priority/date=2026-") for k in parquet)
    remote = run_window(
        f"s3://{bucket}/records",
        tmp_path / "s3-out",
        settings=PipelineSettings(s3_endpoint=moto.endpoint),
        first="2026-W45",
        last="2026-W45",
    )
    local = run_window(tmp_path / "local", tmp_path / "local-out", first="2026-W45", last="2026-W45")
    marts = mart_names()
    assert len(marts) >= 18
    for mart in marts:
        query = f"select * from {mart} order by all"  # noqa: S608  (our own mart names)
        there, here = remote.con.sql(query).fetchall(), local.con.sql(query).fetchall()
        assert len(there) == len(here), mart
        for a, b in zip(there, here, strict=True):  # floats to 1e-12: DuckDB's parallel sums add in the
            assert same_row(a, b), (mart, a, b)      # order the files arrive (seen: a last-bit change)
    assert remote.result.files == local.result.files
