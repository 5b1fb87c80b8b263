# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Small-file compaction: one file per partition, and no duplicate or gap at any moment."""

from __future__ import annotations

import collections
import fcntl
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from contracts.records import ADDED_IN_V1_1, PROPOSALS
from shadow.records.compact import CompactPolicy, compact_root, conform
from shadow.records.errors import CompactionError
from shadow.records.layout import data_files, filesystem, open_dataset, split_visible
from shadow.records.s3 import S3Uploader
from shadow.records.store import RecordStore

from .factories import outcome_row, proposal_row

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings

NOW = CompactPolicy(min_age_s=0.0, grace_s=3600.0)


async def _many_small_files(settings: RecordSettings, start: int, count: int) -> None:
    async with RecordStore(settings.model_copy(update={"roll_bytes": 4096})) as store:
        for i in range(start, start + count):
            await store.proposal(proposal_row(f"d{i}"))
            await store.outcome(outcome_row(f"d{i}"))  # a commit each time: many segments


def _ids(settings: RecordSettings, dataset: str = "proposals") -> list[str]:
    table = open_dataset(settings, dataset).to_table(columns=["decision_id"])
    return sorted(table.column("decision_id").to_pylist())


def _partition_files(settings: RecordSettings) -> list[Path]:
    return sorted((Path(settings.root) / "proposals").rglob("*.parquet"))


async def test_compaction_merges_a_partition_and_deletes_sources_after_the_grace(
        local_settings: RecordSettings) -> None:
    """Many small files become one compact file; sources stay hidden until the grace, then go."""
    await _many_small_files(local_settings, 0, 40)
    before = _partition_files(local_settings)
    assert len(before) >= 3  # how many depends on when roll-overs ran; any 2+ make the point
    expected = sorted(f"d{i}" for i in range(40))
    fs, base = filesystem(local_settings)
    done = dict(compact_root(fs, base, NOW))
    merged = done["proposals/decision_type=route/date=2026-11-30"]
    assert (merged.sources, merged.rows, merged.deleted) == (len(before), 40, 0)
    assert _ids(local_settings) == expected
    assert _ids(local_settings, "outcomes") == expected
    visible, hidden = split_visible(fs, data_files(fs, f"{base}/proposals"))
    assert [Path(f.path).name.startswith("compact-") for f in visible] == [True]
    assert len(hidden) == len(before)
    compact_root(fs, base, CompactPolicy(min_age_s=0.0, grace_s=0.0))
    assert len(_partition_files(local_settings)) == 1
    assert _ids(local_settings) == expected


async def test_every_intermediate_state_shows_each_row_once(local_settings: RecordSettings) -> None:
    """Merged file present with any subset of its sources still on disk: readers see each row once."""
    await _many_small_files(local_settings, 0, 30)
    sources = _partition_files(local_settings)
    expected = sorted(f"d{i}" for i in range(30))
    fs, base = filesystem(local_settings)
    compact_root(fs, base, NOW, only="proposals/decision_type=route/date=2026-11-30")
    for source in sources:  # the deletion phase, one file at a time
        source.unlink()
        assert _ids(local_settings) == expected


async def test_recompaction_covers_earlier_compact_files_transitively(local_settings: RecordSettings) -> None:
    """A second run merges the first compact file with new files; everything it covered stays hidden."""
    fs, base = filesystem(local_settings)
    await _many_small_files(local_settings, 0, 20)
    compact_root(fs, base, NOW)
    await _many_small_files(local_settings, 20, 20)
    compact_root(fs, base, NOW)
    visible, hidden = split_visible(fs, data_files(fs, f"{base}/proposals"))
    assert len(visible) == 1
    assert len(hidden) == len(_partition_files(local_settings)) - 1
    assert _ids(local_settings) == sorted(f"d{i}" for i in range(40))


async def test_concurrent_readers_never_see_a_duplicate_or_a_gap(local_settings: RecordSettings) -> None:
    """Readers racing a writer and compactions: never a row twice, never a published row missing.

    A reader thread reads all the time while a writer adds files and compactions merge and delete;
    every completed read holds each row at most once and every row published before it began.
    """
    fs, base = filesystem(local_settings)
    published: list[str] = []
    stop, reads, bad = threading.Event(), collections.Counter[str](), []

    def reader() -> None:
        while not stop.is_set():
            known = set(published)
            try:
                ids = _ids(local_settings)
            except OSError:  # a source deleted between listing and reading (grace 0): an error, not a lie
                reads["retried"] += 1
                continue
            reads["ok"] += 1
            if len(ids) != len(set(ids)) or not known <= set(ids):
                bad.append((len(ids), len(set(ids)), len(known - set(ids))))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for round_ in range(4):
            await _many_small_files(local_settings, 100 * round_, 25)
            published.extend(f"d{i}" for i in range(100 * round_, 100 * round_ + 25))
            compact_root(fs, base, CompactPolicy(min_age_s=0.0, grace_s=0.0))
    finally:
        stop.set()
        thread.join()
    assert reads["ok"] >= 1
    assert bad == []
    assert _ids(local_settings) == sorted(published)
    assert len(_partition_files(local_settings)) == 1


def test_one_compaction_at_a_time(local_settings: RecordSettings) -> None:
    """A second compaction on the same local root is refused while the first holds the lock."""
    fs, base = filesystem(local_settings)
    lock_path = Path(base) / ".compact.lock"
    lock_path.parent.mkdir(parents=True)
    with lock_path.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(CompactionError):
            compact_root(fs, base, NOW)


async def test_compaction_on_s3(s3_settings: RecordSettings) -> None:
    """On an s3:// root the merged object is uploaded whole and the sources deleted."""
    await _many_small_files(s3_settings, 0, 30)
    fs, base = filesystem(s3_settings)
    expected = sorted(f"d{i}" for i in range(30))
    files_before = len(data_files(fs, f"{base}/proposals"))
    assert files_before >= 3
    compact_root(fs, base, CompactPolicy(min_age_s=0.0, grace_s=0.0), uploader=S3Uploader(s3_settings))
    assert len(data_files(fs, f"{base}/proposals")) == 1
    assert _ids(s3_settings) == expected


def test_files_from_before_v1_1_are_compacted_with_their_added_columns_null() -> None:
    """A v1 file (without candidate, normalization, model_identity...) compacts beside v1.1 files.

    Its rows keep every v1 value and read null in the columns v1.1 added; a file off the schema in any
    other way is still refused.
    """
    v1_1 = pa.Table.from_pylist([{"decision_id": "d1", "decision_type": "t", "candidate": "default",
                                  "record_version": 2}], schema=PROPOSALS)
    v1 = v1_1.drop_columns(sorted(ADDED_IN_V1_1["proposals"]))
    both = pa.concat_tables([conform(v1_1, "proposals", "new"), conform(v1, "proposals", "old")])
    assert both.column("candidate").to_pylist() == ["default", None]
    assert both.schema.equals(PROPOSALS)
    with pytest.raises(CompactionError, match="broken"):
        conform(v1.drop_columns(["status"]), "proposals", "broken")
