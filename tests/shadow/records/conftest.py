# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Fixtures for the record store: settings on temporary folders, and an S3 API served by moto."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest

from shadow.records.settings import RecordSettings

if TYPE_CHECKING:
    from collections.abc import Iterator

MOTO_START_TIMEOUT_S = 20.0


@pytest.fixture
def local_settings(tmp_path: Path) -> RecordSettings:
    """Settings writing Parquet under ``tmp_path/root`` and the journal under ``tmp_path/spool``."""
    return RecordSettings(root=str(tmp_path / "root"), spool_dir=tmp_path / "spool", writer_id="w1",
                          roll_seconds=60.0)


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MotoServer:
    """``moto_server`` in server mode on a loopback port; can be stopped and started again."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"
        self._log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers."""
        binary = Path(sys.executable).with_name("moto_server")
        with self._log_path.open("ab") as log:
            self._proc = subprocess.Popen([str(binary), "-H", "127.0.0.1", "-p", str(self.port)],  # noqa: S603  (our venv's binary)
                                          stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + MOTO_START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()  # noqa: S310  (http on loopback)
            except OSError:
                time.sleep(0.1)
            else:
                return
        raise RuntimeError(f"moto_server did not start on port {self.port}")

    def stop(self) -> None:
        """Stop the server (its buckets are gone when it starts again)."""
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            self._proc = None


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """A moto S3 server on a free loopback port, with dummy credentials in the environment."""
    server = MotoServer(free_port(), tmp_path_factory.mktemp("moto") / "moto.log")
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        patch.delenv("AWS_PROFILE", raising=False)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def s3_settings(moto: MotoServer, tmp_path: Path, request: pytest.FixtureRequest) -> RecordSettings:
    """Settings with an ``s3://`` root on a fresh bucket of the moto server."""
    bucket = f"records-{request.node.name.lower().replace('_', '-')[:40]}-{os.getpid()}"
    client = boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=bucket)
    return RecordSettings(root=f"s3://{bucket}/shadow", spool_dir=tmp_path / "spool", writer_id="w1",
                          s3_endpoint_url=moto.endpoint, s3_region="us-east-1", s3_retry_min_s=0.1,
                          s3_retry_max_s=0.5, s3_timeout_s=2.0)
