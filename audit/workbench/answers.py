"""An answer becomes an audit outcome row (records v1.2), durable before it is acknowledged.

The row goes through the sidecar's record store (journal with group commit, Parquet, S3): ``outcome``
returns once the journal has fsynced it, and only then does the page move on. Answering again writes
another row; both stay in the records and the marts keep the latest per (sample, decision, auditor).

A note has no column in the records: it is appended, and fsynced, to the workbench's notes file
(``<spool>/notes/week=<W>.jsonl``, one JSON object a line) before the outcome row is written.
"""

from __future__ import annotations

import asyncio
import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from audit.workbench.errors import StoreUnavailable
from contracts.records import audit_outcome
from shadow.records.errors import RecordsError

if TYPE_CHECKING:
    from pathlib import Path

    from audit.workbench.reading import SampleRow
    from shadow.records.store import RecordStore


def outcome_row(row: SampleRow, auditor: str, answer: str, option_ids: list[str]) -> dict[str, Any]:
    """The outcomes row of one answer, given now (``contracts.records.audit_outcome``)."""
    return audit_outcome(sample_id=row.sample_id, decision_id=row.decision_id,
                         decision_type=row.decision_type, auditor=auditor, answer=answer, options=option_ids,
                         at=datetime.now(UTC))


def _append_line(path: Path, line: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


class AnswerWriter:
    """Writes answers: the note (if any) to the notes file, then the outcome row to the store."""

    def __init__(self, store: RecordStore, notes_file: Path) -> None:
        self._store = store
        self._notes_file = notes_file

    async def write(self, row: dict[str, Any], note: str) -> None:
        """Make the answer durable; ``StoreUnavailable`` (503) if it could not be."""
        try:
            if note:
                entry = {key: row[key] for key in ("audit_sample", "decision_type", "decision_id", "auditor")}
                entry |= {"note": note, "at": row["outcome_at"].isoformat()}
                line = json.dumps(entry, ensure_ascii=False).encode() + b"\n"
                await asyncio.get_running_loop().run_in_executor(None, _append_line, self._notes_file, line)
            await self._store.outcome(row)
        except (RecordsError, OSError) as exc:
            raise StoreUnavailable(f"answer not stored: {exc}") from exc
