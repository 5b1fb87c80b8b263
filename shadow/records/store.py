# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""``RecordStore``: the sidecar's ``RecordSink`` over the journal, Parquet roll-over and S3 upload.

Lifecycle (usable as an aiohttp ``cleanup_ctx`` resource)::

    async with RecordStore(settings) as store:   # start: recovery, then the background tasks
        await store.accept(...); await store.proposal(row); await store.outcome(row)
                                                  # exit: flush, roll over, upload, await the tasks

All methods run on one event loop. Disk work runs in executor threads: one for journal commits (the
fsyncs), one for roll-over (Parquet), one for uploads, so none blocks the loop or another.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Self

import pyarrow as pa

from contracts.records import DEFAULT_CANDIDATE
from shadow.records import rows as rowlib
from shadow.records.errors import RecordsError, SinkFull, StoreClosed, UploadFailed
from shadow.records.journal import Journal
from shadow.records.parquet import private_folder, publish_segment, remove_segment
from shadow.records.recovery import recover
from shadow.records.s3 import S3Uploader, staged_files
from shadow.records.segment_files import ACCEPT, DROP, OUTCOME, PROPOSAL, SegmentFile, encode, next_seq

if TYPE_CHECKING:
    from pathlib import Path
    from types import TracebackType

    from shadow.records.settings import RecordSettings

log = logging.getLogger(__name__)

SHUTDOWN = "shutdown"
TICK_S = 0.25


@dataclass
class StoreStats:
    """Counters an operator (or a /metrics endpoint) reads."""

    accepted: int = 0
    proposals: int = 0
    outcomes: int = 0
    drops: int = 0
    disk_full: int = 0
    lost_at_shutdown: int = 0
    segments_published: int = 0
    files_published: int = 0
    uploads: int = 0
    upload_errors: int = 0
    publish_errors: int = 0
    journal_bytes: int = 0
    staged_bytes: int = 0
    recovery: dict[str, Any] = field(default_factory=dict)

    @property
    def local_bytes(self) -> int:
        """Spool disk in use: journal segments plus files waiting for upload."""
        return self.journal_bytes + self.staged_bytes


def _lock_spool(spool_dir: Path) -> int:
    """An exclusive lock on the spool: two stores on one journal would corrupt each other."""
    spool_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(spool_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise StoreClosed(f"another record store holds {spool_dir}") from exc
    return fd


def _prune_empty(folder: Path, top: Path) -> None:
    """Remove now-empty partition folders of the staging tree, up to (not including) ``top``."""
    while folder != top and top in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty (or already gone): stop
            return
        folder = folder.parent


def _tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


class RecordStore:
    """Durable records: see the module docstring and ``sink.RecordSink`` for the promises."""

    def __init__(self, settings: RecordSettings, uploader: S3Uploader | None = None) -> None:
        self.settings = settings
        self.stats = StoreStats()
        self._uploader = uploader if uploader is not None or not settings.is_s3 else S3Uploader(settings)
        self._pending: dict[rowlib.PendingKey, dict[str, Any]] = {}
        self._journal: Journal | None = None
        self._carried = 0
        self._work = ThreadPoolExecutor(max_workers=1, thread_name_prefix="records-rollover")
        self._upload_io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="records-upload")
        self._roll_wanted = asyncio.Event()
        self._upload_wanted = asyncio.Event()
        self._stopping = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._spool_lock: int | None = None
        self._sealed: list[tuple[Path, int]] = []
        self._staging = asyncio.Lock()  # publishing (files written and counted) vs the uploader's listing

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def start(self) -> None:
        """Recover what the journal holds, then start committing, rolling over and uploading."""
        loop = asyncio.get_running_loop()
        for private in (self.settings.spool_dir, self.settings.local_root()):  # 0700: states, ids, outcomes
            private_folder(private)
        self._spool_lock = _lock_spool(self.settings.spool_dir)
        try:
            report = await loop.run_in_executor(self._work, recover, self.settings)
        except BaseException:
            self._release_spool()
            raise
        self.stats.recovery = report.as_dict()
        staging = self.settings.staging_dir
        self.stats.staged_bytes = await loop.run_in_executor(self._work, _tree_bytes, staging)
        journal_dir = self.settings.journal_dir
        self._journal = Journal(self.settings, next_seq(journal_dir), self._on_commit)
        self._journal.start()
        self._tasks.append(loop.create_task(self._roll_loop(), name="records-rollover"))
        if self._uploader is not None:
            self._upload_wanted.set()
            self._tasks.append(loop.create_task(self._upload_loop(), name="records-upload"))

    def _open_journal(self) -> Journal:
        if self._journal is None or self._stopping.is_set():
            raise StoreClosed("the record store is not running")
        return self._journal

    async def accept(self, decision_id: str, decision_type: str, received_at_us: int,
                     option_ids: list[str], candidate: str = DEFAULT_CANDIDATE) -> None:
        """Durably note a decision accepted for one candidate; ``SinkFull`` past the disk bound."""
        journal = self._open_journal()
        if self.stats.local_bytes >= self.settings.max_local_bytes:
            self.stats.disk_full += 1
            raise SinkFull(f"record spool holds {self.stats.local_bytes} bytes")
        accepted = rowlib.accepted_mark(decision_id, decision_type, received_at_us, option_ids, candidate)
        frame = encode(ACCEPT, accepted)
        key = rowlib.pending_key(accepted)
        self._pending[key] = accepted
        try:
            await journal.durable(frame)
        except RecordsError:
            self._pending.pop(key, None)
            raise
        self.stats.accepted += 1

    async def proposal(self, row: dict[str, Any]) -> None:
        """Journal one proposals row; may return before it is fsynced (the accept mark covers it)."""
        journal = self._open_journal()
        normalized = rowlib.normalize("proposals", row, self.settings.writer_id)
        frame = encode(PROPOSAL, normalized)
        self._pending.pop(rowlib.pending_key(normalized), None)
        journal.append(frame)
        self.stats.proposals += 1
        await journal.room()

    async def drops(self, rows: list[dict[str, Any]]) -> None:
        """Journal drop summary rows (decisions dropped before acceptance); no fsync of their own."""
        journal = self._open_journal()
        for row in rows:
            journal.append(encode(DROP, rowlib.normalize("drops", row, self.settings.writer_id)))
        self.stats.drops += sum(row["dropped"] for row in rows)
        await journal.room()

    async def outcome(self, row: dict[str, Any]) -> None:
        """Journal one outcomes row and return once it is durable."""
        journal = self._open_journal()
        frame = encode(OUTCOME, rowlib.normalize("outcomes", row, self.settings.writer_id))
        await journal.durable(frame)
        self.stats.outcomes += 1

    def _on_commit(self, nbytes: int) -> None:
        self.stats.journal_bytes += nbytes
        if self._journal is not None and self._journal.segment.size >= self.settings.roll_bytes:
            self._roll_wanted.set()

    def _roll_due(self, segment: SegmentFile) -> bool:
        if segment.size >= self.settings.roll_bytes:
            return True
        age = time.monotonic() - segment.opened_at
        return segment.size > self._carried and age >= self.settings.roll_seconds

    async def _roll_loop(self) -> None:
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._roll_wanted.wait(), timeout=TICK_S)
            self._roll_wanted.clear()
            journal = self._journal
            if journal is None or self._stopping.is_set():
                continue
            try:
                if self._roll_due(journal.segment):
                    await self._roll(journal)
                await self._publish_sealed()
            except (RecordsError, OSError, pa.ArrowException):
                self.stats.publish_errors += 1
                log.exception("records roll-over failed; the segment stays in the journal and is retried")

    def _carry(self) -> list[bytes]:
        return [encode(ACCEPT, accepted) for accepted in self._pending.values()]

    async def _roll(self, journal: Journal) -> None:
        seq = max(journal.segment.seq + 1, next_seq(self.settings.journal_dir))
        sealed = await journal.seal(self._carry, seq)
        self._carried = journal.segment.size
        self._sealed.append((sealed.path, sealed.size))

    async def _publish_sealed(self) -> None:
        """Publish sealed segments in order; one that fails stays first in line for the next try."""
        while self._sealed:
            await self._publish(*self._sealed[0])
            self._sealed.pop(0)

    async def _publish(self, segment: Path, size: int) -> None:
        loop = asyncio.get_running_loop()
        local_root, writer = self.settings.local_root(), self.settings.writer_id
        async with self._staging:  # counted before the uploader can list (and delete) the new files
            published = await loop.run_in_executor(self._work, publish_segment, segment, local_root, writer)
            if self._uploader is not None:
                # computed, then added: an upload may take bytes off the total during the await
                added = await loop.run_in_executor(self._work, lambda: published.bytes)
                self.stats.staged_bytes += added
        await loop.run_in_executor(self._work, remove_segment, segment)
        self.stats.journal_bytes -= size
        self.stats.segments_published += 1
        self.stats.files_published += len(published.files)
        if self._uploader is not None:
            self._upload_wanted.set()

    async def _upload_loop(self) -> None:
        delay = self.settings.s3_retry_min_s
        while not self._stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._upload_wanted.wait(), timeout=1.0)
            self._upload_wanted.clear()
            if self._stopping.is_set():
                break  # close() makes the last pass itself
            if await self._upload_pass():
                delay = self.settings.s3_retry_min_s
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), timeout=delay)
            delay = min(delay * 2, self.settings.s3_retry_max_s)
            self._upload_wanted.set()

    async def _upload_pass(self) -> bool:
        """Upload every staged file; False at the first failure (the rest wait for the retry)."""
        assert self._uploader is not None
        loop = asyncio.get_running_loop()
        async with self._staging:
            files = await loop.run_in_executor(self._upload_io, staged_files, self.settings.staging_dir)
        for path, relative in files:
            try:
                size = await loop.run_in_executor(self._upload_io, self._upload_one, path, relative)
            except UploadFailed as exc:
                self.stats.upload_errors += 1
                log.warning("records upload will be retried: %s", exc)
                return False
            self.stats.uploads += 1
            self.stats.staged_bytes = max(0, self.stats.staged_bytes - size)
        return True

    def _upload_one(self, path: Path, relative: str) -> int:
        assert self._uploader is not None
        size = path.stat().st_size
        self._uploader.upload(path, relative)
        path.unlink()
        _prune_empty(path.parent, self.settings.staging_dir)
        return size

    async def close(self) -> None:
        """Flush, publish the open segment, try the uploads once more, and stop every task."""
        journal = self._journal
        if journal is None or self._stopping.is_set():
            return
        if self._pending:
            writer, config = self.settings.writer_id, self.settings.config_sha256
            for accepted in self._pending.values():
                journal.append(encode(PROPOSAL, rowlib.lost_row(accepted, SHUTDOWN, writer, config)))
            self.stats.lost_at_shutdown += len(self._pending)
            self._pending.clear()
        self._stopping.set()
        self._roll_wanted.set()  # wake both loops now rather than at their next tick
        self._upload_wanted.set()
        await asyncio.gather(*self._tasks)
        self._tasks.clear()
        await journal.stop()
        self._sealed.append((journal.segment.path, journal.segment.size))
        await self._publish_sealed()
        if self._uploader is not None and not await self._upload_pass():
            log.warning("records: %d bytes stay staged for the next start", self.stats.staged_bytes)
        self._work.shutdown(wait=True)
        self._upload_io.shutdown(wait=True)
        self._release_spool()

    def _release_spool(self) -> None:
        if self._spool_lock is not None:
            os.close(self._spool_lock)  # closing the descriptor releases the flock
            self._spool_lock = None

    def snapshot(self) -> dict[str, Any]:
        """The counters as a JSON-ready dict (``journal_commits``: fsync groups so far)."""
        journal = self._journal
        return {**asdict(self.stats), "local_bytes": self.stats.local_bytes,
                "journal_commits": journal.commits if journal else 0,
                "journal_records": journal.frames_committed if journal else 0}
