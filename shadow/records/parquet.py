# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Roll-over: a sealed journal segment becomes complete Parquet files, or nothing.

Each partition's rows go to ``<root>/<dataset>/decision_type=<t>/date=<d>/<writer_id>-<seq>.parquet``,
written aside as ``.<name>.tmp`` (a hidden name readers skip), fsynced, renamed into place and the
folder fsynced: a reader sees the whole file or none. ``seq`` is the segment's number, so publishing
the same segment again (after a crash between the renames and the segment's removal) writes the same
files with the same rows over themselves: never a duplicate. The segment is removed only afterwards.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from contracts.records import COMPRESSION, FORMAT_KEY, FORMAT_VALUE
from shadow.records import rows as rowlib
from shadow.records.segment_files import DROP, OUTCOME, PROPOSAL, fsync_dir, read_payloads, segment_seq

if TYPE_CHECKING:
    from pathlib import Path
from typing import BinaryIO

DATASET_KINDS = {PROPOSAL: "proposals", OUTCOME: "outcomes", DROP: "drops"}
"""The frame kinds a roll-over publishes, and their datasets (accept marks are not published)."""


@dataclass
class Published:
    """What publishing one segment produced."""

    files: list[Path] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=lambda: {"proposals": 0, "outcomes": 0, "drops": 0})
    torn_bytes: int = 0

    @property
    def bytes(self) -> int:
        """Total size of the files written."""
        return sum(p.stat().st_size for p in self.files)


def _create(path: Path) -> BinaryIO:
    """Open ``path`` for writing, making its folder; again if the uploader pruned it meanwhile."""
    for _ in range(3):
        private_folder(path.parent)
        try:
            return open(path, "wb", opener=_private)
        except FileNotFoundError:  # the folder was removed as empty between mkdir and open
            continue
    return open(path, "wb", opener=_private)


def private_folder(folder: Path) -> None:
    """Make ``folder`` and each missing parent 0700 (``mkdir(parents=True)`` gives parents the default)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        each.mkdir(mode=0o700, exist_ok=True)


def _private(path: str, flags: int) -> int:
    """Files of records are the owner's only (0600): they hold states, ids and outcomes."""
    return os.open(path, flags, 0o600)


def write_atomic(table: pa.Table, target: Path, metadata: dict[bytes, bytes] | None = None) -> None:
    """Write ``table`` to ``target`` so that no reader ever sees a partial file."""
    tmp = target.with_name(f".{target.name}.tmp")
    schema_meta = {**(table.schema.metadata or {}), FORMAT_KEY: FORMAT_VALUE, **(metadata or {})}
    with _create(tmp) as fh:
        pq.write_table(table.replace_schema_metadata(schema_meta), fh, compression=COMPRESSION)
        fh.flush()
        os.fsync(fh.fileno())
    tmp.replace(target)
    fsync_dir(target.parent)


def publish_segment(segment: Path, local_root: Path, writer_id: str) -> Published:
    """Write every row of ``segment`` into its partition's file under ``local_root``.

    Once the segment's tables are freed, Arrow's pool gives their memory back (`release_arrow_memory`).
    """
    try:
        return _publish(segment, local_root, writer_id)
    finally:
        release_arrow_memory()


def _publish(segment: Path, local_root: Path, writer_id: str) -> Published:
    payloads, torn_bytes = read_payloads(segment, DATASET_KINDS)
    seq = segment_seq(segment)
    result = Published(torn_bytes=torn_bytes)
    for kind, dataset in DATASET_KINDS.items():
        read = payloads.pop(kind)  # each kind's lines are freed once its table is written
        result.rows[dataset] = read.count
        if not read.count:
            continue
        table = rowlib.table_from_json(dataset, read.lines.getvalue(), read.longest)
        del read
        for part, part_table in rowlib.partitioned(dataset, table).items():
            target = local_root / part / f"{writer_id}-{seq:016d}.parquet"
            write_atomic(part_table, target)
            result.files.append(target)
    return result


def release_arrow_memory() -> None:
    """Give the memory Arrow's pool freed back to the system (call it from the thread that used it).

    Arrow's default pool (mimalloc, or jemalloc) keeps what a roll-over freed for its next use:
    about the size of the segment's tables (30 MB for a 12 MB segment), held for good and counted
    in the sidecar's RSS between roll-overs (``docs/sidecar.md``, Memory bound).
    """
    pa.default_memory_pool().release_unused()


def remove_segment(segment: Path) -> None:
    """Delete a published segment, durably."""
    segment.unlink(missing_ok=True)
    fsync_dir(segment.parent)
