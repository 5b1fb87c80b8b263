# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Recovery on start: replay, torn tails, lost rows, and idempotence when recovery itself crashes."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from shadow.records import recovery
from shadow.records.layout import open_dataset
from shadow.records.parquet import publish_segment
from shadow.records.rows import normalize
from shadow.records.segment_files import PROPOSAL, SegmentFile, encode, list_segments
from shadow.records.store import RecordStore
from tests.shadow.records.harness import accept, crashed_journal

from .factories import OPTIONS, proposal_row

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings


def _proposals(settings: RecordSettings) -> dict[str, tuple[str, str | None]]:
    rows = open_dataset(settings, "proposals").to_table(columns=["decision_id", "status", "reason"])
    pairs = [(r["decision_id"], (r["status"], r["reason"])) for r in rows.to_pylist()]
    assert len(pairs) == len(dict(pairs)), "a proposals row twice"
    return dict(pairs)


def test_recovery_publishes_the_journal_and_marks_in_flight_decisions_lost(
        local_settings: RecordSettings) -> None:
    """Accepted-but-unproposed decisions (even one whose proposal was torn) become lost/crash_recovery."""
    crashed_journal(local_settings)
    report = recovery.recover(local_settings)
    assert (report.torn_records, report.lost, report.segments) == (1, 2, 3)
    assert report.torn_bytes > 0
    assert _proposals(local_settings) == {"x": ("scored", None), "y": ("lost", "crash_recovery"),
                                          "z": ("lost", "crash_recovery")}
    lost = pq.read_table(next(p for p in report.files if "proposals" in p.parts)).to_pylist()
    assert all(r["option_ids"] == OPTIONS for r in lost if r["status"] == "lost")
    assert list_segments(local_settings.journal_dir) == []
    assert recovery.recover(local_settings).segments == 0


def test_recovery_leaves_one_lost_row_per_candidate_still_owed(local_settings: RecordSettings) -> None:
    """A decision accepted for the champion and a challenger, killed after the champion's row only.

    Recovery writes exactly one ``lost`` / ``crash_recovery`` row, the challenger's, under its name.
    """
    segment = SegmentFile(local_settings.journal_dir, 100)
    champion = normalize("proposals", proposal_row("x", candidate="default"), "w1")
    segment.write(accept("x") + accept("x", candidate="gpu_q8") + encode(PROPOSAL, champion))
    segment.close()
    assert recovery.recover(local_settings).lost == 1
    rows = open_dataset(local_settings, "proposals").to_table().to_pylist()
    assert sorted((r["candidate"], r["status"], r["reason"]) for r in rows) == [
        ("default", "scored", None), ("gpu_q8", "lost", "crash_recovery")]


def test_a_crash_during_recovery_writes_nothing_twice(local_settings: RecordSettings) -> None:
    """A recovery killed half-way, run again, still writes each decision exactly once.

    Killed after journaling its lost rows, and after publishing a segment without removing it.
    """
    crashed_journal(local_settings)
    pending, _, _ = recovery.pending_accepts(list_segments(local_settings.journal_dir))
    recovery._journal_lost(local_settings, pending, recovery.CRASH_RECOVERY)  # ...then killed
    first = list_segments(local_settings.journal_dir)[0]
    publish_segment(first, local_settings.local_root(), "w1")  # published, not yet removed: killed
    report = recovery.recover(local_settings)
    assert report.lost == 0
    assert _proposals(local_settings) == {"x": ("scored", None), "y": ("lost", "crash_recovery"),
                                          "z": ("lost", "crash_recovery")}


def test_publishing_a_segment_twice_rewrites_the_same_files(local_settings: RecordSettings) -> None:
    """Re-publishing (after a crash between rename and segment removal) overwrites, never duplicates."""
    crashed_journal(local_settings)
    segment = list_segments(local_settings.journal_dir)[0]
    first = publish_segment(segment, local_settings.local_root(), "w1")
    second = publish_segment(segment, local_settings.local_root(), "w1")
    assert first.files == second.files
    assert len(list(Path(local_settings.root).rglob("*.parquet"))) == len(first.files) == 2


async def test_the_store_recovers_on_start(local_settings: RecordSettings) -> None:
    """Entering the store runs recovery first; its report is in the store's stats."""
    crashed_journal(local_settings)
    async with RecordStore(local_settings) as store:
        assert store.stats.recovery["lost"] == 2
        assert store.stats.recovery["torn_records"] == 1
        await store.proposal(proposal_row("after"))
    assert set(_proposals(local_settings)) == {"x", "y", "z", "after"}
