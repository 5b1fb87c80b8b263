"""SIGKILL of the workbench between (and during) answers: every acknowledged answer survives.

A scripted auditor answers as fast as it can while a timer kills the server with SIGKILL at a random
moment, many times; each restart recovers the journal and the auditor signs in again and resumes.
"""

from __future__ import annotations

import asyncio
import random
import signal
import threading
import time
from collections import Counter
from typing import TYPE_CHECKING

import pytest

from contracts.records import NONE_OF_THESE
from tests.audit import week
from tests.audit.client import WorkbenchClient
from tests.audit.harness import audit_rows
from tests.audit.serving import start, stop

if TYPE_CHECKING:
    from pathlib import Path

ROUNDS = 10
ANSWERS = [o for o, _ in week.OPTIONS] + [NONE_OF_THESE]


@pytest.mark.slow
def test_every_acknowledged_answer_survives_sigkill_and_nothing_is_half_written(tmp_path: Path) -> None:
    """Ten SIGKILLs at random moments: acknowledged answers all in the records, every row whole and sent."""
    root, catalog, _ = asyncio.run(week.build(tmp_path, 600))
    spool = tmp_path / "audit-spool"
    rng = random.Random(36)  # noqa: S311  (test schedule, not a secret)
    sent: Counter[tuple[str, str]] = Counter()
    acked: list[tuple[str, str]] = []
    kills_mid_answer = 0
    for _ in range(ROUNDS):
        proc, base = start(root, catalog, spool)
        auditor = WorkbenchClient(base, week.TOKEN, "auditor-crash")
        auditor.sign_in()
        timer = threading.Timer(rng.uniform(0.02, 0.3), proc.send_signal, (signal.SIGKILL,))
        timer.start()
        try:
            while True:
                fields = auditor.next_decision()
                assert fields is not None, "the sample ran out: make it larger"
                assert fields["decision_id"] not in {d for d, _ in acked}  # resumed past every acked answer
                time.sleep(rng.uniform(0, 0.004))  # the auditor reads (and the kill may land anywhere)
                choice = rng.choice(ANSWERS)
                sent[fields["decision_id"], choice] += 1
                try:
                    done = auditor.answer(fields, choice)
                except OSError:
                    kills_mid_answer += 1
                    raise
                if done:
                    acked.append((fields["decision_id"], choice))
        except OSError:  # the server is gone (connection refused or reset): killed
            pass
        timer.join()
        assert stop(proc) == -signal.SIGKILL
    proc, _ = start(root, catalog, spool)  # recovers the last kill's journal, then closes cleanly
    assert stop(proc) == 0
    rows = audit_rows(root, spool)
    written = Counter((str(r["decision_id"]), str(r["outcome"])) for r in rows)
    assert len(acked) > ROUNDS  # the auditor did answer between kills
    assert not Counter(acked) - written  # every acknowledged answer is in the records
    assert not written - sent  # and nothing that was not sent (no row twice, none made up)
    for row in rows:  # whole rows only
        assert row["auditor"] == "auditor-crash"
        assert row["audit_sample"] == week.SAMPLE_ID
        assert row["decision_type"] == week.TYPE
        assert row["in_options"] == (row["outcome"] != NONE_OF_THESE)
    print(f"{len(acked)} acknowledged, {len(rows)} in the records, {kills_mid_answer} kills mid-answer")  # noqa: T201
