"""A minimal records-v1 writer behind the `RecordSink` protocol, for local folders.

The stopgap until the durable ``shadow.records.store.RecordStore`` (issue 5) is used; ``SHADOW_SINK``
chooses. What it does *not* do: no journal (``accept`` is a no-op, so rows still buffered when the
process dies are lost, not recovered as ``lost``), no S3, no compaction. What it does: proposals are
buffered and written as one Parquet file per partition every ``flush_rows`` rows or ``flush_interval_s``
seconds and on close; outcomes are group-committed (written and fsynced before ``outcome`` returns).
Every file is written aside, fsynced and renamed, so readers never see a partial file.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

import pyarrow as pa
import pyarrow.parquet as pq

from shadow.records.schema import OUTCOMES, PROPOSALS, RECORD_VERSION

if TYPE_CHECKING:
    from types import TracebackType


class SimpleParquetSink:
    """Parquet files under ``root/{proposals,outcomes}/decision_type=<t>/date=<d>/``."""

    def __init__(self, root: Path, writer_id: str, flush_rows: int = 5000,
                 flush_interval_s: float = 60.0) -> None:
        if str(root).startswith("s3:"):
            raise ValueError("the simple sink writes local folders only; use the RecordStore for S3")
        self.root = Path(root)
        self.writer_id = writer_id
        self.flush_rows = flush_rows
        self.flush_interval_s = flush_interval_s
        self._proposals: list[dict[str, Any]] = []
        self._outcomes: list[dict[str, Any]] = []
        self._outcome_lock = asyncio.Lock()
        self._flush_lock = asyncio.Lock()
        self._seq = 0  # microseconds since the epoch, strictly increasing: unique across restarts
        self._timer: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Self:
        self._timer = asyncio.create_task(self._tick(), name="simple-sink-flush")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def accept(self, decision_id: str, decision_type: str, received_at_us: int,
                     option_ids: list[str]) -> None:
        """No journal here: nothing to note."""

    async def proposal(self, row: dict[str, Any]) -> None:
        """Buffer one row; write the buffer when it is full."""
        self._proposals.append({**row, "record_version": RECORD_VERSION, "writer_id": self.writer_id})
        if len(self._proposals) >= self.flush_rows:
            await self.flush()

    async def outcome(self, row: dict[str, Any]) -> None:
        """Write the outcome (with any others waiting) and return once it is on disk."""
        self._outcomes.append({**row, "record_version": RECORD_VERSION, "writer_id": self.writer_id})
        async with self._outcome_lock:  # whoever holds the lock writes everything pending, ours included
            rows, self._outcomes = self._outcomes, []
            if rows:
                await asyncio.to_thread(self._write, "outcomes", OUTCOMES, "outcome_at", rows)

    async def flush(self) -> None:
        """Write the buffered proposals now."""
        async with self._flush_lock:
            rows, self._proposals = self._proposals, []
            if rows:
                await asyncio.to_thread(self._write, "proposals", PROPOSALS, "received_at", rows)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval_s)
            await self.flush()

    async def close(self) -> None:
        """Stop the timer and write everything buffered."""
        if self._timer is not None:
            self._timer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._timer
            self._timer = None
        await self.flush()

    def _write(self, dataset: str, schema: pa.Schema, time_col: str, rows: list[dict[str, Any]]) -> None:
        parts: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for row in rows:
            parts[(row["decision_type"], row[time_col].date().isoformat())].append(row)
        for (dtype, day), part in parts.items():
            folder = self.root / dataset / f"decision_type={dtype}" / f"date={day}"
            folder.mkdir(parents=True, exist_ok=True)
            self._seq = max(self._seq + 1, time.time_ns() // 1000)
            final = folder / f"{self.writer_id}-{self._seq}.parquet"
            tmp = final.with_suffix(".parquet.tmp")
            pq.write_table(pa.Table.from_pylist(part, schema=schema), tmp)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            tmp.rename(final)
