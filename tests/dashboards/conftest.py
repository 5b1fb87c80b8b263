"""Dashboards fixtures: marts of generated records (two candidates, the last week drifted), made once."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pytest

from dashboards.config import DEFAULTS
from dashboards.marts import load_marts
from dashboards.report import review
from pipelines import runner, synth
from pipelines.generate import Plan, generate
from pipelines.prices import load_prices
from pipelines.settings import PipelineSettings
from pipelines.storage import open_root
from pipelines.weeks import window

if TYPE_CHECKING:
    from pathlib import Path

    from dashboards.report import Review

WEEK = "2026-W48"
PLAN = Plan(
    decisions=20_000,
    weeks=5,
    drift_week=4,
    seed=5,
    knobs=synth.Knobs(challenger=synth.CHALLENGER, identity_change=synth.IdentityChange(week=4)),
)
"""Two candidates (``default``, ``challenger``) on the same decisions; W48 drifted, and ``default``'s KV
type changes on its Thursday."""
AS_OF = dt.datetime(2027, 1, 31, tzinfo=dt.UTC)


@pytest.fixture(scope="session")
def records_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20,000 generated decisions over 2026-W44..W48 (``PLAN``)."""
    records = tmp_path_factory.mktemp("records")
    generate(open_root(str(records)), PLAN)
    return records


def run_marts(records: Path, out: Path, first: str, last: str) -> Path:
    """Every mart of ``records`` over the weeks ``first..last``, written under ``out``."""
    settings = PipelineSettings()
    span = window(first, last, settings.reference_weeks, AS_OF, dt.timedelta(days=settings.maturity_lag_days))
    con = runner.connect(settings)
    try:
        job = runner.Job(settings, open_root(str(records)), span, load_prices(settings.prices_file), out)
        runner.run(job, con=con)
    finally:
        con.close()
    return out


@pytest.fixture(scope="session")
def marts_dir(records_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every mart over 2026-W44..W48 of the generated records."""
    return run_marts(records_dir, tmp_path_factory.mktemp("marts"), "2026-W44", WEEK)


@pytest.fixture(scope="session")
def generated_review(marts_dir: Path) -> Review:
    """The review of the drifted week with the default rules."""
    return review(load_marts(str(marts_dir), WEEK), DEFAULTS)
