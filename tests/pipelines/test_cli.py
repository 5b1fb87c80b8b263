"""`semif-shadow pipelines`.

Every command documented with an example, generate -> run end to end, errors as one line and a non-zero exit.
"""

from __future__ import annotations

import datetime as dt
import math
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from pipelines import runner
from pipelines.ledger import carry
from pipelines.prices import load_prices
from pipelines.settings import PipelineSettings
from pipelines.source import register_window
from pipelines.sqlmodels import ORDER, WINDOW_VARIABLES, mart_names
from pipelines.storage import open_root
from pipelines.weeks import window
from semif_shadow.cli import main
from tests.pipelines.harness import AS_OF, FIRST, LAST

EMPTY_HERE = frozenset({
    "paired", "identity_changes",  # one candidate, one identity
    "audit_strata", "correctness", "audited_difference", "auditor_agreement",  # no audits in these records
    "auditor_disagreements",
})
"""Marts with no row in the session data (one candidate, no identity change): see marts/test_paired.py."""

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pipelines.harness import Computed


@pytest.mark.parametrize("command", [[], ["generate"], ["run"], ["sql"], ["policy"], ["policy", "choose"],
                                     ["policy", "replay"]])
def test_every_pipelines_command_has_help_with_an_example(command: list[str]) -> None:
    """`--help` of the group and of each subcommand exits 0 and shows an Example block, unwrapped."""
    result = CliRunner().invoke(main, ["pipelines", *command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert "\n    semif-shadow pipelines " in result.output  # the \b block kept its own lines


def test_sql_prints_every_model_in_order() -> None:
    """`pipelines sql` prints each model's create statement.

    In dependency order, ending in `select * from final`.
    """
    result = CliRunner().invoke(main, ["pipelines", "sql"])
    assert result.exit_code == 0
    positions = [result.output.index(f"-- {layer}/{name}.sql") for layer, name in ORDER]
    assert positions == sorted(positions)
    assert result.output.count("select * from final;") == len(ORDER)


def test_the_printed_sql_run_elsewhere_gives_the_marts(records_root: Path, computed: Computed) -> None:
    """The script `pipelines sql` prints, run as it is on another connection, gives the runner's marts.

    That connection has only the raw relations, `run_params` and the `cfg_*` tables (the window variables
    unset: the script sets them), and runs every model once over every file; then the evidence ledger is
    filled as `pipelines run` fills it when it writes (`ledger.carry`, Python, not part of the script).
    """
    script = CliRunner().invoke(main, ["pipelines", "sql"]).output
    settings = computed.settings
    span = window(FIRST, LAST, settings.reference_weeks, AS_OF, dt.timedelta(days=settings.maturity_lag_days))
    con = runner.connect(settings)
    try:
        runner.bind_config(con, settings, span, load_prices(settings.prices_file))
        for name in WINDOW_VARIABLES:
            con.execute(f"reset variable {name}")
        register_window(con, open_root(str(records_root)), span.read_start, span.read_end, span.as_of)
        con.execute(script)
        carry(con, span, None, settings.evidence_alpha)
        for name in mart_names():
            query = f"select * from {name} order by all"  # noqa: S608  (our mart names)
            theirs, ours = con.sql(query).fetchall(), computed.con.sql(query).fetchall()
            assert len(theirs) == len(ours), name
            assert ours or name in EMPTY_HERE, name
            for their_row, our_row in zip(theirs, ours, strict=True):
                for their, our in zip(their_row, our_row, strict=True):
                    if isinstance(our, float):
                        close = math.isclose(their, our, rel_tol=1e-9, abs_tol=1e-12)
                        assert close, (name, their_row, our_row)
                    else:
                        assert their == our, (name, their_row, our_row)
    finally:
        con.close()


def test_generate_then_run_writes_the_marts(tmp_path: Path) -> None:
    """`generate` then `run --week` on a small root writes a Parquet file per mart and the DuckDB file.

    ``--price ml.g6e.xlarge=3.0`` prices that instance's hours at $3.00 in the cost mart (the table says
    $2.264); the other instances keep the table's price.
    """
    runner = CliRunner()
    generated = runner.invoke(
        main,
        [
            "pipelines",
            "generate",
            "--root",
            str(tmp_path / "rec"),
            "--decisions",
            "3000",
            "--weeks",
            "2",
            "--first-week",
            "2026-W47",
        ],
    )
    assert generated.exit_code == 0, generated.output
    assert "3,000 proposals" in generated.output
    ran = runner.invoke(
        main,
        [
            "pipelines",
            "run",
            "--root",
            str(tmp_path / "rec"),
            "--week",
            "2026-W48",
            "--out",
            str(tmp_path / "out"),
            "--as-of",
            "2027-01-01T00:00:00+00:00",
            "--price",
            "ml.g6e.xlarge=3.0",
        ],
    )
    assert ran.exit_code == 0, ran.output
    assert "2026-W48: final" in ran.output
    assert (tmp_path / "out" / "calibration" / "week=2026-W48" / "part-0.parquet").is_file()
    assert (tmp_path / "out" / "pipelines.duckdb").is_file()
    cost = pq.read_table(tmp_path / "out" / "cost" / "week=2026-W48" / "part-0.parquet").to_pylist()
    table_prices = load_prices(PipelineSettings().prices_file).instances
    assert table_prices["ml.g6e.xlarge"] != 3.0
    by_type = {row["instance_type"]: row for row in cost if row["instance_hours"]}
    assert {"ml.g6e.xlarge", "ml.c6i.8xlarge"} <= by_type.keys()
    for instance_type, row in by_type.items():  # the override moves its instance's cost, and only that
        price = 3.0 if instance_type == "ml.g6e.xlarge" else table_prices[instance_type]
        assert row["cost_usd"] == pytest.approx(row["instance_hours"] * price, rel=1e-12), instance_type


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--week", "2026-W60"], "not a week of that year"),
        (["--week", "last week"], "is not an ISO week"),
        (["--since", "2026-W48", "--until", "2026-W40"], "is before"),
        (["--week", "2026-W48", "--as-of", "yesterday"], "as-of"),
        (["--week", "2026-W48", "--price", "ml.g6e.xlarge"], "TYPE=USD"),
        (["--week", "2026-W48"], "no proposals"),
        (["--week", "2026-W48", "--since", "2026-W47"], "not both"),
        (["--week", "2026-W48", "--catalog", "no-such.yaml"], "catalog: no-such.yaml: cannot read"),
    ],
)
def test_run_rejects_bad_arguments_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    """Bad weeks, ranges, times, prices or an empty root exit non-zero with a message naming the problem."""
    result = CliRunner().invoke(main, ["pipelines", "run", "--root", str(tmp_path), *args])
    assert result.exit_code != 0
    assert message in result.output
