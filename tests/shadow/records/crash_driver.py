# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""A stand-in sidecar for the crash test: steady accepts, proposals and outcomes until killed.

Run as ``python crash_driver.py ROOT SPOOL RUN_ID [step]``. After each acknowledged call it writes one
line to stdout with an unbuffered ``os.write``: ``A <id>`` once ``accept`` returned, ``S <id>`` once
``proposal`` returned (a scored row, in the journal buffer), ``O <id>`` once ``outcome`` returned
(durable, and with it the scored row appended before it). Row contents are a function of the id
(``expected_proposal``, ``expected_outcome``), so the parent can compare every column it reads back.

With ``step`` the driver stops at each step of its start-up recovery: it writes ``R <step>`` and waits
for a line on stdin before going on, so the parent can SIGKILL it at a step it has *seen*, inside
recovery. Steps: ``lost`` (lost rows journaled and fsynced), ``begin <segment>`` (about to publish),
``tmp <file>`` (a Parquet file written and fsynced under its hidden temporary name, not yet renamed),
``renamed <folder>``, ``removed <segment>``. ``READY`` follows the start.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from shadow.records import parquet, recovery
from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore
from tests.shadow.records.factories import BASE_US, OPTIONS, outcome_row, proposal_row

if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

WORKERS = 24
TYPES = ("route", "priority")


def emit(line: str) -> None:
    """Tell the parent, before anything else can happen."""
    os.write(1, f"{line}\n".encode())


def _crc(decision_id: str) -> int:
    return zlib.crc32(decision_id.encode())


def expected_proposal(decision_id: str, decision_type: str) -> dict[str, Any]:
    """The scored proposals row the driver writes for ``decision_id``: every value depends on the id."""
    c = _crc(decision_id)
    p = 0.34 + (c % 600) / 1000
    rest = 1 - p
    return proposal_row(
        decision_id, decision_type=decision_type, received_at=BASE_US + c % 3_600_000_000,
        probabilities=[p, rest * 0.75, rest * 0.25], logits=[-(c % 97) / 10, -1.5 - (c % 13), -3.25],
        proposal_probability=p, prompt_tokens=100 + c % 400, cached_tokens=c % 100, queue_ms=(c % 50) / 4,
        state_sha256=hashlib.sha256(decision_id.encode()).hexdigest(), attempts=1 + c % 3,
        proposal=OPTIONS[c % 3])


def expected_outcome(decision_id: str, decision_type: str) -> dict[str, Any]:
    """The outcomes row the driver writes for ``decision_id``."""
    c = _crc(decision_id)
    return outcome_row(decision_id, decision_type=decision_type, outcome_at=BASE_US + 5 + c % 3_600_000_000,
                       outcome=OPTIONS[(c // 3) % 3])


def dropped_proposal(decision_id: str, decision_type: str) -> dict[str, Any]:
    """A row for a decision dropped before it was accepted."""
    received_at = BASE_US + _crc(decision_id) % 1000
    return proposal_row(decision_id, decision_type=decision_type, received_at=received_at,
                        status="dropped", reason="queue_full")


async def decide(store: RecordStore, run_id: str, worker: int) -> None:
    """One worker: accept, propose (sometimes dropped without accept), report the outcome."""
    rng = random.Random(f"{run_id}-{worker}")  # noqa: S311  (load shape, not crypto)
    for i in range(1_000_000):
        decision_id = f"{run_id}-{worker}-{i}"
        decision_type = TYPES[i % 2]
        if rng.random() < 0.1:
            await store.proposal(dropped_proposal(decision_id, decision_type))
            continue
        row = expected_proposal(decision_id, decision_type)
        await store.accept(decision_id, decision_type, row["received_at"], OPTIONS)
        emit(f"A {decision_id}")
        await asyncio.sleep(rng.random() * 0.003)
        await store.proposal(row)
        emit(f"S {decision_id}")
        await store.outcome(expected_outcome(decision_id, decision_type))
        emit(f"O {decision_id}")


def step(name: str) -> None:
    """Say which recovery step is done, then wait for the parent's go (it may SIGKILL us instead)."""
    emit(f"R {name}")
    sys.stdin.readline()


class _SteppedOs:
    """``os`` for ``parquet``: a file's fsync (under its temporary name, before the rename) is a step."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def fsync(fd: int) -> None:
        os.fsync(fd)
        step(f"tmp {Path(f'/proc/self/fd/{fd}').readlink()}")


def _swap(module: ModuleType, **values: Any) -> dict[str, Any]:
    """Set attributes of ``module``; returns the old values (for ``_swap(module, **old)``)."""
    old = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    return old


def stepped_recovery() -> Callable[[], None]:
    """Wrap the phases recovery calls so that each ends in a ``step``; returns what undoes it."""
    journal_lost, publish = getattr(recovery, "_journal_lost"), getattr(recovery, "publish_segment")  # noqa: B009  (private names)
    remove, fsync_dir = getattr(recovery, "remove_segment"), getattr(parquet, "fsync_dir")  # noqa: B009

    def lost(*args: Any) -> None:
        journal_lost(*args)
        step("lost")

    def begin(segment: Path, *args: Any) -> Any:
        step(f"begin {segment.name}")
        return publish(segment, *args)

    def removed(segment: Path) -> None:
        remove(segment)
        step(f"removed {segment.name}")

    def renamed(folder: Path) -> None:
        fsync_dir(folder)
        step(f"renamed {folder}")

    old_recovery = _swap(recovery, _journal_lost=lost, publish_segment=begin, remove_segment=removed)
    old_parquet = _swap(parquet, fsync_dir=renamed, os=_SteppedOs())

    def undo() -> None:
        _swap(recovery, **old_recovery)
        _swap(parquet, **old_parquet)

    return undo


async def main(root: str, spool: str, run_id: str, stepped: bool) -> None:
    """Run the store under load until the process is killed."""
    settings = RecordSettings(root=root, spool_dir=Path(spool), writer_id="crash", roll_bytes=24_576,
                              roll_seconds=0.2, group_commit_ms=1.0)
    store = RecordStore(settings)
    undo = stepped_recovery() if stepped else (lambda: None)
    await store.start()  # recovery of the previous crash
    undo()
    emit("READY")
    try:
        await asyncio.gather(*(decide(store, run_id, w) for w in range(WORKERS)))
    finally:
        await store.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], stepped=len(sys.argv) > 4))
