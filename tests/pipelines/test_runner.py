"""The weekly job's outputs.

One Parquet file per mart and week plus a DuckDB file, idempotent reruns, late outcomes and the maturity flag.
"""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.errors import PipelinesError, SchemaMismatch
from pipelines.output import DATABASE_FILE
from pipelines.settings import PipelineSettings
from pipelines.sqlmodels import SPENT_AFTER, load_models, mart_names, quote_ident
from tests.pipelines.harness import AS_OF, Computed, run_window
from tests.pipelines.marts_equal import mart_files, unequal_marts

if TYPE_CHECKING:
    from pathlib import Path

WEEK = "2026-W48"
WEEK_END = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)


def read_week(out: Path, mart: str) -> dict[str, list[object]]:
    """One mart's Parquet file for the week, as columns."""
    return pq.read_table(out / mart / f"week={WEEK}" / "part-0.parquet").to_pydict()


def test_rerunning_a_week_gives_the_same_outputs(records_root: Path, tmp_path: Path) -> None:
    """Two runs of the same week with the same as-of write the same marts (floats to 1e-12.

    DuckDB's parallel sums may add in another order), and the DuckDB file keeps one copy of the week.
    """
    first = run_window(records_root, tmp_path / "a", first=WEEK, last=WEEK)
    before = {m: read_week(tmp_path / "a", m) for m in mart_names()}
    second = run_window(records_root, tmp_path / "a", first=WEEK, last=WEEK)
    assert first.result.rows == second.result.rows
    for mart in mart_names():
        again = read_week(tmp_path / "a", mart)
        assert again.keys() == before[mart].keys()
        for column, values in before[mart].items():
            if values and isinstance(values[0], float):  # parallel sums may differ in the last bits
                np.testing.assert_allclose(
                    np.array(again[column], float), np.array(values, float), rtol=1e-12
                )
            else:
                assert again[column] == values, (mart, column)
    with duckdb.connect(str(tmp_path / "a" / DATABASE_FILE), read_only=True) as db:
        rows = db.sql("select count(*) from agreement").fetchall()[0][0]
    assert rows == first.result.rows["agreement"] == 10


def test_late_outcomes_change_the_week_and_maturity_says_so(records_root: Path, tmp_path: Path) -> None:
    """Just after the week ends fewer outcomes are known and the week is not mature.

    Rerun later, the same week is replaced with more labels and marked mature.
    """
    early = run_window(
        records_root, tmp_path / "out", as_of=WEEK_END + dt.timedelta(hours=1), first=WEEK, last=WEEK
    )
    early_funnel = read_week(tmp_path / "out", "funnel")
    assert early_funnel["mature"] == [False, False]
    late = run_window(records_root, tmp_path / "out", as_of=AS_OF, first=WEEK, last=WEEK)
    late_funnel = read_week(tmp_path / "out", "funnel")
    assert late_funnel["mature"] == [True, True]
    assert all(e < la for e, la in zip(early_funnel["labelled"], late_funnel["labelled"], strict=True))
    assert early.result.rows["funnel"] == late.result.rows["funnel"] == 2
    with duckdb.connect(str(tmp_path / "out" / DATABASE_FILE), read_only=True) as db:
        assert db.sql("select count(*), bool_and(mature) from funnel").fetchall() == [(2, True)]


def test_outcomes_after_as_of_are_ignored(records_root: Path) -> None:
    """An as-of before any outcome arrived leaves every decision unjoined."""
    run = run_window(
        records_root, None, as_of=dt.datetime(2026, 10, 26, tzinfo=dt.UTC), first="2026-W44", last="2026-W44"
    )
    assert run.con.sql("select sum(labelled), sum(unjoined) = sum(scored) from funnel").fetchall() == [
        (0, True)
    ]


def test_a_mart_that_gained_a_column_is_extended_in_the_file(records_root: Path, tmp_path: Path) -> None:
    """An output file written before a mart gained a column gets the column on the next run.

    Rows of the rerun week carry it; the run does not fail on the older table.
    """
    run_window(records_root, tmp_path, first=WEEK, last=WEEK)
    with duckdb.connect(str(tmp_path / DATABASE_FILE)) as db:
        db.execute("alter table per_option drop column label_rate")
    run_window(records_root, tmp_path, first=WEEK, last=WEEK)
    with duckdb.connect(str(tmp_path / DATABASE_FILE), read_only=True) as db:
        rows = db.sql("select count(*), count(label_rate) from per_option").fetchall()
    assert rows[0][0] == rows[0][1] > 0


def test_a_failed_write_leaves_every_mart_of_the_file_as_it_was(records_root: Path, tmp_path: Path) -> None:
    """The DuckDB file takes all marts in one transaction.

    When a mart cannot be stored, the marts written before it in the same run keep the previous run's rows
    (here: the week still not mature), and the run fails naming the mart, with DuckDB's reason.
    """
    run_window(records_root, tmp_path, as_of=WEEK_END + dt.timedelta(hours=1), first=WEEK, last=WEEK)
    assert mart_names().index("funnel") < mart_names().index("cost")
    with duckdb.connect(str(tmp_path / DATABASE_FILE)) as db:
        db.execute("alter table cost alter column week type date using null")  # week labels no longer fit
        before = db.sql("select count(*), bool_or(mature) from funnel").fetchall()
    assert before == [(2, False)]
    with pytest.raises(PipelinesError, match=r"cannot store the cost mart in .*duckdb: .*2026-W48"):
        run_window(records_root, tmp_path, as_of=AS_OF, first=WEEK, last=WEEK)
    with duckdb.connect(str(tmp_path / DATABASE_FILE), read_only=True) as db:
        assert db.sql("select count(*), bool_or(mature) from funnel").fetchall() == before
        assert db.sql("select count(week) from cost").fetchall() == [(0,)]


def test_a_parquet_file_that_cannot_be_written_fails_the_run_and_keeps_the_file(
    records_root: Path, tmp_path: Path
) -> None:
    """A week's Parquet file that cannot be written fails the run with one clear error.

    (A file stands where the week's folder goes.) The DuckDB file keeps the previous run's rows: it
    commits only after every Parquet file is in place.
    """
    run_window(records_root, tmp_path, as_of=WEEK_END + dt.timedelta(hours=1), first=WEEK, last=WEEK)
    blocker = tmp_path / "cost" / f"week={WEEK}"
    for child in blocker.iterdir():
        child.unlink()
    blocker.rmdir()
    blocker.write_text("not a folder")
    with pytest.raises(PipelinesError, match=r"cannot write the marts under .*week=2026-W48"):
        run_window(records_root, tmp_path, as_of=AS_OF, first=WEEK, last=WEEK)
    with duckdb.connect(str(tmp_path / DATABASE_FILE), read_only=True) as db:
        assert db.sql("select count(*), bool_or(mature) from funnel").fetchall() == [(2, False)]


def test_decisions_built_one_type_at_a_time_equal_one_build_over_every_file(computed: Computed) -> None:
    """The runner builds int_decisions per decision type (hash table on the outcomes).

    The rows equal those of the same SQL run once over every file, and every offered decision is there once.
    """
    model = next(m for m in load_models() if m.name == "int_decisions")
    con = computed.con
    con.execute(f"create or replace temp table whole_decisions as {model.sql}")
    # the run dropped the spent columns (sqlmodels.SPENT_AFTER); their sums and quantiles are checked through
    # int_segment_hours (tests/pipelines/intermediate) and the latency and cost marts
    kept = ", ".join(quote_ident(c) for c in con.table("int_decisions").columns)
    try:
        (differ,) = con.sql(
            f"select count(*) from ((select {kept} from whole_decisions except all from int_decisions) "  # noqa: S608
            f"union all (from int_decisions except all select {kept} from whole_decisions))"
        ).fetchall()[0]
        (rows, offered) = con.sql(
            "select (select count(*) from int_decisions), (select sum(offered) from funnel)"
        ).fetchall()[0]
    finally:
        con.execute("drop table whole_decisions")
    assert differ == 0
    assert rows == offered > 0


def test_a_run_in_passes_writes_the_marts_of_one_pass_and_keeps_every_type(
    computed: Computed, records_root: Path, tmp_path: Path
) -> None:
    """``PIPELINES_PASS_MB=0``, each decision type a pass of its own: every mart equals the one-pass run's.

    A run handed a connection keeps every table of every pass (the intermediate ones united, no per-pass
    table left), and its progress reports each model once.
    """
    steps: list[str] = []
    con = run_window(records_root, tmp_path, settings=PipelineSettings(pass_mb=0), on_step=steps.append).con
    try:
        assert len(con.sql("select distinct decision_type from int_segments").fetchall()) == 2
        (decisions, offered) = con.sql(
            "select (select count(*) from int_decisions), (select sum(offered) from funnel)"
        ).fetchall()[0]
        leftover = con.sql("from duckdb_tables() where table_name like '%__pass%'").fetchall()
    finally:
        con.close()
    assert decisions == offered == computed.con.sql("select count(*) from int_decisions").fetchall()[0][0]
    assert not leftover
    assert steps[:-1] == [m.name for m in load_models()]  # then "write"
    assert mart_files(tmp_path) == mart_files(computed.out)
    assert not unequal_marts(computed.out, tmp_path)


def test_spent_columns_are_dropped_once_their_last_reader_is_built(computed: Computed) -> None:
    """Given a whole run: each ``SPENT_AFTER`` column is gone from its table, every other column kept.

    The later models were built on the table without them (a model reading one fails the run), and the
    marts of that run are the ones every mart test checks.
    """
    for table, columns in SPENT_AFTER.values():
        assert not set(columns) & set(computed.con.table(table).columns)
    kept = set(computed.con.table("int_decisions").columns)
    assert kept == {"segment", "week_start", "is_scored", "labelled", "proposal_pos", "confidence", "one_hot",
                    "correct"}
    readers = [m for m in load_models() if "int_decisions" in m.sql]
    last = max(i for i, m in enumerate(load_models()) if m in readers)
    assert all(name in {m.name for m in load_models()[:last + 1]} for name in SPENT_AFTER)


def test_a_file_off_the_schema_fails_the_run_naming_file_and_column(
    records_root: Path, tmp_path: Path
) -> None:
    """An outcomes file whose ``outcome_at`` is a string fails the run before any model is built.

    The error names the file, the column, what it holds and what the schema says; nothing is written.
    """
    root = tmp_path / "records"
    shutil.copytree(records_root, root)
    victim = max((root / "outcomes").rglob("*.parquet"))
    table = pq.read_table(victim)
    index = table.schema.get_field_index("outcome_at")
    pq.write_table(table.set_column(index, "outcome_at", table.column(index).cast(pa.string())), victim)
    expected = rf"{victim.name}: column outcome_at is string, the records schema says timestamp"
    with pytest.raises(SchemaMismatch, match=expected):
        run_window(root, tmp_path / "out")
    assert not (tmp_path / "out").exists()


RUN_AND_REPORT_PANDAS = """
import datetime as dt, sys
from pathlib import Path
from pipelines import runner
from pipelines.prices import load_prices
from pipelines.settings import PipelineSettings
from pipelines.storage import open_root
from pipelines.weeks import window

root, out, first, last, as_of = sys.argv[1:]
settings = PipelineSettings()
span = window(first, last, settings.reference_weeks, dt.datetime.fromisoformat(as_of),
              dt.timedelta(days=settings.maturity_lag_days))
job = runner.Job(settings, open_root(root), span, load_prices(settings.prices_file), Path(out))
runner.run(job)
print("pandas" in sys.modules)
"""


def test_a_local_run_does_not_import_pandas(records_root: Path, tmp_path: Path) -> None:
    """The DuckDB job over local records never imports pandas (a sixth of a second of every run).

    Registering any Arrow object in DuckDB imports it: the empty raw relations are SQL views, the output
    file takes the marts in SQL, and `pyarrow.dataset` (which imports it too) is left to S3 roots. Run in a
    fresh interpreter, since the test process has pandas loaded.
    """
    done = subprocess.run(  # noqa: S603  (our own script; the project is installed in this interpreter)
        [sys.executable, "-c", RUN_AND_REPORT_PANDAS, str(records_root), str(tmp_path / "out"), WEEK, WEEK,
         AS_OF.isoformat()],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False"]
    assert (tmp_path / "out" / DATABASE_FILE).is_file()


def test_the_output_file_has_the_columns_and_types_of_the_parquet_files(computed: Computed) -> None:
    """Every mart in the DuckDB file: the columns, in order, and types DuckDB reads from its Parquet files."""
    with duckdb.connect(str(computed.out / DATABASE_FILE), read_only=True) as db:
        for mart in mart_names():
            stored = db.sql(f'describe "{mart}"').fetchall()
            path = str(computed.out / mart / f"week={WEEK}" / "part-0.parquet")
            parquet = db.sql("describe select * from read_parquet($path, hive_partitioning = false)",
                             params={"path": path}).fetchall()
            assert [row[:2] for row in stored] == [row[:2] for row in parquet], mart


def test_a_run_that_cannot_fit_the_memory_limit_fails_in_one_line_naming_it(
    records_root: Path, tmp_path: Path
) -> None:
    """A run that cannot fit ``PIPELINES_MEMORY_LIMIT``, spilling included, says so in one line."""
    from click.testing import CliRunner  # noqa: PLC0415

    from semif_shadow.cli import main  # noqa: PLC0415

    result = CliRunner(env={"PIPELINES_MEMORY_LIMIT": "16MB"}).invoke(
        main, ["pipelines", "run", "--root", str(records_root), "--week", WEEK,
               "--out", str(tmp_path / "out"), "--as-of", AS_OF.isoformat()])
    assert result.exit_code == 1
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert "does not fit PIPELINES_MEMORY_LIMIT (15.2 MiB)" in line
    assert line.endswith(": raise PIPELINES_MEMORY_LIMIT, or set PIPELINES_THREADS lower "
                         "(each thread holds its own buffers)")
    assert "Out of Memory" not in result.output  # not DuckDB's advice (several lines of SET statements)
