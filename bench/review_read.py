"""Reading the marts for the review, with and without the row-level ``severe_errors`` mart, alternated.

    python -P bench/review_read.py --marts /tmp/review-bench/marts-10000000-ab --rounds 3

The review reads every mart in ``dashboards.marts.MARTS`` and ``OPTIONAL_MARTS``; ``severe_errors`` (one
row per severe error, growing with the decisions) was read too until it was dropped as unused. Prints
the median seconds of each side and the ratio against reading it.
"""

from __future__ import annotations

import argparse
import statistics
import time

from dashboards.marts import MARTS, OPTIONAL_MARTS, read_mart
from pipelines.storage import open_root

WEEK = "2026-W48"


def read_all(marts: str, extra: tuple[str, ...]) -> float:
    """Seconds to read every mart the review reads, plus ``extra``."""
    root = open_root(marts)
    started = time.perf_counter()
    for mart in (*MARTS, *extra):
        read_mart(root, mart, WEEK)
    for mart in OPTIONAL_MARTS:
        read_mart(root, mart, WEEK, optional=True)
    return time.perf_counter() - started


def main() -> None:
    """Alternate the two sides ``--rounds`` times; print medians and the ratio."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--marts", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sides: dict[str, list[float]] = {"with severe_errors": [], "review today": []}
    for _ in range(args.rounds):
        sides["with severe_errors"].append(read_all(args.marts, ("severe_errors",)))
        sides["review today"].append(read_all(args.marts, ()))
    base = statistics.median(sides["with severe_errors"])
    print(f"{'side':>20} {'median s':>9} {'x':>5}  runs")
    for side, runs in sides.items():
        median = statistics.median(runs)
        print(f"{side:>20} {median:>9.2f} {base / median:>5.1f}  {', '.join(f'{r:.2f}' for r in runs)}")


if __name__ == "__main__":
    main()
