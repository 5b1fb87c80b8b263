"""Which sampled decision an auditor sees next, and how far the sample is answered.

Blind: the order is a hash of the sample row's key (never the stratum, an outcome or a proposal), the
same for every auditor and every restart. A decision needs one auditor, or two different auditors when
the sample marks it ``double_audit``. A decision shown to an auditor is *claimed* for them for
``claim_s`` seconds, so two auditors working at once are not shown the same single-audit decision.

Per auditor: the answers (the latest per decision wins, as in the marts), the order they were given in
(``u`` goes back through it), and the decisions skipped in this pass (``s``; they come back once every
other open decision is answered). Answers come from the records at start and from each durable write.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from audit.workbench.reading import Audit, SampleRow

Key = tuple[str, str, str]


def _blind_order(row: SampleRow) -> str:
    return hashlib.sha256("\x1f".join(row.key).encode()).hexdigest()


@dataclass(frozen=True)
class Progress:
    """How far a sample is: ``given`` of the ``needed`` answers are in.

    A decision needs one answer, a double audit two (a third counts once); ``yours`` are this auditor's;
    ``decisions`` and ``doubles`` count the sample's rows.
    """

    given: int
    needed: int
    yours: int
    decisions: int
    doubles: int


class Worklist:
    """The sample and who answered what (see the module docstring)."""

    def __init__(self, rows: list[SampleRow], claim_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rows = sorted(rows, key=_blind_order)
        self.by_key = {r.key: r for r in self.rows}
        self.by_id: dict[str, list[SampleRow]] = {}
        for row in self.rows:
            self.by_id.setdefault(row.decision_id, []).append(row)
        self._claim_s = claim_s
        self._clock = clock
        self._answers: dict[Key, dict[str, str]] = {}
        self._history: dict[str, list[Key]] = {}
        self._claims: dict[Key, dict[str, float]] = {}
        self._skipped: dict[str, set[Key]] = {}

    def load(self, audits: list[Audit]) -> None:
        """Take the audits already in the records (oldest first) as answers."""
        for audit in audits:
            if audit.key in self.by_key and audit.auditor:
                self.record(audit.key, audit.auditor, audit.answer)

    def record(self, key: Key, auditor: str, answer: str) -> None:
        """An answer is durable: it is the auditor's latest for ``key``."""
        self._answers.setdefault(key, {})[auditor] = answer
        history = self._history.setdefault(auditor, [])
        if key in history:
            history.remove(key)
        history.append(key)
        self._claims.get(key, {}).pop(auditor, None)
        self._skipped.get(auditor, set()).discard(key)

    def answered(self, key: Key, auditor: str) -> bool:
        """Whether ``auditor`` has answered ``key``."""
        return auditor in self._answers.get(key, {})

    def _open_to(self, row: SampleRow, auditor: str, now: float) -> bool:
        answers = self._answers.get(row.key, {})
        if auditor in answers:
            return False
        claimed = {a for a, until in self._claims.get(row.key, {}).items() if until > now and a != auditor}
        return len(set(answers) | claimed) < (2 if row.double_audit else 1)

    def next_for(self, auditor: str, types: Collection[str]) -> SampleRow | None:
        """The next decision to show ``auditor`` (claimed for them), or None when nothing is left."""
        now = self._clock()
        skipped = self._skipped.setdefault(auditor, set())
        for attempt in range(2):
            for row in self.rows:
                if row.decision_type in types and row.key not in skipped and self._open_to(row, auditor, now):
                    self.claim(row.key, auditor)
                    return row
            if attempt == 0 and skipped:
                skipped.clear()  # every other open decision is answered: the skipped ones come back
                continue
            break
        return None

    def claim(self, key: Key, auditor: str) -> None:
        """Hold ``key`` for ``auditor`` for ``claim_s`` seconds."""
        self._claims.setdefault(key, {})[auditor] = self._clock() + self._claim_s

    def skip(self, key: Key, auditor: str) -> None:
        """Put ``key`` aside for this pass and let another auditor have it."""
        self._skipped.setdefault(auditor, set()).add(key)
        self._claims.get(key, {}).pop(auditor, None)

    def undo(self, auditor: str) -> SampleRow | None:
        """The auditor's last answered decision, to answer again (its answer stands until replaced)."""
        history = self._history.get(auditor, [])
        if not history:
            return None
        row = self.by_key[history.pop()]
        self.claim(row.key, auditor)
        return row

    def progress(self, auditor: str, types: Collection[str]) -> Progress:
        """How far the sample (of ``types``) is answered, and how many answers are ``auditor``'s."""
        rows = [r for r in self.rows if r.decision_type in types]
        needed = [2 if r.double_audit else 1 for r in rows]
        given = sum(min(len(self._answers.get(r.key, {})), n) for r, n in zip(rows, needed, strict=True))
        yours = sum(auditor in self._answers.get(r.key, {}) for r in rows)
        return Progress(given, sum(needed), yours, len(rows), sum(r.double_audit for r in rows))
