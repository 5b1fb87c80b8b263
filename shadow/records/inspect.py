# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""What ``records stats`` reports: the root as readers see it, and the spool's disk use."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from shadow.records.layout import data_files, filesystem, open_dataset, split_visible
from shadow.records.rows import DATASETS
from shadow.records.s3 import staged_files
from shadow.records.segment_files import list_segments

if TYPE_CHECKING:
    from pathlib import Path

    from shadow.records.settings import RecordSettings


def root_stats(settings: RecordSettings) -> dict[str, Any]:
    """Per dataset: visible and hidden files, rows (from the footers), bytes; lost rows by reason."""
    fs, base = filesystem(settings)
    out: dict[str, Any] = {"root": settings.root}
    for dataset in DATASETS:
        visible, hidden = split_visible(fs, data_files(fs, f"{base}/{dataset}"))
        rows = 0
        for file in visible:
            with fs.open_input_file(file.path) as fh:
                rows += pq.read_metadata(fh).num_rows
        out[dataset] = {"files": len(visible), "hidden_files": len(hidden), "rows": rows,
                        "bytes": sum(f.size for f in visible),
                        "partitions": len({f.folder for f in visible})}
    statuses = open_dataset(settings, "proposals").to_table(columns=["status", "reason"]).to_pylist()
    out["proposals"]["status"] = dict(Counter(r["status"] for r in statuses))
    out["proposals"]["lost"] = dict(Counter(r["reason"] for r in statuses if r["status"] == "lost"))
    return out


def _sizes(paths: list[Path]) -> list[int]:
    """The size of each file that still exists: a running store publishes and uploads while we list."""
    sizes = []
    for path in paths:
        try:
            sizes.append(path.stat().st_size)
        except FileNotFoundError:
            continue
    return sizes


def spool_stats(settings: RecordSettings) -> dict[str, Any]:
    """Journal segments and files waiting for upload, with their bytes (a snapshot of a live spool)."""
    segments = _sizes(list_segments(settings.journal_dir))
    staged = _sizes([path for path, _ in staged_files(settings.staging_dir)])
    return {"spool_dir": str(settings.spool_dir), "journal_segments": len(segments),
            "journal_bytes": sum(segments), "staged_files": len(staged), "staged_bytes": sum(staged)}
