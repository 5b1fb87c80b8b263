"""The review shows how many one-hot rows each candidate's calibration leaves out.

The marts leave one-hot rows (the chat backend without log-probabilities) out of every calibration
figure and count them in ``calibration.one_hot_excluded``. Here one-hot copies of a third of the scored
rows are added beside generated records (``tests/pipelines/one_hot.py``): half keep their original
candidate (a key with some one-hot rows), half become candidate ``chat`` (keys whose rows are all
one-hot, so no ECE). The HTML candidate block, the Markdown summary line and the ECE chart's caption
must each show the mart's count for the review week.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

import pytest

from dashboards.config import DEFAULTS
from dashboards.marts import ALL, CANDIDATE, identity_of, load_marts
from dashboards.report import review, to_html, to_markdown
from pipelines import synth
from pipelines.generate import Plan, generate
from pipelines.storage import open_root
from tests.dashboards.harness import run_marts
from tests.pipelines.one_hot import CHAT, add_one_hot_rows

if TYPE_CHECKING:
    import pandas as pd

    from dashboards.report import Review

PLAN = Plan(
    decisions=3_000, weeks=2, drift_week=None, seed=29, knobs=synth.Knobs(types=synth.DEFAULT_TYPES[:1])
)
"""One decision type (one section, ten charts to render), two weeks: the first is the reference."""
FIRST, WEEK = "2026-W44", "2026-W45"
LEFT_OUT = "one-hot rows left out (no log-probabilities)"

Reviewed = tuple["Review", "pd.DataFrame"]
"""The review of ``WEEK`` and the week's ``calibration`` mart rows (report vocabulary)."""


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> Reviewed:
    """Generated records with one-hot chat rows beside, their marts, and the review of the last week."""
    records = tmp_path_factory.mktemp("records")
    generate(open_root(str(records)), PLAN)
    assert add_one_hot_rows(records) > 0
    out = run_marts(records, tmp_path_factory.mktemp("marts"), FIRST, WEEK)
    marts = load_marts(str(out), WEEK)
    return review(marts, DEFAULTS), marts.of_week("calibration")


def _block(page: str, candidate: str) -> str:
    """The HTML of one candidate's verdict block."""
    key = f"<code>{html.escape(candidate)}</code>"
    blocks = [b for b in page.split("<div class='candidate'>") if key in b]
    assert len(blocks) == 1, candidate
    return blocks[0]


def test_a_chat_candidate_shows_ece_na_and_its_one_hot_count(reviewed: Reviewed) -> None:
    """A key whose rows are all one-hot: "ECE: n/a, <n> one-hot rows left out" in its block and its line."""
    result, calibration = reviewed
    page, summary = to_html(result), to_markdown(result)
    chat = calibration[calibration[CANDIDATE].str.startswith(f"{CHAT} ")]
    assert not chat.empty
    for row in chat.itertuples():
        key, count = getattr(row, CANDIDATE), int(row.one_hot_excluded)
        assert count == row.labelled > 0
        expected = f"ECE: n/a, {count:,} {LEFT_OUT}"
        assert expected in html.unescape(_block(page, key))
        # the copies keep their identity columns, so a chat key's label is that of a normal key
        lines = [line for line in summary.splitlines() if line.endswith(f" · {expected}")]
        assert any(f"· {identity_of(key).label}: **" in line for line in lines), key


def test_a_candidate_with_some_one_hot_rows_shows_its_ece_and_the_count(reviewed: Reviewed) -> None:
    """A key with one-hot rows beside scored ones: its ECE over the rest, and how many were left out."""
    result, calibration = reviewed
    page, summary = to_html(result), to_markdown(result)
    mixed = calibration[
        ~calibration[CANDIDATE].str.startswith(f"{CHAT} ")
        & (calibration[CANDIDATE] != ALL)
        & (calibration["one_hot_excluded"] > 0)
    ]
    assert not mixed.empty
    for row in mixed.itertuples():
        key, count = getattr(row, CANDIDATE), int(row.one_hot_excluded)
        expected = (
            f"ECE: {row.ece_debiased:.3f} (debiased, 95% interval {row.ece_low:.3f} to {row.ece_high:.3f}) "
            f"over {int(row.labelled) - count:,} labelled, {count:,} {LEFT_OUT}"
        )
        assert expected in html.unescape(_block(page, key))
        assert sum(line.endswith(f" · {expected}") for line in summary.splitlines()) == 1


def test_the_ece_chart_says_how_many_rows_it_left_out(reviewed: Reviewed) -> None:
    """The ECE chart's caption counts the week's labelled rows with probabilities and the one-hot ones."""
    result, calibration = reviewed
    rows = calibration[calibration[CANDIDATE] != ALL]
    one_hot = int(rows["one_hot_excluded"].sum())
    (section,) = result.sections
    chart = next(c for c in section.charts if c.name == "ece")
    assert chart.sample.startswith(f"n = {int(rows['labelled'].sum()) - one_hot:,} labelled; ")
    assert chart.sample.endswith(f"; {one_hot:,} {LEFT_OUT}")
    assert int(chart.table[chart.table["week"] == WEEK]["one_hot_excluded"].sum()) == one_hot
