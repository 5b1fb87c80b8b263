# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""A stand-in sidecar for the crash test: steady accepts, proposals and outcomes until killed.

Run as ``python crash_driver.py ROOT SPOOL RUN_ID``. After each acknowledged call it writes one line to
stdout with an unbuffered ``os.write`` (``A <id>`` once ``accept`` returned, ``O <id>`` once
``outcome`` returned), so the parent knows exactly what was acknowledged before the SIGKILL.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore
from tests.shadow.records.factories import OPTIONS, outcome_row, proposal_row

WORKERS = 24
TYPES = ("route", "priority")


def emit(line: str) -> None:
    """Tell the parent, before anything else can happen."""
    os.write(1, f"{line}\n".encode())


async def decide(store: RecordStore, run_id: str, worker: int) -> None:
    """One worker: accept, propose (sometimes dropped without accept), report the outcome."""
    rng = random.Random(f"{run_id}-{worker}")  # noqa: S311  (load shape, not crypto)
    for i in range(1_000_000):
        decision_id = f"{run_id}-{worker}-{i}"
        decision_type = TYPES[i % 2]
        now_us = time.time_ns() // 1000
        if rng.random() < 0.1:
            await store.proposal(proposal_row(decision_id, decision_type=decision_type, received_at=now_us,
                                              status="dropped", reason="queue_full"))
            continue
        await store.accept(decision_id, decision_type, now_us, OPTIONS)
        emit(f"A {decision_id}")
        await asyncio.sleep(rng.random() * 0.003)
        await store.proposal(proposal_row(decision_id, decision_type=decision_type, received_at=now_us))
        await store.outcome(outcome_row(decision_id, decision_type=decision_type, outcome_at=now_us + 5))
        emit(f"O {decision_id}")


async def main(root: str, spool: str, run_id: str) -> None:
    """Run the store under load until the process is killed."""
    settings = RecordSettings(root=root, spool_dir=Path(spool), writer_id="crash", roll_bytes=24_576,
                              roll_seconds=0.2, group_commit_ms=1.0)
    async with RecordStore(settings) as store:
        emit("READY")
        await asyncio.gather(*(decide(store, run_id, w) for w in range(WORKERS)))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
