"""The funnel counts the sidecar's drop summaries: offered and not scored, and in `funnel_reasons`."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from contracts.records import DROPS, RECORD_VERSION
from pipelines.generate import Plan, generate
from pipelines.storage import open_root
from tests.pipelines.harness import mart, run_window

if TYPE_CHECKING:
    from pathlib import Path

MONDAY = dt.datetime(2026, 10, 26, tzinfo=dt.UTC)  # 2026-W44, the plan's first week
COUNTED = {"shed": 500, "queue_full": 7}


def _write_drops(root: Path, decision_type: str) -> None:
    """Drop summaries as the sidecar writes them: two rows for one (minute, reason), to be summed."""
    minute = MONDAY + dt.timedelta(days=2, hours=10)
    rows = [("shed", 300), ("shed", 200), ("queue_full", 7)]
    table = pa.Table.from_pylist([
        {"record_version": RECORD_VERSION, "decision_type": decision_type, "candidate": "default",
         "minute": minute, "reason": reason, "dropped": n, "writer_id": "w1"} for reason, n in rows],
        schema=DROPS)
    folder = root / "drops" / f"decision_type={decision_type}" / f"date={minute.date().isoformat()}"
    folder.mkdir(parents=True)
    pq.write_table(table, folder / "w1-0000000000000001.parquet")


def test_funnel_adds_drop_summaries_to_offered_and_not_scored(tmp_path: Path) -> None:
    """The same records with and without drops: the type's week grows by exactly the counts, nothing else."""
    root = tmp_path / "records"
    generate(open_root(str(root)), Plan(decisions=3000, weeks=1, drift_week=None, seed=5))
    decision_type = min(p.name.removeprefix("decision_type=") for p in (root / "proposals").iterdir())
    before = run_window(root, None, first="2026-W44", last="2026-W44")
    funnel_before = {(r["decision_type"], r["candidate"]): r for r in mart(before, "funnel")}
    reasons_before = {(r["decision_type"], r["status"], r["reason"]): r["decisions"]
                      for r in mart(before, "funnel_reasons")}
    before.con.close()
    _write_drops(root, decision_type)
    after = run_window(root, None, first="2026-W44", last="2026-W44")
    funnel_after = {(r["decision_type"], r["candidate"]): r for r in mart(after, "funnel")}
    reasons_after = {(r["decision_type"], r["status"], r["reason"]): r["decisions"]
                     for r in mart(after, "funnel_reasons")}
    after.con.close()
    total = sum(COUNTED.values())
    for key, row in funnel_after.items():
        grew = total if key == (decision_type, "default") else 0
        old = funnel_before[key]
        assert row["offered"] == old["offered"] + grew
        assert row["not_scored"] == old["not_scored"] + grew
        for same in ("sampled", "scored", "labelled"):
            assert row[same] == old[same]
        assert row["scored"] + row["not_scored"] == row["offered"]
    for reason, n in COUNTED.items():
        key = (decision_type, "dropped", reason)
        assert reasons_after[key] == reasons_before.get(key, 0) + n
