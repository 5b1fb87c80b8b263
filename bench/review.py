"""How long the weekly review takes to render, and how big the file is, against the decisions behind it.

Generates records (``semif-shadow pipelines generate``), runs the pipelines over five weeks, then times
reading the marts, gathering the verdicts and rendering the charts, and writing the HTML (medians of
``--repeats``). The report holds aggregates only, so its size and time should not grow with the
decisions: the ratios are against the first (smallest) size of the same run.

    python -P bench/review.py --decisions 1000000 --decisions 10000000 --challenger --work /tmp/review-bench
    python -P bench/review.py --decisions 40000 --decisions 10000000 --weeks 1 --challenger  # one week

(``-P``: ``bench/pipelines.py`` would shadow the ``pipelines`` package.)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from dashboards.config import DEFAULTS
from dashboards.marts import load_marts
from dashboards.report import review, to_html, to_markdown

WEEK = "2026-W48"
CLI = [str(Path(sys.executable).with_name("semif-shadow"))]


def prepare(decisions: int, work: Path, *, challenger: bool, weeks: int = 5) -> tuple[Path, float]:
    """Generate ``decisions`` records over ``weeks`` weeks ending with the review week, run the pipelines.

    Returns the marts folder and the pipelines' seconds. ``challenger``: a second candidate on the same
    decisions and an identity change in the second week (every chart and table of the report then has
    something to show). ``weeks`` 1 puts every decision in the review week.
    """
    suffix = ("-ab" if challenger else "") + ("" if weeks == 5 else f"-w{weeks}")
    records, marts = work / f"records-{decisions}{suffix}", work / f"marts-{decisions}{suffix}"
    if not (marts / "funnel").exists():
        shutil.rmtree(records, ignore_errors=True)
        extra = ["--challenger", "--identity-change-week", str(min(1, weeks - 1))] if challenger else []
        first = f"2026-W{48 - weeks + 1:02d}"
        subprocess.run([*CLI, "pipelines", "generate", "--root", str(records),  # noqa: S603
                        "--decisions", str(decisions), "--weeks", str(weeks), "--first-week", first,
                        "--drift-week", str(weeks - 1), *extra], check=True)
        started = time.perf_counter()
        subprocess.run([*CLI, "pipelines", "run", "--root", str(records), "--since", "2026-W44",  # noqa: S603
                        "--until", WEEK, "--out", str(marts), "--as-of", "2027-01-31T00:00:00Z"], check=True)
        return marts, time.perf_counter() - started
    return marts, float("nan")


def measure(marts: Path, out: Path, repeats: int) -> tuple[float, float, float, float, int]:
    """Medians of seconds to read the marts, build the review, write it; the review's CPU s; HTML bytes.

    The review is the verdicts and charts; its CPU seconds count every thread of this process
    (vl-convert renders on its own).
    """
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        loaded = load_marts(str(marts), WEEK)
        t1, cpu1 = time.perf_counter(), time.process_time()
        result = review(loaded, DEFAULTS)
        t2, cpu2 = time.perf_counter(), time.process_time()
        out.write_text(to_html(result), encoding="utf-8")
        out.with_suffix(".md").write_text(to_markdown(result), encoding="utf-8")
        t3 = time.perf_counter()
        runs.append((t1 - t0, t2 - t1, cpu2 - cpu1, t3 - t2))
    read_s, review_s, review_cpu, write_s = (statistics.median(c) for c in zip(*runs, strict=True))
    return read_s, review_s, review_cpu, write_s, out.stat().st_size


def main() -> None:
    """Print one row per size: decisions, pipelines seconds, read / review / write seconds, HTML size."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, action="append", help="offered decisions (repeatable)")
    parser.add_argument("--work", type=Path, default=Path("review-bench"))
    parser.add_argument("--repeats", type=int, default=3, help="review renders per size (median)")
    parser.add_argument("--challenger", action="store_true",
                        help="two candidates on the same decisions and an identity change")
    parser.add_argument("--weeks", type=int, default=5, choices=range(1, 6), metavar="1-5",
                        help="weeks the decisions are spread over, the last being the review week")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for decisions in args.decisions or [1_000_000]:
        marts, pipeline_s = prepare(decisions, args.work, challenger=args.challenger, weeks=args.weeks)
        out = args.work / f"review-{decisions}.html"
        rows.append((decisions, pipeline_s, *measure(marts, out, args.repeats)))
    header = ("decisions", "pipelines s", "read s", "review s", "review CPU s", "write s", "HTML MB",
              "CPU x", "size x")
    print("{:>11} {:>11} {:>7} {:>8} {:>12} {:>7} {:>7} {:>6} {:>6}".format(*header))
    base_cpu, base_size = rows[0][4], rows[0][6]  # the first (smallest) size is the baseline
    for decisions, pipeline_s, read_s, review_s, review_cpu, write_s, size in rows:
        print(f"{decisions:>11,} {pipeline_s:>11.1f} {read_s:>7.2f} {review_s:>8.2f} {review_cpu:>12.2f} "
              f"{write_s:>7.2f} {size / 1e6:>7.2f} {review_cpu / base_cpu:>6.2f} {size / base_size:>6.2f}")

if __name__ == "__main__":
    main()
