# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Upload to S3: files go up whole, checked by S3 itself, encrypted, and leave the disk only then.

A file smaller than ``s3_multipart_bytes`` goes up in one ``PutObject``; a larger one as a multipart
upload. Every request carries the SHA-256 of its bytes (``x-amz-checksum-sha256``, with
``ChecksumAlgorithm=SHA256``: S3 computes it again and refuses the request with ``BadDigest`` if they
differ) and ``Content-MD5`` (checked the same way). The ETag is not compared: under SSE-KMS it is not
the MD5 of the content. The checksum S3 answers with is checked against the one sent. An object
appears only when complete, so readers never see a part. Every write (the store's uploads and
compaction's merged files) goes through `S3Uploader`, so the same encryption settings
(``s3_sse``, ``s3_sse_kms_key_id``) apply to each. The staged file is deleted only after the check.
When S3 is down the uploader keeps the files and retries with capped exponential back-off; the store's
disk bound protects the spool meanwhile.
"""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from shadow.records.errors import UploadFailed

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings


def make_client(settings: RecordSettings) -> Any:
    """A boto3 S3 client with short timeouts and no hidden retries (the uploader retries itself)."""
    config = Config(
        connect_timeout=settings.s3_timeout_s,
        read_timeout=settings.s3_timeout_s,
        retries={"total_max_attempts": 1},
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    return boto3.client(
        "s3", endpoint_url=settings.s3_endpoint_url, region_name=settings.s3_region, config=config
    )


def _b64(digest: bytes) -> str:
    return base64.b64encode(digest).decode("ascii")


def _md5(data: bytes) -> str:
    return _b64(hashlib.md5(data, usedforsecurity=False).digest())


class S3Uploader:
    """Puts staged files under ``s3://bucket/prefix/<relative path>``."""

    def __init__(self, settings: RecordSettings, client: Any | None = None) -> None:
        self._settings = settings
        self._bucket, self._prefix = settings.s3_location()
        self._client = client if client is not None else make_client(settings)

    def key_for(self, relative: str) -> str:
        """The object key of a file at ``relative`` under the staging folder."""
        return f"{self._prefix}/{relative}" if self._prefix else relative

    def _sse(self) -> dict[str, str]:
        if self._settings.s3_sse == "none":
            return {}
        args: dict[str, str] = {"ServerSideEncryption": self._settings.s3_sse}
        if self._settings.s3_sse == "aws:kms" and self._settings.s3_sse_kms_key_id:
            args["SSEKMSKeyId"] = self._settings.s3_sse_kms_key_id
        return args

    def upload(self, path: Path, relative: str) -> str:
        """Upload one file and check its ETag; returns the key. Raises ``UploadFailed``."""
        key = self.key_for(relative)
        try:
            if path.stat().st_size < self._settings.s3_multipart_bytes:
                self._put(path, key)
            else:
                self._multipart(path, key)
        except (BotoCoreError, ClientError, OSError) as exc:
            raise UploadFailed(f"upload of {relative} failed: {exc}") from exc
        return key

    def delete(self, relative: str) -> None:
        """Delete the object at ``relative`` (compaction's replaced files). Raises ``UploadFailed``."""
        try:
            self._client.delete_object(Bucket=self._bucket, Key=self.key_for(relative))
        except (BotoCoreError, ClientError) as exc:
            raise UploadFailed(f"delete of {relative} failed: {exc}") from exc

    def _put(self, path: Path, key: str) -> None:
        body = path.read_bytes()
        sha256 = _b64(hashlib.sha256(body).digest())
        reply = self._client.put_object(
            Bucket=self._bucket, Key=key, Body=body, ContentMD5=_md5(body), ChecksumAlgorithm="SHA256",
            ChecksumSHA256=sha256, **self._sse()
        )
        self._check_checksum(key, reply.get("ChecksumSHA256"), sha256)

    def _multipart(self, path: Path, key: str) -> None:
        created = self._client.create_multipart_upload(
            Bucket=self._bucket, Key=key, ChecksumAlgorithm="SHA256", **self._sse()
        )
        upload_id = created["UploadId"]
        try:
            parts = self._send_parts(path, key, upload_id)
            self._client.complete_multipart_upload(
                Bucket=self._bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
            )
        except Exception:
            self._client.abort_multipart_upload(Bucket=self._bucket, Key=key, UploadId=upload_id)
            raise

    def _send_parts(self, path: Path, key: str, upload_id: str) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        with path.open("rb") as fh:
            while chunk := fh.read(self._settings.s3_multipart_bytes):
                number = len(parts) + 1
                sha256 = _b64(hashlib.sha256(chunk).digest())
                reply = self._client.upload_part(
                    Bucket=self._bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=chunk,
                    ContentMD5=_md5(chunk), ChecksumAlgorithm="SHA256", ChecksumSHA256=sha256,
                )
                self._check_checksum(f"{key} part {number}", reply.get("ChecksumSHA256"), sha256)
                parts.append({"PartNumber": number, "ETag": reply["ETag"], "ChecksumSHA256": sha256})
        return parts

    @staticmethod
    def _check_checksum(what: str, answered: str | None, sent: str) -> None:
        """S3 verified ``sent`` before answering; an answer naming another checksum is a broken peer."""
        if answered is not None and answered != sent:
            raise UploadFailed(f"{what}: S3 answered checksum {answered}, not the one sent ({sent})")


def staged_files(staging_dir: Path) -> list[tuple[Path, str]]:
    """Finished files waiting for upload, oldest first, with their path relative to the staging folder."""
    if not staging_dir.is_dir():
        return []
    # os.walk skips folders that vanish while it lists (the uploader prunes empty partitions
    # concurrently); Path.rglob raised FileNotFoundError in that race.
    files = [
        Path(root) / name
        for root, _dirs, names in os.walk(staging_dir)
        for name in names
        if name.endswith(".parquet") and not name.startswith(".")
    ]
    files.sort(key=lambda p: p.name)
    return [(p, p.relative_to(staging_dir).as_posix()) for p in files]
