"""``bench/pipelines.py`` with several candidate counts: a row per count, then the cost beyond the first.

The line is how the job's scaling in candidates is read (at most linear beyond the first); these runs keep it
computed from the very medians the table prints, and its verdict the right way round.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.pipelines import beyond_the_first

TOOL = Path(__file__).resolve().parents[2] / "bench" / "pipelines.py"
ROW = re.compile(r"^ +[\d,]+ +(?P<candidates>\d) (?P<side>duckdb|floor) +(?P<median>[\d.]+) +[\d.]+ +1 +\d+ "
                 r"+(?P<ratio>[\d.]+)x   runs: ")
FLOOR = re.compile(r"^ +duckdb job / its read-and-join floor: (?P<ratio>[\d.]+)x \((?P<rest>[\d.-]+) s of "
                   r"modelling and output\)$")
FLOOR_STEP = re.compile(r"^ +floor, each candidate beyond 1: (?P<unit>[\d.-]+) s from 1 to 2$")
STEP = re.compile(r"^ +duckdb, each candidate beyond 1: (?P<unit>[\d.-]+) s from 1 to 2$")
FOUR = re.compile(r"^ +4 candidates: T4 - T1 = (?P<cost>[\d.-]+) s against 3 x (?P<unit>[\d.-]+) = "
                  r"(?P<linear>[\d.-]+) s: (?P<verdict>at most linear|more than linear)$")


def test_the_verdict_compares_the_cost_beyond_the_first_with_the_first_step() -> None:
    """Exactly linear passes; a tenth of a second over does not; the unit is per candidate."""
    assert beyond_the_first({1: 10.0, 2: 20.0, 4: 40.0}, "duckdb").endswith(
        "4 candidates: T4 - T1 = 30.0 s against 3 x 10.0 = 30.0 s: at most linear")
    assert beyond_the_first({4: 40.1, 1: 10.0, 2: 20.0}, "duckdb").endswith(": more than linear")
    assert "each candidate beyond 2: 5.0 s from 2 to 4" in beyond_the_first({2: 20.0, 4: 30.0}, "duckdb")


@pytest.mark.slow
def test_one_row_per_candidate_count_then_the_cost_beyond_the_first(tmp_path: Path) -> None:
    """20,000 audited decisions with 1, 2 and 4 candidates, a DuckDB run and a floor run each, round-robin.

    The floor (the job's read and join alone) has its row, the job's ratio to it and its own first step.
    """
    done = subprocess.run(  # noqa: S603  (our own script)
        [sys.executable, "-P", str(TOOL), "--decisions", "20000", "--repeats", "1",
         "--only", "duckdb", "floor", "--audited", "--candidates", "1", "2", "4",
         "--data-dir", str(tmp_path)],
        capture_output=True, text=True, check=False, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    matched = [m for m in map(ROW.match, lines) if m]
    rows = {int(m["candidates"]): float(m["median"]) for m in matched if m["side"] == "duckdb"}
    floors = {int(m["candidates"]): m for m in matched if m["side"] == "floor"}
    assert sorted(rows) == [1, 2, 4], done.stdout
    assert sorted(floors) == [1, 2, 4], done.stdout
    ratios = [m for m in map(FLOOR.match, lines) if m]
    assert len(ratios) == 3, done.stdout
    for count, ratio in zip([1, 2, 4], ratios, strict=True):
        floor = float(floors[count]["median"])
        assert float(floors[count]["ratio"]) == float(ratio["ratio"])  # the row's speed-up is the same ratio
        if floor >= 0.1:  # printed to 0.1 s: a floor printed as 0.0 gives no ratio to check against
            assert float(ratio["ratio"]) == pytest.approx(rows[count] / floor, rel=0.2, abs=0.11)
        assert float(ratio["rest"]) == pytest.approx(rows[count] - floor, abs=0.11)
    assert len([m for m in map(FLOOR_STEP.match, lines) if m]) == 1, done.stdout
    assert len([m for m in map(FOUR.match, lines) if m]) == 1, done.stdout  # the job's verdict only
    step = next(m for m in map(STEP.match, lines) if m)
    four = next(m for m in map(FOUR.match, lines) if m)
    unit = rows[2] - rows[1]  # the printed medians, rounded to 0.1 s: the line may differ by rounding only
    assert float(step["unit"]) == pytest.approx(unit, abs=0.11)
    assert float(four["cost"]) == pytest.approx(rows[4] - rows[1], abs=0.11)
    assert float(four["linear"]) == pytest.approx(3 * float(four["unit"]), abs=0.2)  # 3 x a rounded unit
    cost, linear = float(four["cost"]), float(four["linear"])
    if cost != linear:  # equal as printed: the verdict compares the unrounded seconds
        assert four["verdict"] == ("at most linear" if cost < linear else "more than linear")


def test_the_floor_reads_and_joins_every_proposal_of_the_window(tmp_path: Path) -> None:
    """The floor's join returns one row per proposal in the window (every type, both candidates).

    Counted independently with pyarrow over the proposals' files: a floor that skipped a type, a candidate
    or the join's rows would be cheaper than the job's read and understate what the models cost.
    """
    import pyarrow.dataset as pads  # noqa: PLC0415

    from bench.pipelines import bench_job, ensure_data  # noqa: PLC0415
    from bench.pipelines_floor import read_and_join  # noqa: PLC0415

    root = ensure_data(tmp_path, 2_000, 2, audited=True)
    proposals = pads.dataset(root / "proposals", format="parquet", partitioning="hive")
    assert read_and_join(bench_job(root)) == proposals.count_rows() == 4_000


@pytest.mark.slow
def test_a_runs_peak_memory_is_its_own_not_the_parents(tmp_path: Path) -> None:
    """A run started while the benchmark's own process is large reports the run's memory, not the parent's.

    The benchmark generates the records in its own process (gigabytes at 10M decisions) before it times
    anything; each run's peak must still be that run's alone.
    """
    from bench.pipelines import ensure_data, measure  # noqa: PLC0415  (imports the records' writer)

    root = ensure_data(tmp_path, 2_000, 2, audited=True)
    ballast = bytearray(1536 * 2**20)
    ballast[:: 4096] = b"\x01" * len(range(0, len(ballast), 4096))  # every page resident
    seconds, cpu, peak = measure("duckdb", root, tmp_path / "out")
    del ballast
    assert seconds > 0
    assert cpu > 0
    assert 50 < peak < 1024, peak  # the DuckDB job on 2,000 decisions, far below the parent's 1.5 GiB
