# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Reading the records root: which files a reader should see, on a local folder or on S3.

Compaction (``compact.py``) replaces a partition's small files by one ``compact-<seq>.parquet`` file
whose Parquet metadata (``semif.replaces``) names every file it replaces. The reading rule: **a file
named in a present compact file's ``semif.replaces`` is hidden**. With that rule a reader never sees a
row twice or misses one, at any moment of a compaction (the merged file is complete before any source
is deleted, and the sources are deleted after a grace period). ``visible_files`` applies the rule;
``open_dataset`` gives a ``pyarrow.dataset`` over the visible files that DuckDB can scan directly.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from shadow.records.rows import DATASETS

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings

REPLACES_KEY: Final = b"semif.replaces"
COMPACT_PREFIX: Final = "compact-"


@dataclass(frozen=True)
class DataFile:
    """One Parquet file under the root."""

    path: str
    size: int
    mtime_s: float

    @property
    def name(self) -> str:
        """The file name."""
        return PurePosixPath(self.path).name

    @property
    def folder(self) -> str:
        """The partition folder holding the file."""
        return str(PurePosixPath(self.path).parent)


def filesystem(settings: RecordSettings) -> tuple[pafs.FileSystem, str]:
    """The Arrow filesystem and base path of the settings' root."""
    if not settings.is_s3:
        return pafs.LocalFileSystem(), str(settings.local_root().resolve())
    bucket, prefix = settings.s3_location()
    endpoint = settings.s3_endpoint_url or ""
    fs = pafs.S3FileSystem(endpoint_override=endpoint.split("://", 1)[-1] or None,
                           scheme="http" if endpoint.startswith("http://") else "https",
                           region=settings.s3_region or "us-east-1")
    return fs, f"{bucket}/{prefix}".rstrip("/")


def data_files(fs: pafs.FileSystem, folder: str, *, recursive: bool = True) -> list[DataFile]:
    """Every finished Parquet file under ``folder`` (hidden ``.``/``_`` names are work in progress)."""
    selector = pafs.FileSelector(folder, recursive=recursive, allow_not_found=True)
    return sorted((DataFile(i.path, i.size or 0, i.mtime.timestamp() if i.mtime else 0.0)
                   for i in fs.get_file_info(selector)
                   if i.type == pafs.FileType.File and i.base_name.endswith(".parquet")
                   and not i.base_name.startswith((".", "_"))), key=lambda f: f.path)


def replaced_by(fs: pafs.FileSystem, file: DataFile) -> list[str]:
    """The file names a compact file replaces (empty for an ordinary file)."""
    if not file.name.startswith(COMPACT_PREFIX):
        return []
    with fs.open_input_file(file.path) as fh:
        metadata = pq.read_schema(fh).metadata or {}
    names: Any = json.loads(metadata.get(REPLACES_KEY, b"[]"))
    return [str(n) for n in names]


def split_visible(fs: pafs.FileSystem, files: list[DataFile]) -> tuple[list[DataFile], dict[str, DataFile]]:
    """``(visible, hidden)``: hidden maps a hidden file's path to the compact file covering it."""
    covering: dict[str, dict[str, DataFile]] = defaultdict(dict)
    for file in files:
        for name in replaced_by(fs, file):
            covering[file.folder][name] = file
    visible = [f for f in files if f.name not in covering[f.folder]]
    hidden = {f.path: covering[f.folder][f.name] for f in files if f.name in covering[f.folder]}
    return visible, hidden


def visible_files(fs: pafs.FileSystem, base: str, dataset: str) -> list[str]:
    """The paths a reader of ``dataset`` must read: each row exactly once."""
    visible, _ = split_visible(fs, data_files(fs, f"{base}/{dataset}"))
    return [f.path for f in visible]


def open_dataset(settings: RecordSettings, dataset: str) -> pads.Dataset:
    """A ``pyarrow.dataset`` over the visible files of ``dataset`` (Hive partitions as columns)."""
    fs, base = filesystem(settings)
    keys = pa.schema([("decision_type", pa.string()), ("date", pa.date32())])
    partitioning = pads.partitioning(keys, flavor="hive")
    schema = DATASETS[dataset].append(pa.field("date", pa.date32()))
    return pads.dataset(visible_files(fs, base, dataset), schema=schema, filesystem=fs,
                        format="parquet", partitioning=partitioning, partition_base_dir=f"{base}/{dataset}")
