# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Journal segments on disk: checksummed frames appended to ``<seq>.wal`` files.

A frame is ``magic (1) | kind (1) | length (4) | crc32 (4) | payload``, little-endian; the CRC covers
the kind and the payload. A reader stops at the first frame that is short or fails its checksum (a
write torn by a crash) and reports how many bytes it skipped: a torn record is counted, never parsed.
Kinds: ``A`` an accepted decision, ``P`` a proposals row, ``O`` an outcomes row, ``D`` a drops row.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import orjson
import pyarrow as pa

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

MAGIC: Final = 0xA5
HEADER = struct.Struct("<BBII")
ACCEPT: Final = ord("A")
PROPOSAL: Final = ord("P")
OUTCOME: Final = ord("O")
DROP: Final = ord("D")
KINDS: Final = frozenset({ACCEPT, PROPOSAL, OUTCOME, DROP})
SUFFIX: Final = ".wal"


def encode(kind: int, payload: object) -> bytes:
    """One frame holding ``payload`` as JSON."""
    body = orjson.dumps(payload)
    return HEADER.pack(MAGIC, kind, len(body), zlib.crc32(body, kind)) + body


@dataclass(frozen=True)
class SegmentRead:
    """What a segment holds: its whole frames, and the torn tail a crash may have left."""

    frames: list[tuple[int, memoryview]]
    torn_bytes: int

    @property
    def torn(self) -> bool:
        """Whether the segment ends in a frame that failed its length or checksum check."""
        return self.torn_bytes > 0


def read_segment(path: Path) -> SegmentRead:
    """Every whole frame of ``path`` in order; stops at the first short or corrupt frame.

    Bodies are ``memoryview`` slices of the file's bytes (no copy per frame). Two Python objects per
    frame: for recovery and tests; the roll-over reads with `read_payloads`, which keeps none.
    """
    frames: list[tuple[int, memoryview]] = []
    append = frames.append
    torn_bytes = scan(memoryview(path.read_bytes()), lambda kind, body: append((kind, body)))
    return SegmentRead(frames=frames, torn_bytes=torn_bytes)


def scan(data: memoryview, visit: Callable[[int, memoryview], object]) -> int:
    """Call ``visit(kind, body)`` for each whole frame of ``data`` in order; return the torn bytes."""
    unpack, crc32, size = HEADER.unpack_from, zlib.crc32, HEADER.size
    pos, end = 0, len(data)
    while pos + size <= end:
        magic, kind, length, crc = unpack(data, pos)
        body_at = pos + size
        if magic != MAGIC or kind not in KINDS or body_at + length > end:
            break
        body = data[body_at:body_at + length]
        if crc32(body, kind) != crc:
            break
        visit(kind, body)
        pos = body_at + length
    return end - pos


@dataclass
class Payloads:
    """One kind of a segment's frames: their bodies as JSON lines (in Arrow's pool), how many, the longest."""

    lines: pa.BufferOutputStream = field(default_factory=pa.BufferOutputStream)
    count: int = 0
    longest: int = 0

    def add(self, body: memoryview) -> None:
        """Append one body and its newline."""
        self.lines.write(body)
        self.lines.write(b"\n")
        self.count += 1
        self.longest = max(self.longest, len(body))


def read_payloads(path: Path, kinds: Iterable[int]) -> tuple[dict[int, Payloads], int]:
    """The bodies of ``path``'s whole frames of ``kinds`` as JSON lines per kind, and the torn bytes.

    What a roll-over reads stays out of Python's allocators, which keep what they freed: the segment
    is memory-mapped (its pages go with the mapping), the lines are built in Arrow's pool (given back
    after the roll-over: ``parquet.release_arrow_memory``), and no Python object outlives its frame.
    After a minute of saturating proxy load a segment holds ~150,000 frames (an outcome per
    exchange): a tuple and a memoryview for each, allocated while the event loop allocated beside
    them, and the segment read into a ``bytes``, left 25-35 MB of partly used arenas and a grown heap
    after every roll-over (``docs/sidecar.md``, Memory bound).
    """
    out = {kind: Payloads() for kind in kinds}

    def visit(kind: int, body: memoryview) -> None:
        target = out.get(kind)
        if target is not None:
            target.add(body)

    with pa.memory_map(str(path)) as source:
        torn_bytes = scan(memoryview(source.read_buffer()), visit)
    return out, torn_bytes


def segment_seq(path: Path) -> int:
    """The sequence number a segment file is named by."""
    return int(path.stem)


def list_segments(journal_dir: Path) -> list[Path]:
    """Segment files in the order they were written."""
    if not journal_dir.is_dir():
        return []
    return sorted(journal_dir.glob(f"*{SUFFIX}"), key=segment_seq)


def next_seq(journal_dir: Path, at_least: int = 0) -> int:
    """A sequence number above every segment's, and above the clock in microseconds.

    Time-based numbers keep file names unique even when the spool folder is wiped between runs.
    """
    segments = list_segments(journal_dir)
    last = segment_seq(segments[-1]) if segments else 0
    return max(last + 1, at_least, time.time_ns() // 1000)


def fsync_dir(path: Path) -> None:
    """Make a rename or unlink inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class SegmentFile:
    """One open segment, appended to by the journal's IO thread only."""

    def __init__(self, journal_dir: Path, seq: int) -> None:
        journal_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.seq = seq
        self.path = journal_dir / f"{seq:016d}{SUFFIX}"
        self.opened_at = time.monotonic()
        self.size = 0
        self.frames = 0
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fsync_dir(journal_dir)

    def write(self, data: bytes) -> None:
        """Append ``data`` (whole frames) to the file (the OS may still hold it in memory).

        A write that fails half-way (a full disk) is cut back off, so the segment never holds a
        partial frame followed by good ones that a reader would then never reach.
        """
        view = memoryview(data)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError:
            os.ftruncate(self._fd, self.size)
            raise
        self.size += len(data)

    def truncate(self, size: int) -> None:
        """Cut the file back to ``size`` bytes (undo a group that failed)."""
        os.ftruncate(self._fd, size)
        self.size = size

    def fsync(self) -> None:
        """Force what was written to disk (``fdatasync``: the size change is what matters)."""
        os.fdatasync(self._fd)

    def close(self) -> None:
        """Close the file descriptor."""
        os.close(self._fd)
