# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Sustained records/s into Parquet through the record store, and what the fsync policy costs.

Two workloads, each timed from the first call until ``close()`` returned (every row in a complete
Parquet file, the journal empty):

* ``decisions``: ``--concurrency`` decisions in flight, each ``accept`` (durable) -> ``proposal`` ->
  ``outcome`` (durable), like the sidecar under load; rate = proposals/s.
* ``proposals``: a stream of finished proposals rows (``proposal`` only); rate = proposals/s.

For each fsync policy (``group``: one fsync per commit; ``always``: one per record; ``none``) it
prints the median of ``--repeats`` runs and the ratio to ``group``. Pinned to one CPU by default.

    .venv/bin/python bench/records.py            # about a minute on the 2-core dev machine
    .venv/bin/python bench/records.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shadow.records.settings import RecordSettings
from shadow.records.store import RecordStore

OPTIONS = ["billing", "technical", "sales", "account", "other"]
BASE_US = 1_796_000_000_000_000


def proposal(i: int) -> dict[str, Any]:
    """A realistic scored proposals row (~900 bytes of JSON)."""
    return {"decision_id": f"d-{i}", "decision_type": ("route", "priority")[i % 2],
            "received_at": BASE_US + i, "sampled": True, "status": "scored", "option_ids": OPTIONS,
            "probabilities": [0.4, 0.3, 0.15, 0.1, 0.05], "logits": [-0.9, -1.2, -1.9, -2.3, -3.0],
            "proposal": "billing", "proposal_probability": 0.4, "backend": "local", "endpoint": "in-process",
            "model_name": "gemma-3-270m", "model_sha256": "a" * 64, "quantization": "Q4_K_M",
            "runtime_version": "llama.cpp 0.3.36", "device": "cpu", "prompt_builder": "plain-v1",
            "template_sha256": "b" * 64, "prompt_tokens": 180, "cached_tokens": 150, "truncated": False,
            "queue_ms": 1.2, "scorer_ms": 85.0, "total_ms": 87.0, "attempts": 1, "state_sha256": "c" * 64,
            "config_sha256": "d" * 64}


def outcome(i: int) -> dict[str, Any]:
    """The outcome reported for decision ``i``."""
    return {"decision_id": f"d-{i}", "decision_type": ("route", "priority")[i % 2], "outcome": "billing",
            "outcome_at": BASE_US + i + 1000, "source": "api"}


async def decisions(store: RecordStore, n: int, concurrency: int) -> None:
    """``concurrency`` workers, each: accept, proposal, outcome."""
    async def worker(first: int) -> None:
        for i in range(first, n, concurrency):
            await store.accept(f"d-{i}", ("route", "priority")[i % 2], BASE_US + i, OPTIONS)
            await store.proposal(proposal(i))
            await store.outcome(outcome(i))
    await asyncio.gather(*(worker(k) for k in range(concurrency)))


async def proposals(store: RecordStore, n: int, _concurrency: int) -> None:
    """A stream of finished proposals rows."""
    for i in range(n):
        await store.proposal(proposal(i))


async def one_run(workload: str, policy: str, n: int, concurrency: int,
                  window_ms: float) -> tuple[float, float]:
    """Proposals per wall second and per CPU second (all threads) for one run, start to closed."""
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR")) as tmp:
        settings = RecordSettings(root=f"{tmp}/root", spool_dir=Path(tmp) / "spool", writer_id="bench",
                                  fsync=policy, group_commit_ms=window_ms)
        run = decisions if workload == "decisions" else proposals
        start, cpu = time.perf_counter(), time.process_time()
        async with RecordStore(settings) as store:
            await run(store, n, concurrency)
        return n / (time.perf_counter() - start), n / (time.process_time() - cpu)


def main() -> None:
    """Run every (workload, policy) pair and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=60_000, help="proposals per run (group and none)")
    parser.add_argument("--always-records", type=int, default=600, help="proposals per run with fsync=always")
    parser.add_argument("--concurrency", type=int, default=256, help="decisions in flight")
    parser.add_argument("--window-ms", type=float, default=2.0, help="group commit window")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--all-cpus", action="store_true", help="do not pin to one CPU")
    parser.add_argument("--quick", action="store_true", help="fewer records, one repeat")
    args = parser.parse_args()
    if args.quick:
        args.records, args.always_records, args.repeats = 20_000, 200, 1
    if not args.all_cpus:
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    print(f"records bench: {args.records} proposals/run ({args.always_records} with always), "
          f"concurrency {args.concurrency}, window {args.window_ms} ms, median of {args.repeats}, "
          f"CPUs {sorted(os.sched_getaffinity(0))}, load average {os.getloadavg()[0]:.1f}")
    print(f"{'workload':<10} {'fsync':<7} {'proposals/s':>12} {'vs group':>9} {'per CPU-s':>10}   wall runs")
    for workload in ("decisions", "proposals"):
        medians: dict[str, float] = {}
        for policy in ("group", "always", "none"):
            n = args.always_records if policy == "always" else args.records
            runs = [asyncio.run(one_run(workload, policy, n, args.concurrency, args.window_ms))
                    for _ in range(args.repeats)]
            medians[policy] = statistics.median(wall for wall, _ in runs)
            per_cpu = statistics.median(cpu for _, cpu in runs)
            ratio = medians[policy] / medians["group"]
            print(f"{workload:<10} {policy:<7} {medians[policy]:>12,.0f} {ratio:>8.3f}x {per_cpu:>10,.0f}   "
                  + " ".join(f"{wall:,.0f}" for wall, _ in runs), flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f} (wall rates fall when other work shares"
          " the CPU; 'per CPU-s' counts this process's CPU time, all threads)")


if __name__ == "__main__":
    main()
