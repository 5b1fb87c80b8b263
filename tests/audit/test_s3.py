"""The workbench over an ``s3://`` records root (moto's S3 server on loopback): sample in, answer up."""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING

import boto3
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from audit.workbench.app import init_app
from audit.workbench.reading import read_sample
from contracts.audit_samples import sample_path
from contracts.records import SOURCE_AUDIT
from semif_shadow.cli import main
from shadow.records.layout import open_dataset
from tests.audit import week
from tests.audit.session import sign_in
from tests.audit.week import settings_for

if TYPE_CHECKING:
    from pathlib import Path

    from tests.harness import MotoServer
    from tests.typing import ClientFactory


@pytest.fixture
def moto_s3(moto: MotoServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """An S3 bucket on the module's moto server; the records' S3 variables point at it. The records root."""
    monkeypatch.setenv("SHADOW_RECORDS_S3_ENDPOINT_URL", moto.endpoint)
    monkeypatch.setenv("SHADOW_RECORDS_S3_REGION", "us-east-1")
    boto3.client("s3", endpoint_url=moto.endpoint).create_bucket(Bucket="audits")
    return "s3://audits/records"


async def test_over_s3_the_sample_is_read_and_the_answer_uploaded(
        tmp_path: Path, moto_s3: str, aiohttp_client: ClientFactory) -> None:
    """Records and sample in S3; an answer from the page is an audit row in S3 after the store closes."""
    await week.write_records_to(moto_s3, tmp_path / "sidecar-spool", week.decisions(4))
    sample = io.BytesIO()
    pq.write_table(week.sample_table(["d0000", "d0001", "d0002", "d0003"]), sample)
    boto3.client("s3", endpoint_url=os.environ["SHADOW_RECORDS_S3_ENDPOINT_URL"]).put_object(
        Bucket="audits", Key=f"records/{sample_path(week.WEEK, week.TYPE)}", Body=sample.getvalue())
    settings = settings_for(tmp_path, tmp_path, week.catalog(tmp_path / "catalog.yaml")).model_copy(
        update={"root": moto_s3})
    client = await aiohttp_client(init_app(settings, {week.TOKEN_ENV: week.TOKEN}))
    fields = await sign_in(client)
    answer = await client.post("/answers", data={**fields, "answer": "account"})
    assert answer.status == 200
    await client.close()
    rows = open_dataset(settings.records(), "outcomes").to_table().to_pylist()
    audits = [(r["decision_id"], r["outcome"]) for r in rows if r["source"] == SOURCE_AUDIT]
    assert audits == [(fields["decision_id"], "account")]
    assert not list((tmp_path / "audit-spool" / "staging").rglob("*.parquet"))  # uploaded, none left


async def test_audit_sample_opens_an_s3_root_with_the_flags_serve_takes(
        tmp_path: Path, moto_s3: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``audit sample --s3-endpoint --s3-region`` draws into S3 with no S3 variable set.

    The workbench's settings with the same two values (``audit serve``'s flags) read the sample back.
    """
    root = moto_s3.replace("/records", "/flags")  # the module's bucket: a prefix of this test's own
    await week.write_records_to(root, tmp_path / "sidecar-spool", week.decisions(12))
    endpoint = os.environ["SHADOW_RECORDS_S3_ENDPOINT_URL"]
    monkeypatch.delenv("SHADOW_RECORDS_S3_ENDPOINT_URL")
    monkeypatch.delenv("SHADOW_RECORDS_S3_REGION")
    base = ["audit", "sample", "--root", root, "--week", week.WEEK, "--agreement-rate", "1"]
    done = CliRunner().invoke(main, [*base, "--s3-endpoint", endpoint, "--s3-region", "us-east-1"])
    assert done.exit_code == 0, done.output
    assert f"{week.WEEK} {week.TYPE}: 12 decisions sampled" in done.output
    settings = settings_for(tmp_path, tmp_path, week.catalog(tmp_path / "catalog.yaml")).model_copy(
        update={"root": root, "s3_endpoint": endpoint, "s3_region": "us-east-1"})
    assert len(read_sample(settings.records(), week.WEEK, None)) == 12
