# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Small-file compaction: one file per partition, and no duplicate or gap at any moment."""

from __future__ import annotations

import collections
import fcntl
import itertools
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from contracts.records import ADDED_IN_V1_1, ADDED_IN_V1_2, OUTCOMES, PROPOSALS
from shadow.records.compact import CompactPolicy, compact_root, conform
from shadow.records.errors import CompactionError
from shadow.records.layout import data_files, filesystem, open_dataset, split_visible
from shadow.records.s3 import S3Uploader
from shadow.records.store import RecordStore

from .factories import outcome_row, proposal_row

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings

NOW = CompactPolicy(min_age_s=0.0, grace_s=3600.0)


SESSIONS = 3


async def _many_small_files(settings: RecordSettings, start: int, count: int) -> None:
    """Rows ``start`` .. ``start + count`` written in `SESSIONS` store sessions: at least that many files.

    Each session's close publishes its open segment, so the count does not hang on when the background
    roll-overs ran (within one session, 30 rows made 2 to 4 files from run to run).
    """
    per = -(-count // SESSIONS)
    for first in range(start, start + count, per):
        async with RecordStore(settings.model_copy(update={"roll_bytes": 4096})) as store:
            for i in range(first, min(first + per, start + count)):
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
    assert len(before) >= SESSIONS
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


async def test_every_intermediate_state_shows_each_row_once(local_settings: RecordSettings,
                                                           tmp_path: Path) -> None:
    """Merged file present with any subset of its sources still on disk: readers see each row once.

    Every subset, not one deletion order: the sources are set aside and each subset is linked back in
    turn (deletion may stop, or a reader may list, at any point and in any order).
    """
    await _many_small_files(local_settings, 0, 30)
    sources = _partition_files(local_settings)
    assert SESSIONS <= len(sources) <= 10, len(sources)  # 2^n states, each read once
    expected = sorted(f"d{i}" for i in range(30))
    fs, base = filesystem(local_settings)
    compact_root(fs, base, NOW, only="proposals/decision_type=route/date=2026-11-30")
    aside = tmp_path / "aside"
    aside.mkdir()
    for source in sources:
        source.rename(aside / source.name)
    for subset in itertools.product((False, True), repeat=len(sources)):
        present = [source for source, keep in zip(sources, subset, strict=True) if keep]
        for source in present:
            os.link(aside / source.name, source)
        assert _ids(local_settings) == expected, [source.name for source in present]
        for source in present:
            source.unlink()


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


class ReadGate:
    """Lets the compaction go on only once a reader has completed a read that began after its last step."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.step = 0  # mutations so far
        self.read_through = -1  # the latest step that a successful read began after
        self.stop = False

    def after_step(self) -> None:
        """Called by the compaction after each change on disk: wait for a read of the new state."""
        with self.changed:
            self.step += 1
            target = self.step
            assert self.changed.wait_for(lambda: self.read_through >= target or self.stop, timeout=60)


class GatedFileSystem(pafs.LocalFileSystem):
    """The local filesystem, with a successful read of the state before and after every delete."""

    def __init__(self, gate: ReadGate) -> None:
        super().__init__()
        self.gate = gate

    def delete_file(self, path: str) -> None:
        """Delete ``path`` between two observed states."""
        self.gate.after_step()
        super().delete_file(path)
        self.gate.after_step()


async def test_concurrent_readers_never_see_a_duplicate_or_a_gap(local_settings: RecordSettings) -> None:
    """Readers racing a writer and compactions: never a row twice, never a published row missing.

    A reader thread reads all the time while a writer adds files and compactions merge and delete. The
    compaction waits, before and after each delete, for a read that began after its last change to
    succeed, so every state on disk is read at least once; every completed read holds each row at most
    once and every row published before it began. A read may fail only because a file it listed was
    deleted under it (FileNotFoundError), and then the next one must succeed.
    """
    _, base = filesystem(local_settings)
    gate = ReadGate()
    fs = GatedFileSystem(gate)
    published: list[str] = []
    reads, bad = collections.Counter[str](), []

    def reader() -> None:
        while not gate.stop:
            known = set(published)
            with gate.changed:
                began = gate.step
            try:
                ids = _ids(local_settings)
            except FileNotFoundError:  # listed, then deleted (grace 0): an error, not a lie
                reads["retried"] += 1
                continue
            reads["ok"] += 1
            if len(ids) != len(set(ids)) or not known <= set(ids):
                bad.append((len(ids), len(set(ids)), len(known - set(ids))))
            with gate.changed:
                gate.read_through = max(gate.read_through, began)
                gate.changed.notify_all()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for round_ in range(4):
            await _many_small_files(local_settings, 100 * round_, 25)
            published.extend(f"d{i}" for i in range(100 * round_, 100 * round_ + 25))
            compact_root(fs, base, CompactPolicy(min_age_s=0.0, grace_s=0.0))
    finally:
        with gate.changed:
            gate.stop = True
            gate.changed.notify_all()
        thread.join()
    assert gate.step >= 4 * 2 * 2  # at least two sources deleted per round, each observed both sides
    assert gate.read_through == gate.step
    assert bad == []
    assert reads["retried"] <= gate.step  # a failed read is followed by a good one before the next change
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
    assert files_before >= SESSIONS
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


def test_outcomes_from_before_v1_2_are_compacted_with_null_audit_columns() -> None:
    """A v1.1 outcomes file (no ``auditor``, ``audit_sample``) compacts beside v1.2 audits, null in them."""
    row = {"decision_id": "d1", "decision_type": "t", "outcome": "a", "source": "audit", "auditor": "aud-1",
           "audit_sample": "s1", "record_version": 3}
    audit = pa.Table.from_pylist([row], schema=OUTCOMES)
    v1_1 = audit.drop_columns(sorted(ADDED_IN_V1_2["outcomes"]))
    both = pa.concat_tables([conform(audit, "outcomes", "new"), conform(v1_1, "outcomes", "old")])
    assert both.column("auditor").to_pylist() == ["aud-1", None]
    assert both.schema.equals(OUTCOMES)
