# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Recovery on start: whatever the journal holds that did not reach Parquet is published now.

Segments are replayed in order. A decision accepted for a candidate (``A``) whose proposals row
(``P``, same decision type, id and candidate) is in no segment was in flight when the process died:
it gets a ``lost`` / ``crash_recovery`` row, journaled (and fsynced) in a segment of its own *before*
any old segment is published and removed, so a crash during recovery neither loses it nor writes it
twice. A torn last record is skipped and counted.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from shadow.records import rows as rowlib
from shadow.records.parquet import publish_segment, remove_segment
from shadow.records.segment_files import (
    ACCEPT,
    PROPOSAL,
    SegmentFile,
    encode,
    list_segments,
    next_seq,
    read_segment,
)

if TYPE_CHECKING:
    from pathlib import Path

    from shadow.records.settings import RecordSettings

log = logging.getLogger(__name__)

CRASH_RECOVERY = "crash_recovery"


@dataclass
class RecoveryReport:
    """What one recovery found and did."""

    segments: int = 0
    rows: dict[str, int] = field(default_factory=lambda: {"proposals": 0, "outcomes": 0, "drops": 0})
    torn_records: int = 0
    torn_bytes: int = 0
    lost: int = 0
    files: list[Path] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {"segments": self.segments, "rows": self.rows, "torn_records": self.torn_records,
                "torn_bytes": self.torn_bytes, "lost": self.lost, "files": len(self.files)}


def pending_accepts(segments: list[Path]) -> tuple[dict[rowlib.PendingKey, dict[str, Any]], int, int]:
    """Accepted (decision, candidate) pairs with no proposals row, plus (torn records, torn bytes)."""
    pending: dict[rowlib.PendingKey, dict[str, Any]] = {}
    torn_records = torn_bytes = 0
    for segment in segments:
        read = read_segment(segment)
        torn_records += int(read.torn)
        torn_bytes += read.torn_bytes
        for kind, body in read.frames:
            if kind == ACCEPT:
                accepted = orjson.loads(body)
                pending[rowlib.pending_key(accepted)] = accepted
            elif kind == PROPOSAL:
                pending.pop(rowlib.pending_key(orjson.loads(body)), None)
    return pending, torn_records, torn_bytes


def _journal_lost(settings: RecordSettings, pending: dict[rowlib.PendingKey, dict[str, Any]],
                  reason: str) -> None:
    frames = [encode(PROPOSAL, rowlib.lost_row(a, reason, settings.writer_id, settings.config_sha256))
              for a in pending.values()]
    segment = SegmentFile(settings.journal_dir, next_seq(settings.journal_dir))
    try:
        segment.write(b"".join(frames))
        segment.fsync()
    finally:
        segment.close()


def recover(settings: RecordSettings, reason: str = CRASH_RECOVERY) -> RecoveryReport:
    """Publish every journal segment left on disk; in-flight accepted decisions become ``lost`` rows."""
    report = RecoveryReport()
    pending, report.torn_records, report.torn_bytes = pending_accepts(list_segments(settings.journal_dir))
    if pending:
        _journal_lost(settings, pending, reason)
        report.lost = len(pending)
    local_root = settings.local_root()
    for segment in list_segments(settings.journal_dir):
        published = publish_segment(segment, local_root, settings.writer_id)
        remove_segment(segment)
        report.segments += 1
        report.files.extend(published.files)
        for dataset, count in published.rows.items():
            report.rows[dataset] += count
    if report.segments:
        log.warning("records recovery: %s", report.as_dict())
    return report
