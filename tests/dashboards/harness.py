"""Plain helpers of the dashboards tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from pipelines import runner, synth
from pipelines.generate import Plan
from pipelines.prices import load_prices
from pipelines.settings import PipelineSettings
from pipelines.storage import open_root
from pipelines.weeks import window

if TYPE_CHECKING:
    from pathlib import Path



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
