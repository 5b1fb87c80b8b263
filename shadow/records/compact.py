# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Small-file compaction: merge a partition's small files into one, never a duplicate or a gap.

One run over a partition:

1. Clean-up: files hidden by a compact file (``layout.py``'s reading rule) whose compact file is older
   than ``grace_s`` are deleted (readers that listed before the merge had that long to finish).
2. Merge: the visible files smaller than ``max_file_bytes`` and older than ``min_age_s`` (so a writer
   that republishes a segment after a crash is long done with it), if two or more, are read and written
   as one ``compact-<seq>.parquet`` whose metadata names every file it replaces, transitively. It is
   written aside and renamed (local) or uploaded whole (S3, through the store's `S3Uploader`: the same
   encryption and S3-verified checksums as every other write): from that instant the sources are hidden.
3. With ``grace_s == 0`` the sources are deleted at once.

At every instant a reader following the rule sees each row once. Run one compaction per root at a
time: on a local root a lock file enforces it; on S3 the operator must (one scheduled job).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from contracts.records import ADDED_AFTER_V1, COMPRESSION, FORMAT_KEY, FORMAT_VALUE
from shadow.records.errors import CompactionError
from shadow.records.layout import (
    COMPACT_PREFIX,
    REPLACES_KEY,
    DataFile,
    data_files,
    replaced_by,
    split_visible,
)
from shadow.records.parquet import write_atomic
from shadow.records.rows import DATASETS

if TYPE_CHECKING:
    from collections.abc import Iterator

    from shadow.records.s3 import S3Uploader

DEFAULT_MIN_AGE_S = 600.0
DEFAULT_GRACE_S = 300.0
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024


@dataclass
class CompactResult:
    """What one compaction run did."""

    merged: list[str] = field(default_factory=list)
    sources: int = 0
    rows: int = 0
    deleted: int = 0


@dataclass(frozen=True)
class CompactPolicy:
    """Which files a run merges and when it deletes what it replaced."""

    min_age_s: float = DEFAULT_MIN_AGE_S
    grace_s: float = DEFAULT_GRACE_S
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES


def partitions(fs: pafs.FileSystem, base: str, dataset: str) -> list[str]:
    """Every partition folder of ``dataset`` that holds data files."""
    return sorted({f.folder for f in data_files(fs, f"{base}/{dataset}")})


@contextlib.contextmanager
def root_lock(fs: pafs.FileSystem, base: str) -> Iterator[None]:
    """One compaction at a time on a local root (a no-op on S3: see the module docstring)."""
    if not isinstance(fs, pafs.LocalFileSystem):
        yield
        return
    lock_path = Path(base) / ".compact.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise CompactionError(f"another compaction holds {lock_path}") from exc
        yield


def compact_partition(fs: pafs.FileSystem, folder: str, dataset: str, policy: CompactPolicy,
                      upload: Upload | None = None) -> CompactResult:
    """One compaction run over one partition folder (see the module docstring)."""
    result = CompactResult()
    now = time.time()
    files = data_files(fs, folder, recursive=False)
    visible, hidden = split_visible(fs, files)
    for path, cover in hidden.items():
        if now - cover.mtime_s >= policy.grace_s:
            _delete(fs, path, upload)
            result.deleted += 1
    sources = [f for f in visible if f.size < policy.max_file_bytes and now - f.mtime_s >= policy.min_age_s]
    if len(sources) < 2:
        return result
    replaces = sorted({name for f in sources for name in (f.name, *replaced_by(fs, f))})
    table = pa.concat_tables([_read(fs, f, dataset) for f in sources])
    target = f"{folder}/{COMPACT_PREFIX}{time.time_ns() // 1000:016d}.parquet"
    _write(fs, table, target, {REPLACES_KEY: json.dumps(replaces).encode()}, upload)
    result.merged.append(target)
    result.sources, result.rows = len(sources), table.num_rows
    if policy.grace_s <= 0:
        for f in sources:
            _delete(fs, f.path, upload)
        result.deleted += len(sources)
    return result


def _read(fs: pafs.FileSystem, file: DataFile, dataset: str) -> pa.Table:
    with fs.open_input_file(file.path) as fh:
        table = pq.read_table(fh)
    return conform(table, dataset, file.path)


def conform(table: pa.Table, dataset: str, where: str) -> pa.Table:
    """``table`` in the records v1.2 ``dataset`` schema: an older file gets the columns added since null.

    Anything else that differs from the schema is a `CompactionError` naming ``where``.
    """
    schema = DATASETS[dataset]
    missing = [f for f in schema if f.name not in table.schema.names]
    if missing and {f.name for f in missing} <= ADDED_AFTER_V1[dataset]:
        for column in missing:
            table = table.append_column(column, pa.nulls(table.num_rows, column.type))
        table = table.select(schema.names)
    if not table.schema.equals(schema, check_metadata=False):
        raise CompactionError(f"{where} does not have the records {dataset} schema")
    return table.replace_schema_metadata(None)


@dataclass(frozen=True)
class Upload:
    """How a merged file reaches an S3 root: the store's uploader, and the root's ``bucket/prefix``."""

    uploader: S3Uploader
    base: str


def _delete(fs: pafs.FileSystem, path: str, upload: Upload | None) -> None:
    """Delete one file; on S3 through the uploader (pyarrow would leave an unencrypted folder marker)."""
    if upload is None:
        fs.delete_file(path)
    else:
        upload.uploader.delete(path.removeprefix(upload.base).lstrip("/"))


def _write(fs: pafs.FileSystem, table: pa.Table, target: str, metadata: dict[bytes, bytes],
           upload: Upload | None) -> None:
    if isinstance(fs, pafs.LocalFileSystem):
        write_atomic(table, Path(target), metadata)
        return
    if upload is None:
        raise CompactionError("compaction on S3 writes through the S3Uploader (encryption, checksums)")
    table = table.replace_schema_metadata({FORMAT_KEY: FORMAT_VALUE, **metadata})
    with tempfile.TemporaryDirectory(prefix="semif-compact-") as tmp:
        local = Path(tmp) / "merged.parquet"
        pq.write_table(table, local, compression=COMPRESSION)
        upload.uploader.upload(local, target.removeprefix(upload.base).lstrip("/"))  # appears whole


def compact_root(fs: pafs.FileSystem, base: str, policy: CompactPolicy, only: str | None = None,
                 uploader: S3Uploader | None = None) -> list[tuple[str, CompactResult]]:
    """Compact every partition of both datasets (or the ``only`` folder, relative to the root).

    On an S3 root, ``uploader`` (``S3Uploader(settings)``) writes the merged files.
    """
    upload = Upload(uploader, base) if uploader is not None else None
    done: list[tuple[str, CompactResult]] = []
    with root_lock(fs, base):
        for dataset in DATASETS:
            for folder in partitions(fs, base, dataset):
                relative = folder.removeprefix(base).strip("/")
                if only is not None and relative != only.strip("/"):
                    continue
                done.append((relative, compact_partition(fs, folder, dataset, policy, upload)))
    return done
