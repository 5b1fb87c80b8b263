# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""The group-committed journal: records are appended in memory and made durable in groups.

One commit task owns the disk: it waits for the first record of a group, lets the group fill for at
most ``group_commit_ms``, then writes the whole group and fsyncs it once, in the journal's own IO
thread (never on the event loop), and only then wakes the records that wait for durability. The fsync
policy decides what one commit does: ``group`` one fsync per group, ``always`` one write and fsync per
record, ``none`` a write and no fsync. Writers that would push the unflushed buffer past
``buffer_bytes`` wait for the next commit (bounded memory).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from contracts.tasks import stop_tasks
from shadow.records.errors import RecordsError
from shadow.records.segment_files import SegmentFile, fsync_dir

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadow.records.settings import RecordSettings

log = logging.getLogger(__name__)


class Journal:
    """Append frames; ``durable`` ones return once on disk; ``seal`` starts a new segment."""

    def __init__(self, settings: RecordSettings, first_seq: int, on_commit: Callable[[int], None]) -> None:
        self._settings = settings
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="records-journal")
        self._segment = SegmentFile(settings.journal_dir, first_seq)
        self._frames: list[bytes] = []
        self._durable_at: set[int] = set()
        self._size = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._wake = asyncio.Event()
        self._committed = asyncio.Event()
        self._lock = asyncio.Lock()
        self._on_commit = on_commit
        self._task: asyncio.Task[None] | None = None
        self.commits = 0
        self.frames_committed = 0

    @property
    def segment(self) -> SegmentFile:
        """The segment being appended to."""
        return self._segment

    def start(self) -> None:
        """Start the commit task (owned here, cancelled by ``stop``)."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name="records-journal-commit")

    def append(self, frame: bytes) -> None:
        """Buffer one frame; it reaches the disk with the next commit."""
        self._frames.append(frame)
        self._size += len(frame)
        self._wake.set()

    async def durable(self, frame: bytes) -> None:
        """Buffer one frame and return once it is committed (per the fsync policy)."""
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._durable_at.add(len(self._frames))
        self.append(frame)
        await waiter

    async def room(self) -> None:
        """Wait while the unflushed buffer is over its bound."""
        while self._size >= self._settings.buffer_bytes:
            self._committed.clear()
            await self._committed.wait()

    async def _run(self) -> None:
        window = self._settings.group_commit_ms / 1000
        while True:
            await self._wake.wait()
            if window and self._size < self._settings.buffer_bytes:
                await asyncio.sleep(window)
            try:
                await self.flush()
            except RecordsError:
                log.exception("journal commit failed; the waiting writers got the error")
                await asyncio.sleep(window or 0.01)

    async def flush(self) -> None:
        """Commit everything buffered so far."""
        async with self._lock:
            await self._flush_locked()

    async def _flush_locked(self) -> None:
        frames, waiters, durable_at = self._frames, self._waiters, self._durable_at
        self._frames, self._waiters, self._durable_at, self._size = [], [], set(), 0
        self._wake.clear()
        if not frames:
            return
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._io, self._commit, frames)
        except OSError as exc:
            error = RecordsError(f"journal write failed: {exc.strerror or exc}")
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_exception(error)
            self._requeue([f for i, f in enumerate(frames) if i not in durable_at])
            raise error from exc
        finally:
            self._committed.set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        self.commits += 1
        self.frames_committed += len(frames)
        self._on_commit(sum(map(len, frames)))

    def _requeue(self, frames: list[bytes]) -> None:
        """Put frames nobody waits for (proposals) back in front, for the next commit to retry.

        Frames with a waiter are not retried: their callers got the error and decide themselves.
        """
        if frames:
            self._durable_at = {i + len(frames) for i in self._durable_at}
            self._frames[:0] = frames
            self._size += sum(map(len, frames))
            self._wake.set()

    def _commit(self, frames: list[bytes]) -> None:
        """Write (and fsync) one group; on any error the whole group is cut off the segment again."""
        segment = self._segment
        start = segment.size
        try:
            self._write_group(segment, frames)
        except OSError:
            with contextlib.suppress(OSError):
                segment.truncate(start)
            raise

    def _write_group(self, segment: SegmentFile, frames: list[bytes]) -> None:
        policy = self._settings.fsync
        if policy == "always":
            for frame in frames:
                segment.write(frame)
                segment.fsync()
            return
        segment.write(b"".join(frames))
        if policy == "group":
            segment.fsync()

    async def seal(self, carry: Callable[[], list[bytes]], next_seq: int) -> SegmentFile:
        """Close the current segment and start ``next_seq``, whose first frames are ``carry()``.

        The carried frames (accepted decisions not yet proposed) are fsynced before this returns, so
        the sealed segment may be published and deleted without losing them. ``carry()`` is taken in
        the same step as the buffer swap (no ``await`` between): a proposal that arrives while the
        old segment is being flushed goes to the new segment, after its decision's carried accept.
        Taking it after the flush would miss such a decision while its proposal is not yet on disk.
        """
        async with self._lock:
            frames = carry()
            await self._flush_locked()  # swaps the buffer before its first await
            sealed = self._segment
            loop = asyncio.get_running_loop()
            self._segment = await loop.run_in_executor(self._io, self._rotate, sealed, next_seq, frames)
            self._on_commit(self._segment.size)
            return sealed

    def _rotate(self, sealed: SegmentFile, next_seq: int, frames: list[bytes]) -> SegmentFile:
        """Start the next segment with the carried frames, then close the sealed one.

        If the new segment cannot be written, it is removed and the journal keeps appending to the
        old one (the seal is retried at the next roll-over).
        """
        fresh = SegmentFile(self._settings.journal_dir, next_seq)
        try:
            if frames:
                fresh.write(b"".join(frames))
                fresh.fsync()
        except OSError:
            fresh.close()
            fresh.path.unlink(missing_ok=True)
            raise
        if self._settings.fsync != "none":
            sealed.fsync()
        sealed.close()
        return fresh

    async def stop(self) -> None:
        """Commit what is buffered, stop the commit task and close the segment."""
        await self.flush()
        await stop_tasks(self._task)
        await asyncio.get_running_loop().run_in_executor(self._io, self._close_segment)
        self._io.shutdown(wait=True)

    def _close_segment(self) -> None:
        if self._settings.fsync != "none":
            self._segment.fsync()
        self._segment.close()
        fsync_dir(self._settings.journal_dir)
