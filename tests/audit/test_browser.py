"""The workbench in headless Chromium: an auditor signs in and answers 20 decisions by keyboard."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest

from contracts.audit_samples import sample_path
from contracts.records import NONE_OF_THESE, SOURCE_AUDIT
from tests.audit import serving, week
from tests.audit.chromium import Tab, tab
from tests.audit.harness import audit_rows
from tests.audit.serving import running
from tests.dashboards.browser import chromium

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium not installed")
OPTION_IDS = [o for o, _ in week.GENERATED_OPTIONS]
KEYS = ["1", "3", "2", "4", "2", "2", "1", "3", "n", "4", "1", "2", "3", "1", "4", "2", "3", "1", "2", "4"]
"""The key pressed on each of the 20 decisions (``n``: none of these)."""
UNDO_AT, RELOAD_AT = 5, 11


def cli(*args: str) -> None:
    """Run ``semif-shadow`` (one of the steps docs/audit.md gives)."""
    subprocess.run([serving.CLI, *args], check=True, capture_output=True, timeout=300)  # noqa: S603


def generated_week(tmp: Path) -> tuple[Path, Path, pa.Table]:
    """``(records root, catalog, sample)``: a generated week and its audit sample (as docs/audit.md)."""
    root = tmp / "records"
    cli("pipelines", "generate", "--root", str(root), "--decisions", "3000", "--weeks", "1",
        "--first-week", week.WEEK, "--drift-week", "-1", "--seed", "36")
    cli("audit", "sample", "--root", str(root), "--week", week.WEEK, "--type", week.GENERATED_TYPE,
        "--disagreements", "30", "--agreement-rate", "0.02")
    sample = pq.read_table(root / sample_path(week.WEEK, week.GENERATED_TYPE))
    return root, week.generated_catalog(tmp / "catalog.yaml"), sample


def production_outcomes(root: Path, ids: set[str]) -> dict[str, str]:
    """Production's outcome of each decision (what the mart compares the audits with)."""
    rows = pads.dataset(root / "outcomes", format="parquet", partitioning="hive").to_table().to_pylist()
    return {r["decision_id"]: r["outcome"] for r in rows
            if r["decision_id"] in ids and r["source"] != SOURCE_AUDIT}


def stratified_estimate(answers: dict[str, str], outcomes: dict[str, str], sample: pa.Table) -> float:
    """Production's audited correctness by the stratified mean (numpy, from the sample's stratum sizes)."""
    rows = [r for r in sample.to_pylist() if r["decision_id"] in answers]
    total, weighted = 0.0, 0.0
    for stratum in {r["stratum"] for r in sample.to_pylist()}:
        of = [r for r in rows if r["stratum"] == stratum]
        right = np.array([outcomes[r["decision_id"]] == answers[r["decision_id"]] for r in of], dtype=float)
        size = float(next(r["stratum_decisions"] for r in sample.to_pylist() if r["stratum"] == stratum))
        total += size
        weighted += size * right.mean()
    return weighted / total


def answer_of(key: str) -> str:
    """The answer a key gives."""
    return NONE_OF_THESE if key == "n" else OPTION_IDS[int(key) - 1]


def redo_key(first: str, production: str | None) -> str:
    """The key that flips the undone answer's correctness against production (right <-> wrong)."""
    if production in OPTION_IDS and answer_of(first) != production:
        return str(OPTION_IDS.index(production) + 1)
    return next(k for k in "12345" if answer_of(k) != answer_of(first))


def answer_by_keyboard(page: Tab, base: str, total: int,
                       outcomes: dict[str, str]) -> tuple[dict[str, str], str]:
    """Answer 20 decisions by key, with an undo, a "none of these" and a reload.

    The answers that stand, and the undone decision's first answer.
    """
    expected: dict[str, str] = {}
    page.sign_in(base, week.TOKEN, "auditor-kb")
    for i, key in enumerate(KEYS):
        shown = page.text("decision-id")
        assert shown is not None, page.evaluate("document.body.innerText")
        assert shown not in expected
        assert page.text("progress") == f"{i} of {total}"
        if i == RELOAD_AT:  # the auditor reloads, then comes back to the start page: same decision
            page.reload()
            assert page.text("decision-id") == shown
            page.goto(f"{base}/")
            assert page.text("decision-id") == shown
        page.press(key)
        if i == UNDO_AT:  # back to the answer just given; the new one right where it was wrong, or reverse
            page.press("u")
            assert page.text("decision-id") == shown
            first, key = answer_of(key), redo_key(key, outcomes.get(shown))  # noqa: PLW2901  (it stands)
            page.press(key)
        expected[shown] = answer_of(key)
    assert page.text("progress") == f"20 of {total}"
    return expected, first


async def test_twenty_answers_by_keyboard_are_in_the_records_and_the_correctness_mart(tmp_path: Path) -> None:
    """Sign in and answer 20 decisions by key, with an undo, a "none of these" and a reload that resumes.

    The records then hold exactly those answers (the undone one twice, the later answer latest), and
    after ``pipelines run`` the ``correctness`` mart counts 20 audited decisions and its production
    estimate equals the stratified mean computed here from those answers.
    """
    root, catalog, sample = generated_week(tmp_path)
    spool = tmp_path / "audit-spool"
    with running(root, catalog, spool) as base, tab() as page:
        needed = sample.num_rows + sum(sample.column("double_audit").to_pylist())
        outcomes = production_outcomes(root, set(sample.column("decision_id").to_pylist()))
        expected, first = answer_by_keyboard(page, base, needed, outcomes)
        assert page.errors == []
    rows = audit_rows(root, spool)
    assert len(rows) == 21  # 20 decisions, one of them answered twice
    latest = {str(r["decision_id"]): r["outcome"] for r in rows}
    assert latest == expected
    undone_id = list(expected)[UNDO_AT]
    undone = [r["outcome"] for r in rows if r["decision_id"] == undone_id]
    assert undone == [first, expected[undone_id]]
    assert {r["auditor"] for r in rows} == {"auditor-kb"}
    assert {r["audit_sample"] for r in rows} == set(sample.column("sample_id").to_pylist())
    assert NONE_OF_THESE in latest.values()

    out = tmp_path / "marts"
    cli("pipelines", "run", "--root", str(root), "--week", week.WEEK, "--out", str(out),
        "--as-of", "2027-01-31T00:00:00Z")
    mart = pq.read_table(out / "correctness" / f"week={week.WEEK}" / "part-0.parquet").to_pylist()
    production = next(r for r in mart if r["model_key"] == "production")
    assert production["audited"] == 20
    assert all(r["audited"] <= 20 for r in mart)
    reference = stratified_estimate(expected, outcomes, sample)
    assert production["correctness"] == pytest.approx(reference, abs=1e-12)
    earlier = stratified_estimate({**expected, undone_id: first}, outcomes, sample)
    assert earlier != pytest.approx(reference)  # the mart kept the later answer, not the undone one


XSS = ('<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
       '<a href="javascript:window.__xss = 3">open</a> javascript:window.__xss = 4')


async def test_a_state_holding_script_is_shown_as_text_and_nothing_runs(tmp_path: Path) -> None:
    """A stored state with a ``<script>``, an ``onerror`` image and ``javascript:`` URLs: shown as text.

    Nothing runs (no marker set, no console error, no dialog), no element comes from it, and the HTML
    holds it escaped (escaping, not only the Content-Security-Policy, keeps it out).
    """
    root, catalog, _ = await week.build(tmp_path, 3, subject=XSS)
    with running(root, catalog, tmp_path / "audit-spool") as base, tab() as page:
        page.sign_in(base, week.TOKEN, "auditor-xss")
        assert page.evaluate("typeof window.__xss") == "undefined"
        assert page.evaluate("document.images.length") == 0
        assert page.evaluate("document.links.length") == 0
        assert page.evaluate("document.scripts.length") == 1  # the page's own /static/workbench.js
        assert XSS in page.evaluate("document.querySelector('table.state').textContent")
        page.press("1")  # the next decision shows the same state: still nothing runs
        assert page.evaluate("typeof window.__xss") == "undefined"
        assert page.errors == []
    documents = [s.body for s in page.seen if "/decisions/" in s.url and s.status == 200]
    assert documents
    for body in documents:
        assert "<script>window" not in body
        assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in body


async def test_keys_typed_into_the_note_are_text_and_escape_returns_to_answering(tmp_path: Path) -> None:
    """Digits and letters typed in the note stay in the note; after Escape a digit answers, note included."""
    root, catalog, _ = await week.build(tmp_path, 3)
    spool = tmp_path / "audit-spool"
    with running(root, catalog, spool) as base, tab() as page:
        page.sign_in(base, week.TOKEN, "auditor-note")
        shown = page.text("decision-id")
        page.evaluate("document.getElementById('note').focus()")
        page.type_text("2 sun")
        assert page.text("decision-id") == shown  # nothing answered, skipped or undone
        assert page.evaluate("document.getElementById('note').value") == "2 sun"
        page.escape()
        page.press("3")
        assert page.text("decision-id") != shown
        assert page.errors == []
    rows = audit_rows(root, spool)
    assert [(r["decision_id"], r["outcome"]) for r in rows] == [(shown, week.OPTIONS[2][0])]
    notes = (spool / "notes" / f"week={week.WEEK}.jsonl").read_text(encoding="utf-8")
    assert f'"decision_id": "{shown}"' in notes
    assert '"note": "2 sun"' in notes
