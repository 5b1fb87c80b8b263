"""A week reviewed before its outcomes are final: never go, and the report and the summary say so."""

from __future__ import annotations

import datetime as dt
import html
from typing import TYPE_CHECKING

from dashboards.config import DEFAULTS
from dashboards.marts import load_marts
from dashboards.report import review, to_html, to_markdown
from dashboards.verdict.decision import Decision
from pipelines import runner
from pipelines.prices import load_prices
from pipelines.settings import PipelineSettings
from pipelines.storage import open_root
from pipelines.weeks import as_utc, parse_week, window
from tests.dashboards.harness import WEEK

if TYPE_CHECKING:
    from pathlib import Path

EARLY = as_utc(parse_week(WEEK)) + dt.timedelta(days=8)
"""A day after the week ended: with the default 3-day lag it matures two days later."""


def test_an_immature_week_never_says_go_and_the_report_and_markdown_say_when_it_matures(
    records_dir: Path, tmp_path: Path
) -> None:
    """W48 run and reviewed a day after it ended (go allowed in-sample): no candidate goes.

    Each verdict is provisional, and the HTML and the Markdown both carry the week's maturity instant.
    """
    settings = PipelineSettings()
    span = window(WEEK, WEEK, settings.reference_weeks, EARLY, dt.timedelta(days=settings.maturity_lag_days))
    con = runner.connect(settings)
    try:
        job = runner.Job(
            settings, open_root(str(records_dir)), span, load_prices(settings.prices_file), tmp_path
        )
        runner.run(job, con=con)
    finally:
        con.close()
    result = review(load_marts(str(tmp_path), WEEK), DEFAULTS.model_copy(update={"require_policy": False}))
    verdicts = [v for s in result.sections for v in s.verdicts.values()]
    assert verdicts
    assert all(v.decision is not Decision.GO and v.provisional for v in verdicts)
    said = "provisional: outcomes of 2026-W48 not final yet (it matures at 2026-12-03 00:00:00+00:00"
    assert all(any(r.startswith(said) for r in v.reasons) for v in verdicts)
    waiting = [v for v in verdicts if v.decision is Decision.WAIT]
    assert waiting
    assert all(v.reasons[0].startswith(said) for v in waiting)
    assert html.escape(said) in to_html(result)
    assert said in to_markdown(result)
