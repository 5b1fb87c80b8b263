"""A pass far larger than memory keeps ``int_decisions`` in a DuckDB file: the same marts, the file removed.

The records here are small, so ``PIPELINES_DISK_RATIO`` is set near 0 to send every pass to the file; what
the file changes is where the table's blocks live, never what the models compute.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from typing import TYPE_CHECKING

import duckdb
import pytest

from pipelines import runner
from pipelines.decision_store import DecisionStore, remove_leftovers, size_bytes
from pipelines.prices import load_prices
from pipelines.settings import PipelineSettings
from pipelines.source import WindowFiles
from pipelines.storage import open_root
from pipelines.weeks import window
from tests.pipelines.harness import AS_OF, FIRST, LAST, Computed
from tests.pipelines.marts_equal import mart_files, unequal_marts

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


def job(root: Path, out: Path, settings: PipelineSettings) -> runner.Job:
    """The harness's window over ``root``, written to ``out``, run as the CLI runs (no connection kept)."""
    span = window(FIRST, LAST, settings.reference_weeks, AS_OF, dt.timedelta(days=settings.maturity_lag_days))
    return runner.Job(settings, open_root(str(root)), span, load_prices(settings.prices_file), out)


def files_in(folder: Path) -> list[str]:
    """The decision files (and their write-ahead logs) under the spill folder, not DuckDB's own temp files."""
    return sorted(p.name for p in folder.glob("decisions-*")) if folder.exists() else []


def test_sizes_read_as_duckdb_reads_them() -> None:
    """Decimal and binary units, spaces and case as DuckDB takes them; a percentage is no size."""
    assert size_bytes("1250MB") == 1_250_000_000
    assert size_bytes("8 GiB") == 8 * 2**30
    assert size_bytes("1.5gb") == 1_500_000_000
    assert size_bytes("4096") == 4096
    assert size_bytes("80%") is None
    assert size_bytes("lots") is None


def test_only_a_pass_past_the_ratio_goes_to_disk(tmp_path: Path) -> None:
    """The pass's own proposal bytes against the ratio times the limit; no known limit or ratio 0: memory."""
    def pass_of(size: int) -> WindowFiles:
        return WindowFiles(open_root(str(tmp_path)), proposals={"a": ["x.parquet"]}, outcomes={},
                           proposal_bytes={"a": size, "b": 10**12})  # "b": another pass's type

    limit, ratio = 1_000_000, PipelineSettings().disk_ratio
    store = DecisionStore(limit, ratio, tmp_path)
    assert not store.on_disk(pass_of(int(ratio * limit)))
    assert store.on_disk(pass_of(int(ratio * limit) + 1))
    assert not DecisionStore(None, ratio, tmp_path).on_disk(pass_of(10**12))
    assert not DecisionStore(limit, 0.0, tmp_path).on_disk(pass_of(10**12))
    assert not store.on_disk(None)


def test_decisions_on_disk_give_the_same_marts_and_the_file_is_removed(
    computed: Computed, records_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pass on disk (two passes, a file each): the in-memory run's marts.

    Each pass's file exists while its models read it and is removed when the pass ends, before the next
    pass makes its own; none is left after the run.
    """
    spill = tmp_path / "spill"
    settings = PipelineSettings(pass_mb=0, temp_directory=spill, disk_ratio=1e-9)
    seen: dict[str, list[str]] = {}
    closed: list[tuple[str, list[str]]] = []  # (the file closed, the decision files there as it closed)
    close = DecisionStore.close

    def step(name: str) -> None:
        seen.setdefault(name, files_in(spill))

    def closing(store: DecisionStore, con: duckdb.DuckDBPyConnection) -> None:
        if store.path is not None:
            closed.append((store.path.name, files_in(spill)))
        close(store, con)

    monkeypatch.setattr(DecisionStore, "close", closing)
    runner.run(job(records_root, tmp_path / "out", settings), step)
    assert len([f for f in seen["latency"] if f.endswith(".duckdb")]) == 1, seen
    assert len(closed) == 2, closed  # one file per pass
    assert closed[0][0] != closed[1][0]
    assert all([f for f in there if f.endswith(".duckdb")] == [name] for name, there in closed), closed
    assert files_in(spill) == []
    assert mart_files(tmp_path / "out") == mart_files(computed.out)
    assert not unequal_marts(computed.out, tmp_path / "out")


def test_a_failed_run_removes_the_file(records_root: Path, tmp_path: Path) -> None:
    """A run stopped after ``int_decisions`` was built on disk leaves no file behind."""
    spill = tmp_path / "spill"
    settings = PipelineSettings(temp_directory=spill, disk_ratio=1e-9)

    def stop_at(model: str) -> Callable[[str], None]:
        def step(name: str) -> None:
            if name == model:
                assert files_in(spill), "the decisions were not on disk"
                raise RuntimeError("stopped")
        return step

    with pytest.raises(RuntimeError, match="stopped"):
        runner.run(job(records_root, tmp_path / "out", settings), stop_at("latency"))
    assert files_in(spill) == []


def test_the_files_of_a_killed_run_are_removed_and_a_live_runs_kept(tmp_path: Path) -> None:
    """A file whose process is gone (a run killed before its cleanup) goes.

    A live process's file stays, and so do files that are not ours.
    """
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead = int(done.stdout)
    names = [f"decisions-{dead}-0123abcd.duckdb", f"decisions-{dead}-0123abcd.duckdb.wal",
             "decisions-1-0123abcd.duckdb", "duckdb_temp_storage-0.tmp"]  # pid 1 is always alive
    for name in names:
        (tmp_path / name).write_bytes(b"x")
    assert sorted(remove_leftovers(tmp_path)) == sorted(names[:2])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names[2:])


def test_the_file_is_not_synced_and_later_files_are(tmp_path: Path) -> None:
    """The scratch file skips fsync while attached; closing it restores DuckDB's syncing for other files."""
    con = duckdb.connect()
    store = DecisionStore(2**30, 1.0, tmp_path)

    def fsync() -> str:
        ((mode,),) = con.sql("select current_setting('fsync_mode')").fetchall()
        return str(mode).lower()

    assert fsync() == "standard"
    store.target(con, "int_decisions")
    assert fsync() == "none"
    store.close(con)
    assert fsync() == "standard"
    assert files_in(tmp_path) == []
