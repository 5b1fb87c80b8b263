"""`semif-shadow pipelines run --engine`: the Spark flags checked before any engine starts (no JVM here).

The runs themselves, through the same command line, are in ``test_spark.py`` (one Spark session).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from semif_shadow.cli import main

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize("flags", [
    ["--approx-quantiles"],
    ["--spark-master", "local[2]"],
    ["--engine", "duckdb", "--approx-quantiles"],
    ["--engine", "duckdb", "--spark-master", "yarn"],
])
def test_spark_flags_without_the_spark_engine_are_a_usage_error(tmp_path: Path, flags: list[str]) -> None:
    """A Spark-only flag with the DuckDB engine exits 2 naming both flags, before reading any record."""
    args = ["pipelines", "run", "--root", str(tmp_path), "--week", "2026-W48", *flags]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert "--spark-master and --approx-quantiles apply only with --engine spark" in result.output
    assert "no proposals" not in result.output


def test_an_unknown_engine_is_a_usage_error(tmp_path: Path) -> None:
    """``--engine`` takes duckdb or spark; anything else exits 2 listing both."""
    result = CliRunner().invoke(main, ["pipelines", "run", "--root", str(tmp_path), "--week", "2026-W48",
                                       "--engine", "postgres"])
    assert result.exit_code == 2
    assert "'duckdb'" in result.output
    assert "'spark'" in result.output


def test_the_master_is_local_only_outside_spark_submit_and_sessions() -> None:
    """``--spark-master`` wins; else no master under ``spark-submit`` or in a session; else ``local[*]``.

    ``spark-submit`` leaves its gateway in the environment: the cluster's master must stay.
    """
    spark_runner = pytest.importorskip("pipelines.spark_runner")
    assert spark_runner.master_for("local[2]", active=False, environ={}) == "local[2]"
    assert spark_runner.master_for(None, active=False, environ={"PYSPARK_GATEWAY_PORT": "41234"}) is None
    assert spark_runner.master_for(None, active=True, environ={}) is None
    assert spark_runner.master_for(None, active=False, environ={}) == "local[*]"
