"""Plain helpers of the shadow.records tests (journals left by a crash), imported where used.

`conftest.py` beside it keeps the fixtures; `factories.py` builds rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadow.records.rows import normalize
from shadow.records.segment_files import ACCEPT, OUTCOME, PROPOSAL, SegmentFile, encode

from .factories import BASE_US, OPTIONS, outcome_row, proposal_row

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings


def crashed_journal(settings: RecordSettings) -> None:
    """Two segments as a killed sidecar leaves them: the second ends in half a frame."""
    first = SegmentFile(settings.journal_dir, 100)
    first.write(accept("x") + encode(PROPOSAL, normalize("proposals", proposal_row("x"), "w1"))
                + accept("y") + encode(OUTCOME, normalize("outcomes", outcome_row("x"), "w1")))
    first.close()
    second = SegmentFile(settings.journal_dir, 200)
    torn = encode(PROPOSAL, normalize("proposals", proposal_row("y"), "w1"))
    second.write(accept("y") + accept("z") + torn[: len(torn) // 2])
    second.close()


def accept(decision_id: str, **extra: str) -> bytes:
    """A journal frame accepting ``decision_id`` (its options, received at ``BASE_US``)."""
    return encode(ACCEPT, {"decision_id": decision_id, "decision_type": "route", "received_at": BASE_US,
                           "option_ids": OPTIONS, **extra})
