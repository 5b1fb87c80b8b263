# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Journal frames: checksummed, and a torn tail is detected, never parsed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from shadow.records.segment_files import ACCEPT, OUTCOME, PROPOSAL, SegmentFile, encode, read_segment


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


FULL_DISK_SCRIPT = """
import errno, resource, signal, sys
from pathlib import Path
from shadow.records.segment_files import PROPOSAL, SegmentFile, encode
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
segment = SegmentFile(Path(sys.argv[1]), 1)
written = 0
try:
    while True:
        segment.write(encode(PROPOSAL, {"decision_id": f"d{written}", "pad": "x" * 40}))
        written += 1
except OSError as exc:
    assert exc.errno == errno.EFBIG, exc
print(written)
"""


def test_a_write_that_fails_half_way_leaves_no_partial_frame(tmp_path: Path) -> None:
    """A write cut short (a full disk) is truncated back to the last whole frame.

    The limit is a real RLIMIT_FSIZE in a child process; frames written later would stay readable.
    """
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run([sys.executable, "-c", FULL_DISK_SCRIPT, str(tmp_path)], cwd=root,  # noqa: S603  (our script)
                          capture_output=True, text=True, check=True, timeout=60)
    written = int(done.stdout)
    read = read_segment(tmp_path / f"{1:016d}.wal")
    assert written > 5
    assert len(read.frames) == written
    assert read.torn_bytes == 0
