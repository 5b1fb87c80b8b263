"""The rendered review: self-contained, every chart drawn in a real Chromium, verdicts and summary."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from dashboards.charts import BUILDERS
from dashboards.cli import review as review_command
from dashboards.report import to_html, to_markdown
from tests.dashboards.browser import chromium, load
from tests.dashboards.conftest import WEEK

if TYPE_CHECKING:
    from dashboards.report import Review

CHARTS_STATE = (
    "JSON.stringify({ready: document.body.dataset.ready,"
    " charts: Array.from(document.querySelectorAll('figure.chart')).map("
    "f => [f.dataset.chart, f.dataset.rendered, f.querySelectorAll('svg path, svg rect').length])})"
)


def test_every_chart_renders_in_headless_chromium_without_console_errors(
    generated_review: Review, tmp_path: Path
) -> None:
    """Chromium loads the file from disk with no console error, and every chart's SVG has marks and size."""
    if chromium() is None:
        pytest.fail("chromium is not installed: `make` installs it (apt-get install -y chromium)")
    page_path = tmp_path / "review.html"
    page_path.write_text(to_html(generated_review), encoding="utf-8")
    page = load(page_path, CHARTS_STATE)
    shot = Path(os.environ.get("REVIEW_SCREENSHOT", tmp_path / "review.png"))
    shot.write_bytes(page.screenshot)
    assert page.errors == []
    assert page.result is not None
    state = __import__("json").loads(page.result)
    assert state["ready"] == "yes"
    expected = len(BUILDERS) * len(generated_review.sections)
    assert len(state["charts"]) == expected
    assert all(rendered == "yes" and marks > 0 for _, rendered, marks in state["charts"])
    assert page.screenshot.startswith(b"\x89PNG")


def test_the_report_is_self_contained(generated_review: Review) -> None:
    """No external script, style, image or font: the file opens offline."""
    page = to_html(generated_review)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page
    assert "<script src" not in page


def test_the_drifted_week_blocks_go_on_the_ece_alert(generated_review: Review) -> None:
    """In the drifted week the ECE alert fails a go check for some candidate of each type; none is go."""
    for section in generated_review.sections:
        assert len(section.verdicts) == 2
        assert all(verdict.decision != "go" for verdict in section.verdicts.values())
        ece = [k.passed for v in section.verdicts.values() for k in v.checks if k.rule == "no ECE alert"]
        assert False in ece


def test_every_chart_shows_its_sample_size_and_numbers(generated_review: Review) -> None:
    """Each chart's subtitle names n, and the numbers behind it are a non-empty table."""
    for section in generated_review.sections:
        for chart in section.charts:
            assert chart.sample.startswith("n = ")
            assert not chart.table.empty, chart.name


def test_the_markdown_summary_has_one_line_per_type_and_candidate(generated_review: Review) -> None:
    """The summary lists each decision type and candidate with its verdict."""
    lines = [line for line in to_markdown(generated_review).splitlines() if line.startswith("- **")]
    assert len(lines) == sum(len(s.verdicts) for s in generated_review.sections)
    assert all(re.search(r"\*\*(GO|WAIT|REJECT)\*\*", line) for line in lines)


def test_the_command_writes_html_and_markdown(marts_dir: Path, tmp_path: Path) -> None:
    """`review --marts --week --out` writes both files and prints the summary; a missing week is one line."""
    out = tmp_path / "r.html"
    result = CliRunner().invoke(
        review_command, ["--marts", str(marts_dir), "--week", WEEK, "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.stat().st_size < 3_000_000
    assert out.with_suffix(".md").read_text(encoding="utf-8").startswith(f"# Rollout review {WEEK}")
    missing = CliRunner().invoke(review_command, ["--marts", str(marts_dir), "--week", "2027-W10"])
    assert missing.exit_code == 1
    assert "no funnel rows for 2027-W10" in missing.output
    malformed = CliRunner().invoke(review_command, ["--marts", str(marts_dir), "--week", "2026-48"])
    assert malformed.exit_code == 2
    assert "week" in malformed.output
