# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Durability claims: the fsync policies really fsync, and frames written after a full disk stay readable.

The fsyncs are observed, not assumed: the journal's module sees an ``os`` whose ``fsync`` and
``fdatasync`` record which file they were called on and how long it was, then make the real call.
The full disk is a real one: a 256 KiB tmpfs mounted in a private mount namespace (``unshare``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from shadow.records import segment_files
from shadow.records.layout import open_dataset
from shadow.records.store import RecordStore

from .factories import BASE_US, OPTIONS, outcome_row, proposal_row

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings

RECORDS = 40


class FsyncLog:
    """``os`` for ``segment_files``: notes (file, size) at every fsync/fdatasync of a journal segment."""

    def __init__(self) -> None:
        self.synced: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def _note(self, fd: int) -> None:
        path = str(Path(f"/proc/self/fd/{fd}").readlink())
        if path.endswith(segment_files.SUFFIX):
            with self._lock:
                self.synced.append((path, os.fstat(fd).st_size))

    def fsync(self, fd: int) -> None:
        """The real ``os.fsync``, noted."""
        os.fsync(fd)
        self._note(fd)

    def fdatasync(self, fd: int) -> None:
        """The real ``os.fdatasync``, noted."""
        os.fdatasync(fd)
        self._note(fd)

    def synced_size(self, path: Path) -> int:
        """The largest size ``path`` had when an fsync of it returned (0: never synced)."""
        with self._lock:
            return max((size for p, size in self.synced if p == str(path)), default=0)


@pytest.fixture
def fsyncs(monkeypatch: pytest.MonkeyPatch) -> FsyncLog:
    """The fsyncs of journal segments made while the test runs (the real calls still happen)."""
    log = FsyncLog()
    monkeypatch.setattr(segment_files, "os", log)
    return log


async def _write(store: RecordStore, fsyncs: FsyncLog) -> list[int]:
    """One decision at a time; after each acknowledged outcome, how much of the segment was unsynced."""
    unsynced = []
    for i in range(RECORDS):
        await store.accept(f"d{i}", "route", BASE_US, OPTIONS)
        await store.proposal(proposal_row(f"d{i}"))
        await store.outcome(outcome_row(f"d{i}"))
        segment = store._journal.segment.path  # type: ignore[union-attr]
        unsynced.append(segment.stat().st_size - fsyncs.synced_size(segment))
    return unsynced


@pytest.mark.parametrize("policy", ["group", "always"])
async def test_an_acknowledged_record_was_fsynced(local_settings: RecordSettings, fsyncs: FsyncLog,
                                                  policy: str) -> None:
    """Under ``group`` and ``always``, every byte of the segment was fsynced when ``outcome`` returned.

    ``group`` makes one fsync per commit, ``always`` one per record (so more than one per commit here,
    where each commit holds a proposal and an outcome).
    """
    settings = local_settings.model_copy(update={"fsync": policy})
    async with RecordStore(settings) as store:
        unsynced = await _write(store, fsyncs)
        commits, frames = store.snapshot()["journal_commits"], store.snapshot()["journal_records"]
    assert unsynced == [0] * RECORDS
    during = len(fsyncs.synced) - 1  # close() syncs the segment once more
    assert during == (commits if policy == "group" else frames)
    assert frames > commits >= RECORDS


async def test_fsync_none_never_fsyncs_a_segment(local_settings: RecordSettings, fsyncs: FsyncLog) -> None:
    """``none`` writes without fsync: the segment is never synced, so the same check tells it apart."""
    settings = local_settings.model_copy(update={"fsync": "none"})
    async with RecordStore(settings) as store:
        unsynced = await _write(store, fsyncs)
    assert all(n > 0 for n in unsynced)
    assert fsyncs.synced == []


FULL_DISK_SCRIPT = """
import asyncio, errno, json, sys
from pathlib import Path
from shadow.records.errors import RecordsError
from shadow.records.segment_files import list_segments, read_segment
from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore
from tests.shadow.records.factories import BASE_US, OPTIONS, outcome_row, proposal_row

async def decide(store, decision_id):
    await store.accept(decision_id, "route", BASE_US, OPTIONS)
    await store.proposal(proposal_row(decision_id, state_sha256=decision_id * 40))
    await store.outcome(outcome_row(decision_id))

async def main(spool, root):
    settings = RecordSettings(root=root, spool_dir=Path(spool) / "spool", writer_id="full", roll_seconds=60.0)
    async with RecordStore(settings) as store:
        for i in range(3):  # the segment's last page is part used: the write that fills the disk is cut short
            await decide(store, f"early{i}")
        ballast = Path(spool) / "ballast"
        with ballast.open("wb", buffering=0) as fh:  # fill the disk; the journal keeps its last page's tail
            try:
                while True:
                    fh.write(b"b" * 4096)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
        before, failed = [], None
        for i in range(10_000):
            try:
                await decide(store, f"before{i}")
            except RecordsError as exc:
                failed = (f"before{i}", str(exc))
                break
            before.append(f"before{i}")
        ballast.unlink()  # space is back
        after = [f"after{i}" for i in range(30)]
        for decision_id in after:
            await decide(store, decision_id)
        segments = list_segments(settings.journal_dir)
        reads = [read_segment(s) for s in segments]
        frames = [(chr(kind), json.loads(bytes(body))["decision_id"])
                  for r in reads for kind, body in r.frames]
        print(json.dumps({"before": before, "failed": failed, "after": after, "frames": frames,
                          "torn": sum(r.torn_bytes for r in reads), "segments": len(segments),
                          "size": sum(s.stat().st_size for s in segments)}))

asyncio.run(main(*sys.argv[1:3]))
"""


def _unshare_mount() -> list[str] | None:
    """A command prefix running its command with a 256 KiB tmpfs on ``$1``, or None where it cannot."""
    if shutil.which("unshare") is None:
        return None
    prefix = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
              'mount -t tmpfs -o size=256k tmpfs "$1" && shift && exec "$@"', "sh"]
    probe = subprocess.run([*prefix, "/tmp", "true"], capture_output=True, check=False, timeout=30)  # noqa: S603, S108  (a private mount namespace)
    return prefix if probe.returncode == 0 else None


def test_frames_written_after_a_full_disk_stay_readable(tmp_path: Path) -> None:
    """A real full disk (ENOSPC on a tmpfs) fails one commit; once space is back, every later frame reads.

    The failed group is cut off the segment whole, so the frames after it are not stranded behind a
    torn one: the segment reads to its end (no torn bytes) and holds every decision written after the
    disk filled, each exactly once, then Parquet holds them all after a clean close.
    """
    prefix = _unshare_mount()
    if prefix is None:
        pytest.skip("no private mount namespace here (unshare --user --mount refused)")
    mount, root = tmp_path / "disk", tmp_path / "root"
    mount.mkdir()
    repo = Path(__file__).resolve().parents[3]
    command = [*prefix, str(mount), sys.executable, "-c", FULL_DISK_SCRIPT, str(mount), str(root)]
    done = subprocess.run(command,  # noqa: S603  (our script)
                          cwd=repo, capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(repo)})
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["failed"] is not None, "the disk never filled"
    assert "No space left" in seen["failed"][1]
    assert seen["torn"] == 0
    written = [(kind, decision_id) for kind, decision_id in seen["frames"] if decision_id.startswith("after")]
    assert written == [(kind, d) for d in seen["after"] for kind in "APO"]
    assert len(seen["frames"]) == len(set(map(tuple, seen["frames"]))), "a frame twice"
    proposals = open_dataset_ids(root, "proposals")
    assert set(seen["after"]) | set(seen["before"]) <= set(proposals)
    assert len(proposals) == len(set(proposals))


def open_dataset_ids(root: Path, dataset: str) -> list[str]:
    """Every ``decision_id`` of ``dataset`` under a local root."""
    from shadow.records.settings import RecordSettings  # noqa: PLC0415  (only here)

    settings = RecordSettings(root=str(root), spool_dir=root.parent / "unused-spool", writer_id="reader")
    table = open_dataset(settings, dataset).to_table(columns=["decision_id"])
    return list(table.column("decision_id").to_pylist())
