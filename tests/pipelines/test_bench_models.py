"""``bench/pipelines_models.py`` on records ``bench/pipelines.py`` generates: a row per model, and a profile.

The tool is how the job's cost is read model by model and operator by operator; these
runs keep both modes working as the models change: every model is a row, in build order, and a profiled
model lists the operators DuckDB ran for it with the rows each produced.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.pipelines import ensure_data
from pipelines.sqlmodels import load_models

TOOL = Path(__file__).resolve().parents[2] / "bench" / "pipelines_models.py"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20,000 decisions, two candidates, audited, as ``bench/pipelines.py`` writes them."""
    return ensure_data(tmp_path_factory.mktemp("bench_records"), 20_000, 2, audited=True)


OPERATOR = re.compile(r"^ *(?P<seconds>[\d.]+) +(?P<name>[A-Z_]+) rows=(?P<rows>\d+) (?P<detail>.*)$")


def profiled(out: str, model: str, *, in_file: bool = False) -> list[re.Match[str]]:
    """The operator lines of ``--profile MODEL``'s output, after its heading."""
    heading, *lines = out.splitlines()
    where = ", int_decisions in a file" if in_file else ""
    assert re.fullmatch(rf"{model} over ticket_routing: [\d.]+ s wall, [\d.]+ CPU-s \(DuckDB: [\d.]+\), "
                        rf"[\d,]+ MiB spilled{where}", heading), heading  # ticket_routing: the largest type
    matches = [OPERATOR.match(line) for line in lines]
    assert all(matches), lines
    return [m for m in matches if m is not None]


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The tool run with ``args`` (and ``env`` added to this process's environment), its output captured."""
    return subprocess.run([sys.executable, "-P", str(TOOL), *args],  # noqa: S603  (our own script)
                          capture_output=True, text=True, check=False, timeout=300,
                          env=None if env is None else {**os.environ, **env})


def tool(*args: str, env: dict[str, str] | None = None) -> str:
    """The tool's standard output (it must exit 0)."""
    done = run(*args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_row_per_model_in_build_order_then_the_process(records: Path) -> None:
    """Every model is one row (its passes summed), in the order the runner builds them, then the process."""
    lines = tool(str(records)).splitlines()
    names = [line[:26].strip() for line in lines if line and not line.startswith(("passes:", "step"))]
    assert names[:2] == ["(imports)", "(connect, register)"]
    assert names[2:-2] == [m.name for m in load_models()]
    assert names[-2:] == ["write", "(process)"]


def test_a_profile_lists_the_operators_of_one_model(records: Path) -> None:
    """``--profile paired``: its self-join on the decision key over the labelled rows of the largest type."""
    operators = profiled(tool(str(records), "--profile", "paired", "--floor", "0"), "paired")
    joins = [op for op in operators
             if op["name"] == "HASH_JOIN" and "decision_key = decision_key" in op["detail"]]
    assert len(joins) == 1
    # each side of the self-join scans the labelled rows: some, never more than the type's proposals
    scans = [int(op["rows"]) for op in operators if op["name"] == "CTE_SCAN"]
    assert 0 < max(scans) < 20_000 * 2


def test_a_profile_builds_the_decisions_where_the_job_would(records: Path, tmp_path: Path) -> None:
    """A pass past ``PIPELINES_DISK_RATIO`` x the memory limit is profiled with its decisions in a file.

    The job's cost there is the file's write, so ``--profile int_decisions`` must time that write, not an
    in-memory build the job would not do; the file is gone afterwards. Under the ratio, in memory as before.
    """
    spill = tmp_path / "spill"
    on_disk = {"PIPELINES_DISK_RATIO": "0.000001", "PIPELINES_TEMP_DIRECTORY": str(spill)}
    operators = profiled(tool(str(records), "--profile", "int_decisions", "--floor", "0", env=on_disk),
                         "int_decisions", in_file=True)
    assert [op for op in operators if op["name"] == "CREATE_TABLE_AS"]
    assert [op for op in operators if op["name"] == "PARQUET_SCAN" and int(op["rows"]) > 0]
    assert not list(spill.glob("decisions-*")), list(spill.iterdir())
    # a model after int_decisions reads the file's table, and the heading still says where it was
    cube = tool(str(records), "--profile", "int_cube", "--floor", "0", env=on_disk)
    profiled(cube, "int_cube", in_file=True)
    in_memory = {"PIPELINES_TEMP_DIRECTORY": str(spill)}
    profiled(tool(str(records), "--profile", "int_decisions", "--floor", "0", env=in_memory), "int_decisions")


def test_label_delay_dedupes_each_decision_in_one_aggregate(tmp_path_factory: pytest.TempPathFactory) -> None:
    """With four candidates, one hash aggregate per decision, not a partial one per segment below the join.

    DuckDB's ``partial_aggregate_pushdown`` would pre-aggregate by segment (a candidate each), which keeps
    every row and doubles the work; the runner turns it off for ``label_delay`` (``OPTIMIZERS_OFF``).
    """
    records = ensure_data(tmp_path_factory.mktemp("bench_records_c4"), 20_000, 4, audited=True)
    operators = profiled(tool(str(records), "--profile", "label_delay", "--floor", "0"), "label_delay")
    aggregates = [op for op in operators if op["name"] == "HASH_GROUP_BY"]
    assert aggregates
    assert not [op for op in aggregates if "EXPORT_STATE" in op["detail"] or "combine" in op["detail"]]


def test_profiling_needs_a_model_that_exists(records: Path) -> None:
    """A misspelt model fails with a clear message rather than profiling something else."""
    done = run(str(records), "--profile", "pared")
    assert done.returncode != 0
    assert "pared" in done.stderr
