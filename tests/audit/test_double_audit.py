"""Two auditors, one decision: a sample's double-audit rows go to two different auditors, the rest to one."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import TYPE_CHECKING

from audit.workbench.reading import SampleRow
from audit.workbench.worklist import Worklist
from tests.audit import week
from tests.audit.client import WorkbenchClient
from tests.audit.harness import audit_rows
from tests.audit.serving import running

if TYPE_CHECKING:
    from pathlib import Path

DOUBLES = {"d0001", "d0004", "d0006", "d0009"}


def test_two_auditors_at_once_share_the_sample_and_both_answer_the_doubles(tmp_path: Path) -> None:
    """Two auditors take turns: each single decision is answered once, each double by both of them."""
    root = tmp_path / "records"
    items = week.decisions(12)
    asyncio.run(week.write_records(root, tmp_path / "sidecar-spool", items))
    week.write_sample(root, [d.decision_id for d in items], double=DOUBLES)
    catalog = week.catalog(tmp_path / "catalog.yaml")
    with running(root, catalog, tmp_path / "audit-spool") as base:
        auditors = [WorkbenchClient(base, week.TOKEN, name) for name in ("auditor-a", "auditor-b")]
        for auditor in auditors:
            auditor.sign_in()
        shown: dict[str, list[str]] = {"auditor-a": [], "auditor-b": []}
        pending = [a.next_decision() for a in auditors]  # both hold a decision before either answers
        while any(p is not None for p in pending):
            for i, auditor in enumerate(auditors):
                fields = pending[i]
                if fields is None:
                    continue
                shown[auditor.name].append(fields["decision_id"])
                assert auditor.answer(fields, "billing")
                pending[i] = auditor.next_decision()
    assert not set(shown["auditor-a"]) & set(shown["auditor-b"]) - DOUBLES  # a single went to one auditor
    assert set(shown["auditor-a"]) & set(shown["auditor-b"]) == DOUBLES  # each double to both
    answered = Counter(str(r["decision_id"]) for r in audit_rows(root, tmp_path / "audit-spool"))
    assert answered == Counter({d.decision_id: 2 if d.decision_id in DOUBLES else 1 for d in items})


def test_a_double_audit_is_never_shown_twice_to_one_auditor_and_claims_expire() -> None:
    """One auditor alone answers each decision once; a claim held past ``claim_s`` frees the decision."""
    clock = [0.0]
    rows = [SampleRow("s", "t", f"d{i}", double_audit=i == 0) for i in range(3)]
    worklist = Worklist(rows, claim_s=60.0, clock=lambda: clock[0])
    seen = []
    while (row := worklist.next_for("a", {"t"})) is not None:
        seen.append(row.decision_id)
        worklist.record(row.key, "a", "x")
    assert sorted(seen) == ["d0", "d1", "d2"]
    held = worklist.next_for("b", {"t"})  # only the double is left for a second auditor
    assert held is not None
    assert held.decision_id == "d0"
    assert worklist.next_for("c", {"t"}) is None  # claimed by b, and a already answered it
    clock[0] += 61.0
    freed = worklist.next_for("c", {"t"})
    assert freed is not None
    assert freed.decision_id == "d0"
    progress = worklist.progress("a", {"t"})
    assert (progress.given, progress.needed, progress.yours) == (3, 4, 3)
