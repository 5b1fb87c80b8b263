"""Fixtures for the record store: settings on temporary folders, or on a bucket of the module's moto."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import boto3
import pytest

from shadow.records.settings import RecordSettings

if TYPE_CHECKING:
    from pathlib import Path

    from tests.harness import MotoServer


@pytest.fixture
def local_settings(tmp_path: Path) -> RecordSettings:
    """Settings writing Parquet under ``tmp_path/root`` and the journal under ``tmp_path/spool``."""
    return RecordSettings(root=str(tmp_path / "root"), spool_dir=tmp_path / "spool", writer_id="w1",
                          roll_seconds=60.0)


@pytest.fixture
def s3_settings(moto: MotoServer, tmp_path: Path, request: pytest.FixtureRequest) -> RecordSettings:
    """Settings with an ``s3://`` root on a fresh bucket of the moto server."""
    bucket = f"records-{request.node.name.lower().replace('_', '-')[:40]}-{os.getpid()}"
    client = boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    return RecordSettings(root=f"s3://{bucket}/shadow", spool_dir=tmp_path / "spool", writer_id="w1",
                          s3_endpoint_url=moto.endpoint, s3_region="us-east-1", s3_retry_min_s=0.1,
                          s3_retry_max_s=0.5, s3_timeout_s=2.0)
