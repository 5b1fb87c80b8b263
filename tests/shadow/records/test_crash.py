# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""The crash test: a real process under steady load, SIGKILLed 20 times at random moments."""

from __future__ import annotations

import collections
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from shadow.records.layout import open_dataset
from shadow.records.store import RecordStore

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings

DRIVER = Path(__file__).with_name("crash_driver.py")
KILLS = 20


class Run:
    """One driver process; its acknowledgements are read on a thread until it dies."""

    def __init__(self, root: Path, spool: Path, run_id: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(DRIVER), str(root), str(spool), run_id],  # noqa: S603  (our driver)
                                     stdout=subprocess.PIPE)
        self.lines: list[str] = []
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            if line == "READY":
                self.ready.set()
            else:
                self.lines.append(line)

    def kill(self) -> None:
        """SIGKILL, then collect everything it acknowledged."""
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        assert self.proc.stdout is not None
        self.proc.stdout.close()


def _crash_many(root: Path, spool: Path, rng: random.Random) -> tuple[set[str], set[str]]:
    accepted: set[str] = set()
    outcomes: set[str] = set()
    for k in range(KILLS):
        run = Run(root, spool, f"r{k}")
        if k % 5 == 4:  # now and then, kill it during start-up (recovery of the previous crash)
            time.sleep(rng.uniform(0.3, 1.2))
        else:
            assert run.ready.wait(timeout=30), "driver did not start"
            time.sleep(rng.uniform(0.05, 0.6))
        run.kill()
        for line in run.lines:
            kind, decision_id = line.split(" ", 1)
            (accepted if kind == "A" else outcomes).add(decision_id)
    return accepted, outcomes


async def test_sigkill_twenty_times_loses_nothing_acknowledged(local_settings: RecordSettings) -> None:
    """Twenty SIGKILLs under load, then a restart: nothing acknowledged is lost, nothing doubled.

    Every file opens, no row appears twice, every acknowledged outcome is there, every accepted
    decision has its proposals row or a lost/crash_recovery row.
    """
    settings = local_settings.model_copy(update={"writer_id": "crash"})
    root, spool = Path(settings.root), settings.spool_dir
    accepted, acked_outcomes = _crash_many(root, spool, random.Random(5))  # noqa: S311  (kill timing, not crypto)
    async with RecordStore(settings) as store:  # the final restart: recovery of the last crash
        pass
    assert len(accepted) > 500
    assert len(acked_outcomes) > 500
    files = sorted(root.rglob("*.parquet"))  # noqa: ASYNC240  (the store is closed; nothing to block)
    assert files
    for path in files:
        assert not path.name.startswith(".")
        pq.read_table(path, partitioning=None)  # opens and decodes: not corrupt, not partial
    proposals = open_dataset(settings, "proposals").to_table(columns=["decision_id", "status", "reason"])
    outcomes = open_dataset(settings, "outcomes").to_table(columns=["decision_id"])
    proposal_ids = proposals.column("decision_id").to_pylist()
    outcome_ids = outcomes.column("decision_id").to_pylist()
    assert not [d for d, n in collections.Counter(proposal_ids).items() if n > 1], "a proposals row twice"
    assert not [d for d, n in collections.Counter(outcome_ids).items() if n > 1], "an outcomes row twice"
    assert acked_outcomes <= set(outcome_ids)
    assert accepted <= set(proposal_ids)
    lost = {(r["status"], r["reason"]) for r in proposals.to_pylist() if r["status"] == "lost"}
    assert lost <= {("lost", "crash_recovery")}
    assert store.stats.recovery["segments"] >= 1
    n_lost = sum(s == "lost" for s in proposals.column("status").to_pylist())
    print(f"\ncrash test: {KILLS} kills, {len(accepted)} accepted, {len(acked_outcomes)} outcomes acked, "  # noqa: T201  (figures for the docs, shown with -s)
          f"{len(proposal_ids)} proposals rows ({n_lost} lost), {len(files)} files")
