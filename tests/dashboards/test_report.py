"""The rendered review: self-contained, every chart drawn in a real Chromium, verdicts and summary."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from dashboards.charts import BUILDERS
from dashboards.cli import review as review_command
from dashboards.marts import CANDIDATE, load_marts
from dashboards.report import to_html, to_markdown
from tests.dashboards.browser import chromium, load
from tests.dashboards.harness import WEEK

if TYPE_CHECKING:
    from dashboards.report import Review

CHARTS_STATE = (
    "JSON.stringify({ready: document.body.dataset.ready,"
    " charts: Array.from(document.querySelectorAll('figure.chart')).map("
    "f => [f.dataset.chart, f.dataset.rendered, f.querySelectorAll('svg path, svg rect').length])})"
)
TOOLTIPS_STATE = """JSON.stringify(Array.from(document.querySelectorAll('figure.chart')).map(f => {
  const titled = Array.from(f.querySelectorAll('svg [role=graphics-symbol] > title'));
  const hovered = titled.filter(t => {
    const mark = t.parentElement;
    mark.scrollIntoView({block: 'center', inline: 'center'});
    const box = mark.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) return false;
    const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
    const owner = hit && hit.closest('[role=graphics-symbol]');
    return owner !== null && owner.querySelector(':scope > title') !== null;
  });
  return [f.dataset.chart, titled.length, hovered.length, titled.length ? titled[0].textContent : ''];
}))"""


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
    state = json.loads(page.result)
    assert state["ready"] == "yes"
    expected = len(BUILDERS) * len(generated_review.sections)
    assert len(state["charts"]) == expected
    assert all(rendered == "yes" and marks > 0 for _, rendered, marks in state["charts"])
    assert page.screenshot.startswith(b"\x89PNG")


def test_every_chart_has_tooltips_that_the_pointer_reaches_in_chromium(
    generated_review: Review, tmp_path: Path
) -> None:
    """Each chart's marks carry an SVG <title> with their numbers, and one sits under the pointer.

    vl-convert's SVG is static (no Vega tooltip handler): the tooltip is the browser's own, from the
    <title> child of a mark; hit-testing the mark's centre proves no other layer hides it.
    """
    if chromium() is None:
        pytest.fail("chromium is not installed: `make` installs it (apt-get install -y chromium)")
    page_path = tmp_path / "review.html"
    page_path.write_text(to_html(generated_review), encoding="utf-8")
    page = load(page_path, TOOLTIPS_STATE)
    assert page.errors == []
    charts = json.loads(page.result)
    assert len(charts) == len(BUILDERS) * len(generated_review.sections)
    for name, titled, hovered, first in charts:
        assert titled > 0, name
        assert hovered > 0, name
        assert re.search(r"\w+: [-\w.]+", first), (name, first)


def test_the_report_is_self_contained(generated_review: Review) -> None:
    """No external script, style, image or font: the file opens offline.

    Its only absolute links are the gallery's anchors into the audit workbench (navigation, not loaded).
    """
    page = to_html(generated_review)
    assert not re.search(r"""<(?!a\s)[^>]*\b(src|href)\s*=\s*["']?(https?:)?//""", page)
    anchors = re.findall(r"""<a\s[^>]*\bhref\s*=\s*'([^']*)'""", page)
    assert anchors
    assert all(a.startswith(f"{generated_review.config.audit_url}/decisions/") for a in anchors)
    assert "<link" not in page
    assert "<script src" not in page


def test_the_drifted_week_blocks_go_on_the_ece_alert(generated_review: Review) -> None:
    """In the drifted week the ECE alert fails a go check for some candidate of each type; none is go.

    Every identity of the week (the `identities` mart) has its own verdict.
    """
    for section in generated_review.sections:
        assert set(section.verdicts) == set(section.identities[CANDIDATE])
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
    """The summary's details list each decision type and candidate identity with its verdict."""
    details = to_markdown(generated_review).partition("\n## Details\n")[2]
    lines = [line for line in details.splitlines() if line.startswith("- **")]
    assert len(lines) == sum(len(s.verdicts) for s in generated_review.sections)
    assert all(re.search(r"\*\*(GO|WAIT|REJECT)\*\*", line) for line in lines)
    # each line names its candidate: two candidates of one model differ by more than a hash
    named = [m.group(1) for line in lines if (m := re.match(r"- \*\*\w+\*\* · (\w+): ", line))]
    assert len(named) == len(lines)
    assert set(named) == {"default", "challenger"}


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


def test_an_identity_change_is_shown_and_not_blended(generated_review: Review) -> None:
    """An identity change is named, and the old and new identities are judged apart.

    ``default``'s KV type changes on W48's Thursday: the report says so, the old and new identities each
    get their own verdict and line, and the summary names the change.
    """
    page, summary = to_html(generated_review), to_markdown(generated_review)
    assert "Identity changed this week" in page
    for section in generated_review.sections:
        changes = section.changes
        assert set(changes["field"]) == {"model.kv_type"}
        assert set(changes["before"]) == {'"f16"'}
        assert set(changes["after"]) == {'"q8_0"'}
        keys = {c: c.rpartition("#")[2] for c in section.verdicts}
        for row in changes.itertuples():
            old = [c for c, sha in keys.items() if row.from_identity_sha256.startswith(sha)]
            new = [c for c, sha in keys.items() if row.to_identity_sha256.startswith(sha)]
            assert len(old) == len(new) == 1
            assert old != new
            assert any("model.kv_type" in line for line in section.changed(new[0]))
        assert sum(
            "identity change in " in line and "model.kv_type" in line for line in summary.splitlines()
        ) >= len(changes)


def test_the_paired_chart_shows_every_identity_pair_of_the_paired_mart(
    generated_review: Review, marts_dir: Path
) -> None:
    """One row per identity pair (never the candidate-wide '*' rows), with the mart's own numbers."""
    marts = load_marts(str(marts_dir), WEEK)
    for section in generated_review.sections:
        chart = next(c for c in section.charts if c.name == "paired")
        mart = marts.of_week("paired")
        mart = mart[(mart["decision_type"] == section.decision_type) & (mart["model_key_a"] != "*")]
        assert len(chart.table) == len(mart) > 0
        assert chart.table["paired"].sum() == mart["paired"].sum()
        assert sorted(chart.table["mcnemar_p"]) == pytest.approx(sorted(mart["mcnemar_p"]))
        assert chart.sample == f"n = {int(mart['paired'].sum()):,} paired decisions"
