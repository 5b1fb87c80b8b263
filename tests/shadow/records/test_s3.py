# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Upload to S3 against moto's server on loopback: whole files, multipart, retry, the disk bound."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import io
import os
import threading
import time
from typing import TYPE_CHECKING, Any

import boto3
import pyarrow.parquet as pq
import pytest

from shadow.records.compact import CompactPolicy, compact_root
from shadow.records.errors import SinkFull
from shadow.records.layout import filesystem, open_dataset
from shadow.records.parquet import Published, publish_segment
from shadow.records.s3 import S3Uploader, staged_files
from shadow.records.store import RecordStore

from .factories import BASE_US, OPTIONS, outcome_row, proposal_row

if TYPE_CHECKING:
    from pathlib import Path

    from shadow.records.settings import RecordSettings
    from tests.harness import MotoServer


def _client(settings: RecordSettings) -> Any:
    return boto3.client("s3", endpoint_url=settings.s3_endpoint_url, region_name="us-east-1")


def _keys(settings: RecordSettings) -> list[str]:
    bucket, prefix = settings.s3_location()
    listing = _client(settings).list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in listing.get("Contents", []))


async def _until(predicate: Any, timeout_s: float = 30.0, store: RecordStore | None = None) -> None:
    for _ in range(int(timeout_s / 0.05)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    state = f": {store.stats}, staged {staged_files(store.settings.staging_dir)}" if store else ""
    raise AssertionError(f"condition not reached in time{state}")


async def test_files_go_up_whole_encrypted_and_leave_the_spool(s3_settings: RecordSettings) -> None:
    """Files land at prefix/<partition>/w1-<seq>.parquet, encrypted, whole, then leave the spool.

    Each is readable through the reading helper, and its staged copy is deleted once uploaded.
    """
    async with RecordStore(s3_settings) as store:
        for i in range(20):
            await store.accept(f"d{i}", "route", BASE_US, OPTIONS)
            await store.proposal(proposal_row(f"d{i}"))
            await store.outcome(outcome_row(f"d{i}"))
    keys = _keys(s3_settings)
    assert [k.rsplit("/", 1)[0] for k in keys] == ["shadow/outcomes/decision_type=route/date=2026-11-30",
                                                   "shadow/proposals/decision_type=route/date=2026-11-30"]
    bucket, _ = s3_settings.s3_location()
    head = _client(s3_settings).head_object(Bucket=bucket, Key=keys[1])
    assert head["ServerSideEncryption"] == "AES256"
    body = _client(s3_settings).get_object(Bucket=bucket, Key=keys[1])["Body"].read()
    assert head["ETag"].strip('"') == hashlib.md5(body, usedforsecurity=False).hexdigest()
    assert pq.read_table(io.BytesIO(body)).num_rows == 20
    assert open_dataset(s3_settings, "proposals").count_rows() == 20
    assert staged_files(s3_settings.staging_dir) == []
    assert [p for p in s3_settings.staging_dir.rglob("*") if p.is_dir()] == []  # no empty folders left
    assert store.stats.uploads == 2


def test_large_files_go_up_in_parts(s3_settings: RecordSettings, tmp_path: Path) -> None:
    """A file over s3_multipart_bytes is sent as a multipart upload; its ETag (MD5 of part MD5s) checks."""
    settings = s3_settings.model_copy(update={"s3_multipart_bytes": 5 * 1024 * 1024})
    path = tmp_path / "big.parquet"
    data = os.urandom(11 * 1024 * 1024)
    path.write_bytes(data)
    key = S3Uploader(settings).upload(path, "proposals/big.parquet")
    bucket, _ = settings.s3_location()
    head = _client(settings).head_object(Bucket=bucket, Key=key)
    assert head["ETag"].strip('"').endswith("-3")
    assert head["ContentLength"] == len(data)
    assert _client(settings).get_object(Bucket=bucket, Key=key)["Body"].read() == data


async def test_uploads_are_retried_while_s3_is_down(s3_settings: RecordSettings, moto: MotoServer) -> None:
    """With the server stopped, files stay staged and errors are counted; once it is back, they go up."""
    settings = s3_settings.model_copy(update={"roll_seconds": 0.1})
    bucket, _ = settings.s3_location()
    async with RecordStore(settings) as store:
        moto.stop()
        try:
            for i in range(5):
                await store.outcome(outcome_row(f"d{i}"))
                await asyncio.sleep(0.15)
            await _until(lambda: store.stats.upload_errors >= 2 and staged_files(settings.staging_dir),
                         store=store)
            assert store.stats.staged_bytes > 0
        finally:
            moto.start()
            _client(settings).create_bucket(Bucket=bucket)
        # the staged file goes first, the byte count right after: wait for both
        await _until(lambda: not staged_files(settings.staging_dir) and store.stats.staged_bytes == 0,
                     store=store)
    keys = _keys(settings)
    assert keys
    rows = sum(pq.read_table(io.BytesIO(_client(settings).get_object(Bucket=bucket, Key=k)["Body"].read()))
               .num_rows for k in keys)
    assert rows == 5


async def test_a_file_is_counted_before_the_uploader_can_take_it(s3_settings: RecordSettings,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The uploader never lists a staged file before its bytes are counted.

    Publishing is held after the files are written until the uploader has taken them (2 s at most).
    Were the uploader free to list them then, it would upload and delete them uncounted: the late
    count would then fail (the files are gone) or leave ``staged_bytes`` above zero with nothing staged.
    """
    settings = s3_settings.model_copy(update={"roll_seconds": 0.1})
    def publish_then_hold(*args: Any) -> Any:
        published = publish_segment(*args)
        deadline = time.monotonic() + 2.0
        while staged_files(settings.staging_dir) and time.monotonic() < deadline:
            time.sleep(0.02)
        return published

    monkeypatch.setattr("shadow.records.store.publish_segment", publish_then_hold)
    async with RecordStore(settings) as store:
        await store.outcome(outcome_row("d0"))
        await _until(lambda: store.stats.uploads == 1)
        assert store.stats.staged_bytes == 0
        assert store.stats.publish_errors == 0
    assert staged_files(settings.staging_dir) == []
    assert open_dataset(settings, "outcomes").count_rows() == 1


async def test_an_upload_finishing_while_new_files_are_counted_is_not_lost(
        s3_settings: RecordSettings, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upload that ends while a roll-over is counting its new files still takes its bytes off.

    A file staged before the start is held in its upload until the roll-over starts counting; the
    count is then held until that upload is done. Both changes reach ``staged_bytes``, which ends at
    zero with nothing staged.
    """
    settings = s3_settings.model_copy(update={"roll_seconds": 0.1})
    early = settings.staging_dir / "outcomes" / "decision_type=route" / "w0-0000000000000000.parquet"
    early.parent.mkdir(parents=True)
    early.write_bytes(b"x" * 1000)
    counting = threading.Event()
    stores: list[RecordStore] = []

    class HeldUploader(S3Uploader):
        def upload(self, path: Path, relative: str) -> str:
            if path == early:
                counting.wait(5.0)
            return super().upload(path, relative)

    def held_bytes(published: Published) -> int:
        counting.set()
        deadline = time.monotonic() + 5.0
        while stores[0].stats.uploads == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        return sum(p.stat().st_size for p in published.files)

    monkeypatch.setattr(Published, "bytes", property(held_bytes))
    async with RecordStore(settings, HeldUploader(settings)) as store:
        stores.append(store)
        assert store.stats.staged_bytes == 1000
        await store.outcome(outcome_row("d0"))
        await _until(lambda: store.stats.uploads == 2 and not staged_files(settings.staging_dir),
                     store=store)
        assert counting.is_set()
        assert store.stats.staged_bytes == 0


async def test_the_disk_bound_drops_new_decisions_but_keeps_outcomes(s3_settings: RecordSettings) -> None:
    """Past max_local_bytes new decisions get SinkFull while outcomes are still taken.

    The refusal is counted; once S3 drains the spool, decisions are accepted again.
    """
    bucket = "not-created-yet"
    settings = s3_settings.model_copy(update={"root": f"s3://{bucket}/p", "roll_bytes": 4096,
                                              "roll_seconds": 0.1, "max_local_bytes": 20_000})
    async with RecordStore(settings) as store:
        accepted = 0
        with pytest.raises(SinkFull):  # noqa: PT012  (fill the spool until the bound trips)
            for i in range(2000):
                await store.accept(f"d{i}", "route", BASE_US, OPTIONS)
                await store.proposal(proposal_row(f"d{i}"))
                accepted += 1
                if i % 10 == 0:
                    await asyncio.sleep(0.01)
        assert 0 < accepted < 2000
        assert store.stats.disk_full == 1
        assert store.stats.local_bytes >= settings.max_local_bytes
        await store.outcome(outcome_row("d0"))  # outcomes keep priority
        _client(settings).create_bucket(Bucket=bucket)
        await _until(lambda: store.stats.local_bytes < settings.max_local_bytes)
        await store.accept("again", "route", BASE_US, OPTIONS)
        await store.proposal(proposal_row("again"))
    assert open_dataset(settings, "proposals").count_rows() == accepted + 1


async def test_sse_kms_on_every_write_path_with_s3_verified_checksums(s3_settings: RecordSettings) -> None:
    """With ``s3_sse=aws:kms`` and a KMS key, the store's uploads succeed and are KMS-encrypted.

    So are compaction's merged files and multipart uploads: every object written carries the key and
    the SHA-256 checksum S3 verified on the way in (stored with the object, equal to the content's),
    and the rows read back whole.
    """
    kms = boto3.client("kms", endpoint_url=s3_settings.s3_endpoint_url, region_name="us-east-1")
    key_id = kms.create_key(Description="records")["KeyMetadata"]["KeyId"]
    settings = s3_settings.model_copy(update={"s3_sse": "aws:kms", "s3_sse_kms_key_id": key_id,
                                              "roll_bytes": 4096})
    for start in (0, 10):  # two store runs: at least two files per partition to compact
        async with RecordStore(settings) as store:
            for i in range(start, start + 10):
                await store.accept(f"d{i}", "route", BASE_US, OPTIONS)
                await store.proposal(proposal_row(f"d{i}"))
                await store.outcome(outcome_row(f"d{i}"))
        assert store.stats.upload_errors == 0
    fs, base = filesystem(settings)
    merged = compact_root(fs, base, CompactPolicy(min_age_s=0.0, grace_s=0.0), uploader=S3Uploader(settings))
    assert all(result.merged for _, result in merged)
    big = settings.staging_dir / "big.parquet"
    big.parent.mkdir(parents=True, exist_ok=True)
    big.write_bytes(os.urandom(11 * 1024 * 1024))
    S3Uploader(settings.model_copy(update={"s3_multipart_bytes": 5 * 1024 * 1024})).upload(big, "big.parquet")
    bucket, _ = settings.s3_location()
    keys = _keys(settings)
    assert any("/compact-" in k for k in keys)
    for key in keys:
        head = _client(settings).head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
        assert head.get("ServerSideEncryption") == "aws:kms", key
        assert key_id in head.get("SSEKMSKeyId", ""), key
        assert head.get("ChecksumSHA256"), key
        if key.endswith("/big.parquet"):
            continue  # a multipart object's checksum is the checksum of its parts' checksums
        body = _client(settings).get_object(Bucket=bucket, Key=key)["Body"].read()
        assert head["ChecksumSHA256"] == base64.b64encode(hashlib.sha256(body).digest()).decode()
    assert sorted(open_dataset(settings, "proposals").to_table().column("decision_id").to_pylist()) == sorted(
        f"d{i}" for i in range(20))
