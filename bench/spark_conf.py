"""Spark settings for local mode on a small machine: the fixed cost of the Spark engine's 4,000-decision job.

The records are those of ``tests/pipelines/test_spark.py`` (two candidates, six weeks, an identity change,
a drifted week; targets 2026-W47..W49, ``bootstrap_reps=50``), generated once. Each setting runs the job
``--repeats`` times, each in a fresh process (``local[2]``, the session started before the clock). The CPU
seconds are the whole process tree's (the driver, Spark's JVM and its Python workers: user + system,
reaped children included), read from ``/proc`` just before the session stops: on a shared machine they
are the figure to compare; wall seconds move with the load.

    .venv/bin/python bench/spark_conf.py --repeats 3
    .venv/bin/python bench/spark_conf.py --only default,p4
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BASE = {"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false", "spark.driver.memory": "1g"}
SETTINGS: dict[str, dict[str, str]] = {
    "default": {},  # Spark's defaults: 200 shuffle partitions (coalesced by AQE), AQE on
    "p4": {"spark.sql.shuffle.partitions": "4"},  # the test fixture's setting: 2 per core
    "p4-no-aqe": {"spark.sql.shuffle.partitions": "4", "spark.sql.adaptive.enabled": "false"},
    "p4-no-codegen": {"spark.sql.shuffle.partitions": "4", "spark.sql.codegen.wholeStage": "false"},
}
CLOCK = os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[int, float]]:
    """Every live process: its parent and its user + system CPU seconds (its reaped children's too)."""
    found: dict[int, tuple[int, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        found[int(entry.name)] = (int(fields[1]), sum(int(f) for f in fields[11:15]) / CLOCK)
    return found


def tree_pids(root_pid: int, processes: dict[int, tuple[int, float]] | None = None) -> set[int]:
    """``root_pid`` and every live descendant."""
    processes = _processes() if processes is None else processes
    tree, frontier = {root_pid}, [root_pid]
    while frontier:
        pid = frontier.pop()
        children = [c for c, (p, _) in processes.items() if p == pid]
        tree.update(children)
        frontier.extend(children)
    return tree


def tree_cpu_seconds(root_pid: int) -> float:
    """User + system CPU seconds of ``root_pid`` and every live descendant (their reaped children too)."""
    processes = _processes()
    return sum(processes[pid][1] for pid in tree_pids(root_pid, processes) if pid in processes)


def worker(setting: str, root: Path, out: Path) -> None:
    """One run of the Spark engine under ``setting``; prints job seconds and tree CPU seconds as JSON."""
    from pipelines import runner, spark_runner  # noqa: PLC0415
    from pipelines.prices import load_prices  # noqa: PLC0415
    from pipelines.settings import PipelineSettings  # noqa: PLC0415
    from pipelines.storage import open_root  # noqa: PLC0415
    from pipelines.weeks import window  # noqa: PLC0415
    from tests.pipelines.test_spark import AS_OF, FIRST, LAST  # noqa: PLC0415

    begun = time.perf_counter()
    spark = spark_runner.session("local[2]", {**BASE, **SETTINGS[setting]})
    cpu_start = tree_cpu_seconds(os.getpid())
    started = time.perf_counter()
    settings = PipelineSettings(bootstrap_reps=50)
    span = window(FIRST, LAST, settings.reference_weeks, AS_OF, dt.timedelta(days=settings.maturity_lag_days))
    job = runner.Job(settings, open_root(str(root)), span, load_prices(settings.prices_file), out)
    spark_runner.run(job, spark=spark)
    seconds = time.perf_counter() - started
    cpu = tree_cpu_seconds(os.getpid()) - cpu_start
    print(json.dumps({"seconds": seconds, "cpu": cpu, "startup": started - begun}))
    spark.stop()


def measure(setting: str, root: Path, out: Path) -> dict[str, float]:
    """One run in a fresh process."""
    command = [sys.executable, __file__, "--worker", setting, "--root", str(root), "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603  (this script)
    if done.returncode:
        raise SystemExit(f"{setting} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    """Generate the records once, run each setting (interleaved), print medians and the ratio to default."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default=",".join(SETTINGS), help="Comma-separated settings to run.")
    parser.add_argument("--data-dir", type=Path, default=Path(tempfile.gettempdir()) / "semif-spark-conf")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        worker(args.worker, args.root, args.out)
        return
    root = args.data_dir / "records"
    if not (root / ".complete").exists():
        from pipelines.generate import generate  # noqa: PLC0415
        from pipelines.storage import open_root  # noqa: PLC0415
        from tests.pipelines.test_spark import PLAN  # noqa: PLC0415

        generate(open_root(str(root)), PLAN)
        (root / ".complete").write_text("")
    chosen = args.only.split(",")
    if unknown := set(chosen) - SETTINGS.keys():
        parser.error(f"unknown settings {sorted(unknown)}; known: {', '.join(SETTINGS)}")
    runs: dict[str, list[dict[str, float]]] = {s: [] for s in chosen}
    for _ in range(args.repeats):
        for setting in chosen:
            runs[setting].append(measure(setting, root, args.data_dir / "out"))
            print(f"  {setting}: {runs[setting][-1]}", flush=True)
    base = statistics.median(r["cpu"] for r in runs[chosen[0]])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the end (loaded machine)")
    ratio = f"CPU vs {chosen[0]}"
    print(f"{'setting':<14} {'runs':>4} {'CPU s':>7} {'wall s':>7} {'start s':>7} {ratio:>16}")
    for setting, results in runs.items():
        cpu = statistics.median(r["cpu"] for r in results)
        wall = statistics.median(r["seconds"] for r in results)
        start = statistics.median(r["startup"] for r in results)
        print(f"{setting:<14} {len(results):>4} {cpu:>7.1f} {wall:>7.1f} {start:>7.1f} {cpu / base:>15.2f}x")


if __name__ == "__main__":
    main()
