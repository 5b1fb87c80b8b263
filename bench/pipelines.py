"""The full weekly pipelines job on generated decisions: DuckDB models vs a pandas + scikit-learn reference.

For each size, records-v1 data is generated once (five weeks, the last drifted; kept under --data-dir
between runs), then each implementation runs --repeats times, each in a fresh process so its peak RSS is
its own. The DuckDB side is exactly `semif-shadow pipelines run --since 2026-W44 --until 2026-W48`
(every decision read, every mart for every week, Parquet and DuckDB outputs written); the reference is
bench/pipelines_pandas.py (same metrics, vectorized). It prints the median job time, peak memory, the
speed-up, and how far the two disagree on accuracy, ECE, Brier and log-loss.

    .venv/bin/python bench/pipelines.py                          # 1M decisions, 3 runs each
    .venv/bin/python bench/pipelines.py --decisions 10000000 --repeats 1
    PIPELINES_MEMORY_LIMIT=4GB .venv/bin/python bench/pipelines.py --decisions 10000000 --repeats 1 \\
        --only duckdb                                             # the DuckDB side alone
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

AS_OF = dt.datetime(2027, 1, 31, tzinfo=dt.UTC)
SINCE, UNTIL = "2026-W44", "2026-W48"


def worker(kind: str, root: Path, out: Path) -> None:
    """Run one implementation once and print its job time as JSON (the parent measures memory)."""
    if kind == "duckdb":
        from pipelines import runner  # noqa: PLC0415  (each worker imports only its own side)
        from pipelines.prices import load_prices  # noqa: PLC0415
        from pipelines.settings import PipelineSettings  # noqa: PLC0415
        from pipelines.storage import open_root  # noqa: PLC0415
        from pipelines.weeks import window  # noqa: PLC0415

        started = time.perf_counter()
        settings = PipelineSettings()
        span = window(SINCE, UNTIL, settings.reference_weeks, AS_OF, dt.timedelta(days=3))
        runner.run(runner.Job(settings, open_root(str(root)), span, load_prices(settings.prices_file), out))
    else:
        import pandas as pd  # noqa: PLC0415

        from bench.pipelines_pandas import run  # noqa: PLC0415

        started = time.perf_counter()
        run(root, out, pd.Timestamp(AS_OF))
    print(json.dumps({"seconds": time.perf_counter() - started}))


def measure(kind: str, root: Path, out: Path) -> tuple[float, float, float]:
    """Job seconds, process CPU seconds and peak RSS (MiB) of one run in a fresh process.

    The process is reaped with wait4 for its own rusage; CPU includes interpreter start and imports.
    """
    with tempfile.TemporaryFile("w+") as buf:
        command = [sys.executable, __file__, "--worker", kind, "--root", str(root), "--out", str(out)]
        proc = subprocess.Popen(  # noqa: S603  (this script, with our own arguments)
            command,
            stdout=buf,
            text=True,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        buf.seek(0)
        stdout = buf.read()
    if proc.returncode:
        raise SystemExit(f"{kind} run failed ({proc.returncode})")
    seconds = json.loads(stdout.strip().splitlines()[-1])["seconds"]
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def ensure_data(data_dir: Path, decisions: int) -> Path:
    """Generate the records once per size (a marker file says the folder is complete)."""
    root = data_dir / f"records-{decisions}"
    if not (root / ".complete").exists():
        from pipelines.generate import Plan, generate  # noqa: PLC0415  (only when data is missing)
        from pipelines.storage import open_root  # noqa: PLC0415

        started = time.perf_counter()
        counts = generate(open_root(str(root)), Plan(decisions=decisions))
        (root / ".complete").write_text(json.dumps(counts))
        print(f"generated {decisions:,} decisions in {time.perf_counter() - started:.0f} s", flush=True)
    return root


def agreement_gap(duck_out: Path, pandas_out: Path) -> float:
    """Largest absolute difference on accuracy, ECE, Brier and log-loss over every group."""
    import duckdb  # noqa: PLC0415  (the parent stays light: workers do the work)
    import pandas as pd  # noqa: PLC0415

    with duckdb.connect(str(duck_out / "pipelines.duckdb"), read_only=True) as db:
        duck = db.sql(
            "select a.decision_type, a.week_start as week, a.model_key, a.accuracy, c.ece, c.brier, "
            "c.log_loss from agreement a join calibration c using (decision_type, week_start, model_key)"
        ).df()
    ref = pd.read_parquet(pandas_out / "calibration.parquet")
    ref["week"] = pd.to_datetime(ref.week.astype(str))
    duck["week"] = pd.to_datetime(duck.week)
    both = duck.merge(ref, on=["decision_type", "week", "model_key"], suffixes=("", "_ref"))
    return float(
        max((both[c] - both[f"{c}_ref"]).abs().max() for c in ("accuracy", "ece", "brier", "log_loss"))
    )


def bench(args: argparse.Namespace) -> None:
    """Run every size and print the side-by-side table."""
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    print(f"{'decisions':>11} {'implementation':<15} {'median s':>9} {'CPU s':>7} {'runs':>5} "
          f"{'peak MiB':>9} {'speed-up':>9}")
    for decisions in args.decisions:
        root = ensure_data(args.data_dir, decisions)
        results: dict[str, list[tuple[float, float, float]]] = {}
        for kind in args.only or ("duckdb", "pandas"):
            out = args.data_dir / f"out-{kind}-{decisions}"
            results[kind] = [measure(kind, root, out) for _ in range(args.repeats)]
        base = statistics.median(t for t, _, _ in results.get("pandas", results["duckdb"]))
        for kind, runs in results.items():
            median = statistics.median(t for t, _, _ in runs)
            cpu = statistics.median(c for _, c, _ in runs)
            peak = max(p for _, _, p in runs)
            print(f"{decisions:>11,} {kind:<15} {median:>9.1f} {cpu:>7.1f} {len(runs):>5} {peak:>9.0f} "
                  f"{base / median:>8.1f}x   runs: {', '.join(f'{t:.1f}' for t, _, _ in runs)}", flush=True)
        if len(results) < 2:
            continue
        gap = agreement_gap(args.data_dir / f"out-duckdb-{decisions}",
                            args.data_dir / f"out-pandas-{decisions}")
        print(f"{'':>11} max |duckdb - pandas| on accuracy, ECE, Brier, log-loss: {gap:.2e}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end", flush=True)


def main() -> None:
    """Parse arguments; run as the benchmark or as one worker."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["duckdb", "pandas"], nargs="+",
                        help="run only these sides (speed-up is then against the first one)")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/semif-bench-pipelines"))  # noqa: S108
    parser.add_argument("--worker", choices=["duckdb", "pandas"], help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.root, args.out)
    else:
        bench(args)


if __name__ == "__main__":
    main()
