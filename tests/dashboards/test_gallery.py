"""The disagreement gallery: stored states as the catalog redacted them, grouped by cell, linked, capped.

Generated trial-shaped records whose every proposal stores the state the sidecar's own ``Redactor``
makes of a raw state holding three markers: one in a removed field, one in a hashed field, one in a kept
field (the control, so each search is shown to work). Through ``pipelines run`` (the ``gallery`` mart)
and the review, the removed marker appears nowhere (marts, HTML, Markdown), the hashed one only in its
``hmac-sha256:`` form, the control in the page.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dashboards.config import ReviewConfig
from dashboards.marts import CANDIDATE, load_marts
from dashboards.report import review, to_html, to_markdown
from pipelines.generate import generate
from pipelines.storage import open_root
from shadow.redaction import HASH_PREFIX, Redactor
from tests.dashboards.harness import TRIAL, TRIAL_WEEK, run_marts
from tests.harness import every_byte

if TYPE_CHECKING:
    from pathlib import Path

    from dashboards.report import Review

KEY = b"gallery-catalog-secret"
EMAIL = "MARKER-EMAIL-3d9e@example.com"  # in a removed field
CARD = "MARKER-CARD-4111-77c2"  # in a hashed field
CONTROL = "CONTROL-SUBJECT-b41a"  # in a kept field
AUDIT_URL = "http://127.0.0.1:8490"
CAP = 5


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Trial-shaped records whose proposals store redacted marker states; their marts."""
    records = tmp_path_factory.mktemp("gallery-records")
    generate(open_root(str(records)), TRIAL)
    redactor = Redactor(remove=["customer.email"], hash=["customer.card"], key=KEY)
    for path in sorted((records / "proposals").rglob("*.parquet")):
        table = pq.read_table(path)
        states = [
            json.dumps(
                redactor.apply({"subject": f"{CONTROL} {i}", "customer": {"email": EMAIL, "card": CARD}})
            )
            for i in table["decision_id"].to_pylist()
        ]
        column = table.schema.get_field_index("state")
        pq.write_table(table.set_column(column, "state", pa.array(states, pa.string())), path)
    assert EMAIL.encode() not in every_byte(records)
    marts = run_marts(records, tmp_path_factory.mktemp("gallery-marts"), "2026-W44", TRIAL_WEEK)
    return records, marts


@pytest.fixture(scope="module")
def gallery_review(stored: tuple[Path, Path]) -> Review:
    """The review of the trial's last week, the gallery capped at ``CAP`` per candidate."""
    return review(load_marts(str(stored[1]), TRIAL_WEEK), ReviewConfig(gallery_max=CAP, audit_url=AUDIT_URL))


def test_the_gallery_shows_no_removed_field_and_hashed_fields_hashed(
    stored: tuple[Path, Path], gallery_review: Review
) -> None:
    """The removed marker is nowhere; the hashed one only as hmac-sha256; the control is in the page."""
    page, summary = to_html(gallery_review), to_markdown(gallery_review)
    marts = every_byte(stored[1])
    hashed = HASH_PREFIX + hmac.new(KEY, json.dumps(CARD).encode(), hashlib.sha256).hexdigest()
    assert CONTROL in page
    assert CONTROL.encode() in marts
    for text in (page.encode(), summary.encode(), marts):
        assert EMAIL.encode() not in text
        assert CARD.encode() not in text
    assert hashed in page
    assert hashed.encode() in marts


def test_the_gallery_groups_by_confusion_cell_links_the_workbench_and_is_capped(
    stored: tuple[Path, Path], gallery_review: Review
) -> None:
    """Each candidate's gallery: its first ``CAP`` rows, grouped by cell, linked to the workbench.

    The mart's most confident severe errors and other disagreements, half of ``CAP`` each where there are
    both, grouped by (outcome, proposal), every decision linked to ``{audit_url}/decisions/{id}``.
    """
    mart = load_marts(str(stored[1]), TRIAL_WEEK).of_week("gallery")
    page = to_html(gallery_review)
    (section,) = gallery_review.sections
    assert set(section.galleries) == set(section.verdicts)
    for candidate, cells in section.galleries.items():
        rows = mart[mart[CANDIDATE] == candidate].sort_values("rank")
        assert len(rows) > 0
        items = [i for c in cells for i in c.items]
        severe, other = rows[rows["severe"]], rows[~rows["severe"]]
        assert max(len(severe), len(other)) <= 25  # the mart keeps 25 of each kind
        n_severe = min(len(severe), max(CAP - len(other), 3))  # half the cap of 5, rounded up
        expected = [*severe["decision_id"].head(n_severe), *other["decision_id"].head(CAP - n_severe)]
        assert sorted(i.decision_id for i in items) == sorted(expected)
        assert len(items) == min(CAP, len(rows))
        for cell in cells:
            assert all((i.outcome, i.proposal) == (cell.outcome, cell.proposal) for i in cell.items)
            assert cell.outcome != cell.proposal
        for item in items:
            assert f"href='{AUDIT_URL}/decisions/{item.decision_id}'" in page
        assert list(rows["rank"]) == list(range(1, len(rows) + 1))
        assert bool(rows.iloc[0]["severe"]) == rows["severe"].any()
    links = re.findall(rf"href='{re.escape(AUDIT_URL)}/decisions/", page)
    assert len(links) == sum(len(c.items) for cells in section.galleries.values() for c in cells)
    assert len(links) <= CAP * len(section.verdicts)
