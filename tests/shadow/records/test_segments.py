# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Journal frames: checksummed, and a torn tail is detected, never parsed."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from shadow.records.segments import ACCEPT, OUTCOME, PROPOSAL, SegmentFile, encode, read_segment

if TYPE_CHECKING:
    from pathlib import Path


def _segment(tmp_path: Path, frames: list[bytes]) -> Path:
    segment = SegmentFile(tmp_path, 7)
    segment.write(b"".join(frames))
    segment.fsync()
    segment.close()
    return segment.path


def test_frames_round_trip_in_order(tmp_path: Path) -> None:
    """Every whole frame reads back with its kind and payload, in write order, and nothing is torn."""
    payloads = [{"decision_id": f"d{i}", "n": i} for i in range(5)]
    kinds = [ACCEPT, PROPOSAL, OUTCOME, PROPOSAL, ACCEPT]
    path = _segment(tmp_path, [encode(k, p) for k, p in zip(kinds, payloads, strict=True)])
    read = read_segment(path)
    assert [(k, orjson.loads(b)) for k, b in read.frames] == list(zip(kinds, payloads, strict=True))
    assert not read.torn


def test_a_cut_last_frame_is_skipped_and_counted(tmp_path: Path) -> None:
    """A crash mid-write leaves a short last frame: the whole frames before it survive, the rest is torn."""
    frames = [encode(PROPOSAL, {"decision_id": f"d{i}"}) for i in range(3)]
    path = _segment(tmp_path, frames)
    data = path.read_bytes()
    for cut in (1, 9, len(frames[-1]) - 1):
        path.write_bytes(data[:-cut])
        read = read_segment(path)
        assert len(read.frames) == 2
        assert read.torn_bytes == len(frames[-1]) - cut


def test_a_corrupt_payload_fails_its_checksum(tmp_path: Path) -> None:
    """Garbage of the right length (a torn page) is rejected by the CRC, not parsed as a record."""
    frames = [encode(OUTCOME, {"decision_id": "d0", "outcome": "billing"}),
              encode(OUTCOME, {"decision_id": "d1", "outcome": "billing"})]
    path = _segment(tmp_path, frames)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    read = read_segment(path)
    assert [orjson.loads(b)["decision_id"] for _, b in read.frames] == ["d0"]
    assert read.torn_bytes == len(frames[1])
