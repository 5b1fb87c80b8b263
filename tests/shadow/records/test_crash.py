# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""The crash test: a real process under steady load, SIGKILLed 20 times, 4 of them inside recovery."""

from __future__ import annotations

import collections
import datetime as dt
import queue
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq

from contracts.records import RECORD_VERSION
from shadow.records.layout import open_dataset
from shadow.records.store import RecordStore

from .crash_driver import dropped_proposal, expected_outcome, expected_proposal

if TYPE_CHECKING:
    from collections.abc import Callable

    from shadow.records.settings import RecordSettings

DRIVER = Path(__file__).with_name("crash_driver.py")
KILLS = 20
STEP_TIMEOUT_S = 60.0
# Where each kill inside recovery lands (kills 4, 9, 14, 19), picked from the steps the driver reports:
IN_RECOVERY: dict[int, Callable[[str], bool]] = {
    4: lambda step: step.startswith("tmp "),  # a Parquet file under its temporary name, not yet renamed
    9: lambda step: step == "lost" or step.startswith("begin "),  # lost rows journaled, nothing published
    14: lambda step: step.startswith("renamed "),  # a file in place, its segment not yet removed
    19: lambda step: step.startswith("removed "),  # one segment gone, the next not yet published
}


class Run:
    """One driver process; its acknowledgements and recovery steps are read on a thread until it dies."""

    def __init__(self, root: Path, spool: Path, run_id: str, *, stepped: bool) -> None:
        args = [sys.executable, str(DRIVER), str(root), str(spool), run_id, *(["stepped"] if stepped else [])]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stdin=subprocess.PIPE)  # noqa: S603  (our driver)
        self.lines: list[str] = []
        self.steps: queue.Queue[str] = queue.Queue()
        self.ready = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode().strip()
            if line == "READY":
                self.ready.set()
                self.steps.put(line)
            elif line.startswith("R "):
                self.steps.put(line[2:])
            else:
                self.lines.append(line)
        self.steps.put("EOF")

    def hold_at(self, wanted: Callable[[str], bool]) -> str:
        """Let recovery go step by step until one ``wanted`` is reported; the driver waits there."""
        assert self.proc.stdin is not None
        seen: list[str] = []
        while True:
            step = self.steps.get(timeout=STEP_TIMEOUT_S)
            assert step not in {"READY", "EOF"}, f"recovery ended without the step wanted; it did {seen}"
            seen.append(step)
            if wanted(step):
                return step
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()

    def kill(self) -> None:
        """SIGKILL, then collect everything it acknowledged."""
        self.proc.kill()
        self.proc.wait(timeout=10)
        self._reader.join(timeout=10)
        for pipe in (self.proc.stdout, self.proc.stdin):
            assert pipe is not None
            pipe.close()


def _crash_many(root: Path, spool: Path, rng: random.Random) -> tuple[dict[str, set[str]], list[str]]:
    """Run and kill the driver ``KILLS`` times; what it acknowledged by kind, and the recovery kill steps."""
    acked: dict[str, set[str]] = {"A": set(), "S": set(), "O": set()}
    held: list[str] = []
    for k in range(KILLS):
        run = Run(root, spool, f"r{k}", stepped=k in IN_RECOVERY)
        if k in IN_RECOVERY:
            step = run.hold_at(IN_RECOVERY[k])
            held.append(step)
            if step.startswith("tmp "):  # the kill leaves a file under its temporary name
                assert Path(step[4:]).name.startswith("."), step
                assert Path(step[4:]).exists(), step
        else:
            assert run.ready.wait(timeout=STEP_TIMEOUT_S), "driver did not start"
            time.sleep(rng.uniform(0.05, 0.6))  # the load runs for a random while: the kill's moment
        run.kill()
        if k in IN_RECOVERY:
            assert not run.ready.is_set(), "the kill meant for recovery came after it"
        for line in run.lines:
            kind, decision_id = line.split(" ", 1)
            acked[kind].add(decision_id)
    return acked, held


EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _as_written(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the driver handed it, plus the columns the store adds (no code of the store used)."""
    given = {k: v for k, v in row.items() if v is not None}
    return {**given, "writer_id": "crash", "record_version": RECORD_VERSION}


def _as_read(row: dict[str, Any]) -> dict[str, Any]:
    """A row read back, without the partition-only ``date``, timestamps as microseconds, nulls dropped."""
    out = {}
    for key, value in row.items():
        if value is None or key == "date":
            continue
        is_time = isinstance(value, dt.datetime)
        out[key] = (value - EPOCH) // dt.timedelta(microseconds=1) if is_time else value
    return out


async def test_sigkill_twenty_times_loses_nothing_acknowledged(local_settings: RecordSettings) -> None:
    """Twenty SIGKILLs under load (four at a recovery step the driver reported), then a restart.

    Every file opens, no hidden temporary file is left, no row appears twice, every row read equals
    the row written (every column), every acknowledged outcome is there with its *scored* proposals
    row, every accepted decision has its row or a lost/crash_recovery row.
    """
    settings = local_settings.model_copy(update={"writer_id": "crash"})
    root, spool = Path(settings.root), settings.spool_dir
    acked, held = _crash_many(root, spool, random.Random(5))  # noqa: S311  (kill timing, not crypto)
    async with RecordStore(settings) as store:  # the final restart: recovery of the last crash
        pass
    assert len(held) == len(IN_RECOVERY)
    assert len(acked["A"]) > 500
    assert len(acked["O"]) > 500
    everything = sorted(p for p in root.rglob("*") if p.is_file())  # noqa: ASYNC240  (the store is closed)
    assert [p for p in everything if p.name.startswith(".") or p.suffix != ".parquet"] == []
    for path in everything:
        pq.read_table(path, partitioning=None)  # opens and decodes: not corrupt, not partial
    proposals = open_dataset(settings, "proposals").to_table().to_pylist()
    outcomes = open_dataset(settings, "outcomes").to_table().to_pylist()
    proposal_ids = [r["decision_id"] for r in proposals]
    outcome_ids = [r["decision_id"] for r in outcomes]
    assert not [d for d, n in collections.Counter(proposal_ids).items() if n > 1], "a proposals row twice"
    assert not [d for d, n in collections.Counter(outcome_ids).items() if n > 1], "an outcomes row twice"
    by_status = collections.defaultdict(set)
    for row in proposals:
        by_status[row["status"], row.get("reason")].add(row["decision_id"])
        if row["status"] == "scored":
            assert _as_read(row) == _as_written(expected_proposal(row["decision_id"], row["decision_type"]))
        elif row["status"] == "dropped":
            assert _as_read(row) == _as_written(dropped_proposal(row["decision_id"], row["decision_type"]))
    for row in outcomes:
        assert _as_read(row) == _as_written(expected_outcome(row["decision_id"], row["decision_type"]))
    assert set(by_status) <= {("scored", None), ("dropped", "queue_full"), ("lost", "crash_recovery")}
    assert acked["O"] <= set(outcome_ids)
    assert acked["O"] <= by_status["scored", None], "an outcome acknowledged, its scored row not kept"
    assert acked["A"] <= set(proposal_ids)
    assert acked["A"] - acked["S"] <= by_status["lost", "crash_recovery"] | by_status["scored", None]
    assert store.stats.recovery["segments"] >= 1
    print(f"\ncrash test: {KILLS} kills (in recovery at {[s.split()[0] for s in held]}), "  # noqa: T201  (figures for the docs, shown with -s)
          f"{len(acked['A'])} accepted, {len(acked['S'])} scored, {len(acked['O'])} outcomes acked, "
          f"{len(proposals)} proposals rows ({len(by_status['lost', 'crash_recovery'])} lost), "
          f"{len(everything)} files")
