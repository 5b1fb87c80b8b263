"""The full weekly pipelines job on generated decisions: DuckDB models vs a pandas + scikit-learn reference.

For each size, records data is generated once (five weeks, the last drifted; kept under --data-dir
between runs), then each implementation runs --repeats times, each in a fresh process so its peak RSS is
its own. The DuckDB side is exactly `semif-shadow pipelines run --since 2026-W44 --until 2026-W48`
(every decision read, every mart for every week, Parquet and DuckDB outputs written); the reference is
bench/pipelines_pandas.py (same metrics, vectorized). It prints the median job time, peak memory, the
speed-up, and how far the two disagree on agreement, ECE, Brier and log-loss.

With --engine spark the two sides are the DuckDB engine and the Spark engine (`pipelines run --engine
spark`, local[*] on this machine, the session started before the clock; its start-up is printed apart).
Peak memory is that of the largest process (the worker, or Spark's JVM, its child).

    .venv/bin/python bench/pipelines.py                          # 1M decisions, 3 runs each
    .venv/bin/python bench/pipelines.py --decisions 10000000 --repeats 1
    PIPELINES_MEMORY_LIMIT=4GB .venv/bin/python bench/pipelines.py --decisions 10000000 --repeats 1 \\
        --only duckdb                                             # the DuckDB side alone
    .venv/bin/python bench/pipelines.py --engine spark --repeats 1   # DuckDB beside Spark (local[*])
    .venv/bin/python bench/pipelines.py --decisions 10000000 --only duckdb --audited --candidates 1 2 4
    .venv/bin/python bench/pipelines.py --decisions 10000000 --only duckdb floor --audited --candidates 1 2

`floor` is the job's read and join alone (bench/pipelines_floor.py): what no change to the models can save.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

AS_OF = dt.datetime(2027, 1, 31, tzinfo=dt.UTC)
SINCE, UNTIL = "2026-W44", "2026-W48"

if TYPE_CHECKING:
    from pipelines.runner import Job


def bench_job(root: Path, out: Path | None = None) -> Job:
    """The job every side times: `pipelines run --since SINCE --until UNTIL` at ``AS_OF`` on ``root``."""
    from pipelines import runner  # noqa: PLC0415  (each worker imports only its own side)
    from pipelines.prices import load_prices  # noqa: PLC0415
    from pipelines.settings import PipelineSettings  # noqa: PLC0415
    from pipelines.storage import open_root  # noqa: PLC0415
    from pipelines.weeks import window  # noqa: PLC0415

    settings = PipelineSettings()
    span = window(SINCE, UNTIL, settings.reference_weeks, AS_OF, dt.timedelta(days=3))
    return runner.Job(settings, open_root(str(root)), span, load_prices(settings.prices_file), out)


def worker(kind: str, root: Path, out: Path) -> None:
    """Run one implementation once and print its job time as JSON (the parent measures memory)."""
    if kind == "spark":
        spark_worker(root, out)
        return
    if kind == "floor":
        from bench.pipelines_floor import read_and_join  # noqa: PLC0415

        started = time.perf_counter()
        read_and_join(bench_job(root))
    elif kind == "duckdb":
        from pipelines import runner  # noqa: PLC0415  (each worker imports only its own side)

        started = time.perf_counter()
        runner.run(bench_job(root, out))
    else:
        import pandas as pd  # noqa: PLC0415

        from bench.pipelines_pandas import run  # noqa: PLC0415

        started = time.perf_counter()
        run(root, out, pd.Timestamp(AS_OF))
    print(json.dumps({"seconds": time.perf_counter() - started, "peak_mib": peak_mib(os.getpid())}))


def peak_mib(pid: int) -> float:
    """A process's peak resident memory since its exec (``VmHWM``), MiB; 0 where it has none (a zombie).

    Not ``wait4``'s ``ru_maxrss``: Linux carries the parent's memory into a child's at its exec, so after a
    large data generation every run would report the generator's memory.
    """
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    return next((int(ln.split()[1]) / 1024 for ln in status.splitlines() if ln.startswith("VmHWM:")), 0.0)


def spark_worker(root: Path, out: Path) -> None:
    """The Spark engine once, after its session has started; prints job and start-up seconds."""
    from pipelines import spark_runner  # noqa: PLC0415

    begun = time.perf_counter()
    spark = spark_runner.session("local[*]", {"spark.ui.enabled": "false", "spark.driver.memory": "4g",
                                              "spark.ui.showConsoleProgress": "false"})
    started = time.perf_counter()
    job = bench_job(root, out)
    result, _ = spark_runner.run(job, spark=spark)
    seconds = time.perf_counter() - started
    stages = dict(sorted(result.seconds.items(), key=lambda kv: -kv[1]))
    cpu, peak = tree_usage(os.getpid())  # the JVM and its Python workers are not reaped by this process
    print(json.dumps({"seconds": seconds, "startup": started - begun, "stages": stages,
                      "cpu": cpu, "peak_mib": peak}))
    spark.stop()


def tree_usage(root_pid: int) -> tuple[float, float]:
    """CPU seconds of the process tree under ``root_pid``, and the largest peak RSS in it (MiB)."""
    from bench.spark_conf import tree_cpu_seconds, tree_pids  # noqa: PLC0415

    peaks = [0.0]
    for pid in tree_pids(root_pid):
        with contextlib.suppress(OSError):  # gone since it was listed
            peaks.append(peak_mib(pid))
    return tree_cpu_seconds(root_pid), max(peaks)


def measure(kind: str, root: Path, out: Path) -> tuple[float, float, float]:
    """Job seconds, process CPU seconds and peak RSS (MiB) of one run in a fresh process.

    The process is reaped with wait4 for its own CPU time (interpreter start and imports included); its peak
    memory is the one it reports (``peak_mib``).
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
    report = json.loads(stdout.strip().splitlines()[-1])
    if "startup" in report:
        stages = list(report["stages"].items())
        print(f"{'':>11} spark: session start-up {report['startup']:.1f} s; slowest models (s): "
              + ", ".join(f"{k} {v:.1f}" for k, v in stages[:8])
              + f"; the other {len(stages) - 8} models {sum(v for _, v in stages[8:]):.1f}", flush=True)
        return report["seconds"], report["cpu"], report["peak_mib"]  # the whole tree: driver, JVM, workers
    return report["seconds"], usage.ru_utime + usage.ru_stime, report["peak_mib"]


AUDIT_DISAGREEMENTS, AUDIT_AGREEMENT_RATE = 5_000, 0.005
"""``--audited``: each week's audit sample (`pipelines.generate_audits`): up to 5,000 disagreements and 0.5%
of the agreements per type, about 0.9% of the decisions at 10M."""


def ensure_data(data_dir: Path, decisions: int, candidates: int = 1, *, audited: bool = False) -> Path:
    """Generate the records once per size and file format (a marker file says the folder is complete).

    The files are compressed as the sidecar writes them; the folder's name carries the codec, so data
    generated by an older version (snappy) is not reused. ``audited`` adds each week's audit sample and a
    simulated auditor's answers (``AUDIT_DISAGREEMENTS``, ``AUDIT_AGREEMENT_RATE``).
    """
    from contracts.records import COMPRESSION  # noqa: PLC0415  (pyarrow, not DuckDB or pandas)

    suffix = {1: "", 2: "-ab"}.get(candidates, f"-c{candidates}") + ("-audited" if audited else "")
    root = data_dir / f"records-{decisions}-{COMPRESSION}{suffix}"
    if not (root / ".complete").exists():
        from pipelines.generate import Plan, generate  # noqa: PLC0415  (only when data is missing)
        from pipelines.storage import open_root  # noqa: PLC0415

        started = time.perf_counter()
        from pipelines import synth  # noqa: PLC0415

        knobs = synth.Knobs() if candidates == 1 else synth.Knobs(
            challenger=synth.CHALLENGER, identity_change=synth.IdentityChange(week=2),
            more_challengers=synth.MORE_CHALLENGERS[:candidates - 2],
        )
        plan = Plan(decisions=decisions, knobs=knobs)
        if audited:
            from pipelines.generate_audits import generate_audited  # noqa: PLC0415

            auditor = synth.AuditKnobs(disagreements=AUDIT_DISAGREEMENTS, agreement_rate=AUDIT_AGREEMENT_RATE)
            counts = generate_audited(open_root(str(root)), plan, auditor)
        else:
            counts = generate(open_root(str(root)), plan)
        (root / ".complete").write_text(json.dumps(counts))
        print(f"generated {decisions:,} decisions in {time.perf_counter() - started:.0f} s", flush=True)
    return root


def agreement_gap(duck_out: Path, pandas_out: Path) -> float:
    """Largest absolute difference on agreement, ECE, Brier and log-loss over every group."""
    import duckdb  # noqa: PLC0415  (the parent stays light: workers do the work)
    import pandas as pd  # noqa: PLC0415

    with duckdb.connect(str(duck_out / "pipelines.duckdb"), read_only=True) as db:
        duck = db.sql(
            "select a.decision_type, a.week_start as week, a.model_key, a.agreement, c.ece, c.brier, "
            "c.log_loss from agreement a join calibration c using (decision_type, week_start, model_key)"
        ).df()
    ref = pd.read_parquet(pandas_out / "calibration.parquet")
    ref["week"] = pd.to_datetime(ref.week.astype(str))
    duck["week"] = pd.to_datetime(duck.week)
    both = duck.merge(ref, on=["decision_type", "week", "model_key"], suffixes=("", "_ref"))
    return float(
        max((both[c] - both[f"{c}_ref"]).abs().max() for c in ("agreement", "ece", "brier", "log_loss"))
    )


def paired_gap(duck_out: Path, pandas_out: Path) -> str:
    """Pairs found by both sides, and the largest gap on paired count, difference and its interval."""
    import duckdb  # noqa: PLC0415
    import pandas as pd  # noqa: PLC0415

    with duckdb.connect(str(duck_out / "pipelines.duckdb"), read_only=True) as db:
        duck = db.sql("select decision_type, week_start as week, candidate_a, candidate_b, model_key_a, "
                      "model_key_b, paired, difference, difference_low, difference_high, mcnemar_p "
                      "from paired").df()
    ref = pd.read_parquet(pandas_out / "paired.parquet")
    ref["week"] = pd.to_datetime(ref.week.astype(str))
    duck["week"] = pd.to_datetime(duck.week)
    keys = ["decision_type", "week", "candidate_a", "candidate_b", "model_key_a", "model_key_b"]
    both = duck.merge(ref, on=keys, suffixes=("", "_ref"))
    gap = max((both[c] - both[f"{c}_ref"]).abs().max()
              for c in ("paired", "difference", "difference_low", "difference_high", "mcnemar_p"))
    return f"{len(both)} of {len(duck)} / {len(ref)} pairs matched, max gap {gap:.2e}"


Runs = list[tuple[float, float, float]]
"""One side's runs: job seconds, CPU seconds, peak MiB."""


def bench(args: argparse.Namespace) -> None:
    """Run every size (and candidate count) and print the side-by-side table."""
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    print(f"{'decisions':>11} {'cand.':>5} {'implementation':<15} {'median s':>9} {'CPU s':>7} {'runs':>5} "
          f"{'peak MiB':>9} {'speed-up':>9}")
    sides = args.only or (("duckdb", "spark") if args.engine == "spark" else ("duckdb", "pandas"))
    counts = sorted(set(args.candidates))
    for decisions in args.decisions:
        roots = {c: ensure_data(args.data_dir, decisions, c, audited=args.audited) for c in counts}
        results: dict[int, dict[str, Runs]] = {c: {kind: [] for kind in sides} for c in counts}
        for _ in range(args.repeats):  # round-robin, so a drift of the machine's speed reaches every count
            for candidates in counts:
                for kind in sides:
                    out = args.data_dir / f"out-{kind}-{decisions}-{candidates}"
                    results[candidates][kind].append(measure(kind, roots[candidates], out))
        for candidates, by_kind in results.items():
            report(args, decisions, candidates, by_kind)
        if len(counts) > 1:
            for kind in sides:  # the first side's verdict; the others' first step alone
                lines = beyond_the_first({c: median(by_kind[kind]) for c, by_kind in results.items()}, kind)
                print(lines if kind == sides[0] else lines.splitlines()[0], flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} at the end", flush=True)


def median(runs: Runs) -> float:
    """The median job seconds of some runs."""
    return statistics.median(t for t, _, _ in runs)


def report(args: argparse.Namespace, decisions: int, candidates: int, results: dict[str, Runs]) -> None:
    """One size's and candidate count's rows, then how far DuckDB and pandas disagree where both ran."""
    base = median(results.get("pandas", next(iter(results.values()))))
    for kind, runs in results.items():
        cpu = statistics.median(c for _, c, _ in runs)
        peak = max(p for _, _, p in runs)
        times = ", ".join(f"{t:.1f}" for t, _, _ in runs)
        print(f"{decisions:>11,} {candidates:>5} {kind:<15} {median(runs):>9.1f} {cpu:>7.1f} {len(runs):>5} "
              f"{peak:>9.0f} {base / median(runs):>8.1f}x   runs: {times}", flush=True)
    if "duckdb" in results and "floor" in results:
        job, floor = median(results["duckdb"]), median(results["floor"])
        print(f"{'':>17} duckdb job / its read-and-join floor: {job / floor:.1f}x "
              f"({job - floor:.1f} s of modelling and output)", flush=True)
    if len(results) < 2 or "pandas" not in results:
        return
    duck_out = args.data_dir / f"out-duckdb-{decisions}-{candidates}"
    pandas_out = args.data_dir / f"out-pandas-{decisions}-{candidates}"
    gap = agreement_gap(duck_out, pandas_out)
    print(f"{'':>17} max |duckdb - pandas| on agreement, ECE, Brier, log-loss: {gap:.2e}", flush=True)
    if candidates > 1:
        print(f"{'':>17} paired: {paired_gap(duck_out, pandas_out)}", flush=True)


def beyond_the_first(seconds: dict[int, float], kind: str) -> str:
    """Whether ``kind``'s median seconds grow at most linearly in the candidates beyond the fewest.

    The step from the fewest candidates to the next count is the unit: with 1, 2 and 4, the four-candidate
    run may cost at most 3 x (T2 - T1) more than the one-candidate run.
    """
    (first, t_first), (second, t_second), *more = sorted(seconds.items())
    unit = (t_second - t_first) / (second - first)
    lines = [f"{'':>17} {kind}, each candidate beyond {first}: {unit:.1f} s from {first} to {second}"]
    for count, t in more:
        linear = unit * (count - first)
        verdict = "at most linear" if t - t_first <= linear else "more than linear"
        lines.append(f"{'':>17} {count} candidates: T{count} - T{first} = {t - t_first:.1f} s against "
                     f"{count - first} x {unit:.1f} = {linear:.1f} s: {verdict}")
    return "\n".join(lines)


def main() -> None:
    """Parse arguments; run as the benchmark or as one worker."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--candidates", type=int, choices=[1, 2, 4], nargs="+", default=[1],
                        help="2: a challenger, an identity change mid-W46; 4: two more challengers; several "
                             "counts: runs round-robin, then the cost of each candidate beyond the first")
    parser.add_argument("--audited", action="store_true",
                        help="records with each week's audit sample answered (about 0.9%% audited at 10M)")
    parser.add_argument("--engine", choices=["duckdb", "spark"], default="duckdb",
                        help="spark: DuckDB beside the Spark engine instead of beside pandas")
    parser.add_argument("--only", choices=["duckdb", "pandas", "spark", "floor"], nargs="+",
                        help="run only these sides (speed-up is then against the first one); "
                             "floor: the job's read and join alone (bench/pipelines_floor.py)")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/semif-bench-pipelines"))  # noqa: S108
    parser.add_argument("--worker", choices=["duckdb", "pandas", "spark", "floor"], help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.root, args.out)
    else:
        bench(args)


if __name__ == "__main__":
    main()
