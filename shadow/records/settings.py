"""SHADOW_RECORDS_* settings: one class, built once by the command line and passed in (tests build it).

The sidecar holds it as ``ShadowSettings.records``; ``semif-shadow records`` builds it alone. Both read
the same variables with the same defaults, so ``records stats`` after ``sidecar run`` finds the files.
"""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MIB = 1024 * 1024

DEFAULT_ROLL_BYTES = 32 * MIB
DEFAULT_ROLL_SECONDS = 60.0
DEFAULT_GROUP_COMMIT_MS = 2.0
DEFAULT_MAX_LOCAL_BYTES = 2048 * MIB
DEFAULT_MULTIPART_BYTES = 16 * MIB
DEFAULT_ROOT = "shadow-records"
DEFAULT_SPOOL = Path("shadow-spool")
WRITER_ID_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"


def default_writer_id() -> str:
    """The host name, in the characters file names allow: stable across restarts of the same host.

    A restarted writer keeps its id, so recovery republishes a segment under the same file names
    (``<writer_id>-<seq>.parquet``) and never as a second copy.
    """
    name = re.sub(r"[^A-Za-z0-9._-]", "_", socket.gethostname())[-64:]
    return name or "writer"


class RecordSettings(BaseSettings):
    """Where and how records are kept. Every field is also a ``SHADOW_RECORDS_<NAME>`` variable."""

    model_config = SettingsConfigDict(env_prefix="SHADOW_RECORDS_", extra="ignore")

    root: str = Field(default=DEFAULT_ROOT, description="local folder or s3://bucket/prefix (Parquet files)")
    spool_dir: Path = Field(default=DEFAULT_SPOOL, description="local journal and staging folder")
    writer_id: str = Field(default_factory=default_writer_id, pattern=WRITER_ID_PATTERN,
                           description="names this writer's files (<writer_id>-<seq>.parquet)")
    config_sha256: str | None = Field(default=None, description="written on lost rows recovery creates")
    fsync: Literal["group", "always", "none"] = Field(
        default="group", description="group: one fsync per commit; always: one per record; none: never")
    group_commit_ms: float = Field(default=DEFAULT_GROUP_COMMIT_MS, ge=0, le=100,
                                   description="longest a record waits for its group's fsync to start")
    buffer_bytes: int = Field(default=4 * MIB, ge=4096, description="unflushed bytes before writers wait")
    roll_bytes: int = Field(default=DEFAULT_ROLL_BYTES, ge=4096, description="segment size that rolls over")
    roll_seconds: float = Field(default=DEFAULT_ROLL_SECONDS, gt=0, description="segment age that rolls over")
    max_local_bytes: int = Field(default=DEFAULT_MAX_LOCAL_BYTES, ge=0,
                                 description="spool disk bound; beyond it accept() raises SinkFull")
    s3_endpoint_url: str | None = Field(default=None, description="S3 API endpoint (moto, MinIO); unset: AWS")
    s3_region: str | None = Field(default=None, description="S3 region")
    s3_sse: Literal["AES256", "aws:kms", "none"] = Field(default="AES256",
                                                         description="server-side encryption")
    s3_sse_kms_key_id: str | None = Field(default=None, description="KMS key for s3_sse=aws:kms")
    s3_multipart_bytes: int = Field(default=DEFAULT_MULTIPART_BYTES, ge=5 * MIB,
                                    description="files this large go up in parts of this size")
    s3_timeout_s: float = Field(default=10.0, gt=0, description="connect and read timeout per S3 call")
    s3_retry_min_s: float = Field(default=0.5, gt=0, description="first wait after a failed upload")
    s3_retry_max_s: float = Field(default=30.0, gt=0, description="longest wait between upload retries")

    @property
    def is_s3(self) -> bool:
        """Whether the root is an S3 URL (files are staged locally, then uploaded)."""
        return self.root.startswith("s3://")

    def s3_location(self) -> tuple[str, str]:
        """``(bucket, prefix)`` of an ``s3://bucket/prefix`` root (prefix without slashes at the ends)."""
        bucket, _, prefix = self.root.removeprefix("s3://").partition("/")
        return bucket, prefix.strip("/")

    @property
    def journal_dir(self) -> Path:
        """Journal segments (``<seq>.wal``)."""
        return self.spool_dir / "journal"

    @property
    def staging_dir(self) -> Path:
        """Parquet files waiting for upload (S3 root only), laid out as under the root."""
        return self.spool_dir / "staging"

    def local_root(self) -> Path:
        """Where finished files are published: the root itself, or the staging folder for S3."""
        return self.staging_dir if self.is_s3 else Path(self.root)
