"""The evidence at a candidate's policy: the ledger the precision and severe-error rules read.

A ``Ledger`` is the ``evidence`` mart's row of the candidate at its policy (the policy file's sha256, first
12 hex, or ``none``: the week's own thresholds), whose counts are cumulative over the mature weeks since
the ledger last reset (``pipelines/ledger.py``). Marts without that row (an older pipelines version, or a
policy the pipelines run was not given) fall back to the review week's counts alone, as one look
(``week_ledger``), and say so in ``Ledger.describe``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards.marts import CANDIDATE, count_of, is_missing
from pipelines.ledger import NO_POLICY

if TYPE_CHECKING:
    import pandas as pd

    from dashboards.marts import Marts
    from dashboards.policies import Replayed



@dataclass(frozen=True)
class Ledger:
    """Cumulative mature labelled counts at the candidate's policy (the ``evidence`` mart's ledger)."""

    policy: str
    accepted_labelled: int
    accepted_correct: int
    severe_errors: int
    weeks: int
    """Mature weeks with decisions counted since the last reset."""
    looks: int
    first_week: str | None
    counted_through: str | None
    """The last mature week the counts hold (None: none yet)."""
    reset_reason: str
    reset_week: str | None
    reset_from: str | None
    provisional_labelled: int = 0
    """Labelled accepted decisions of weeks not yet mature (not in the counts)."""
    provisional_correct: int = 0
    from_mart: bool = True
    """False: the review week's counts alone (no ledger row), one look."""
    in_sample: bool = False

    @property
    def provisional_precision(self) -> float:
        """Precision of the weeks not yet mature (0 without any)."""
        return self.provisional_correct / self.provisional_labelled if self.provisional_labelled else 0.0

    def describe(self) -> str:
        """Where the counts come from.

        E.g. ``ledger at policy 1a2b3c4d5e6f: 2026-W44..2026-W47 (3 weeks, 4 looks; first look at 2026-W44)``.
        """
        policy = "the week's own thresholds" if self.policy == NO_POLICY else f"policy {self.policy}"
        if not self.from_mart:
            return (
                f"{policy}, this week's labels only (no evidence ledger for it: pass the policy to "
                "`pipelines run --policy` to accumulate)"
            )
        span = f"{self.first_week}..{self.counted_through}" if self.first_week else "no mature week yet"
        reset = self.reset_reason + (f" from {self.reset_from}" if self.reset_from else "")
        return (
            f"ledger at {policy}: {span} ({self.weeks} weeks, {self.looks} looks; {reset} at "
            f"{self.reset_week})"
        )


def policy_key_of(policy: Replayed) -> str:
    """The ledger key of a replayed policy: its file's sha256, first 12 hex (``pipelines.ledger``)."""
    return policy.sha256[:12]


def ledger_row(marts: Marts, decision_type: str, candidate: str, key: str) -> pd.Series | None:
    """The ``evidence`` row of the candidate at the policy ``key`` (None: marts without it, or no look)."""
    frame = marts.of_week_if_built("evidence")
    if frame is None or frame.empty or "policy" not in frame:
        return None
    rows = frame[
        (frame["decision_type"] == decision_type) & (frame[CANDIDATE] == candidate) & (frame["policy"] == key)
    ]
    return None if rows.empty or is_missing(rows.iloc[0]["looks"]) else rows.iloc[0]


def ledger_of(row: pd.Series, key: str) -> Ledger:
    """The ledger an ``evidence`` row holds."""

    def text(column: str) -> str | None:
        return None if is_missing(row[column]) else str(row[column])

    return Ledger(
        policy=key,
        accepted_labelled=count_of(row, "ledger_accepted_labelled"),
        accepted_correct=count_of(row, "ledger_accepted_correct"),
        severe_errors=count_of(row, "ledger_severe_errors"),
        weeks=count_of(row, "weeks_covered"),
        looks=count_of(row, "looks"),
        first_week=text("ledger_first_week"),
        counted_through=text("counted_through"),
        reset_reason=text("reset_reason") or "first look",
        reset_week=text("reset_week"),
        reset_from=text("reset_from"),
        provisional_labelled=count_of(row, "provisional_accepted_labelled"),
        provisional_correct=count_of(row, "provisional_accepted_correct"),
        in_sample=key == NO_POLICY,
    )


def week_ledger(agreement: pd.Series | None, selective: pd.Series | None, policy: Replayed | None) -> Ledger:
    """No ledger row: the review week's own counts as a ledger of one look (said in ``describe``)."""
    if policy is not None:
        labelled, correct = policy.count("accepted_labelled"), policy.count("accepted_correct")
        severe, key = policy.count("severe_errors"), policy_key_of(policy)
    else:
        labelled, correct = count_of(selective, "accepted_labelled"), count_of(selective, "accepted_correct")
        severe, key = count_of(agreement, "severe_errors"), NO_POLICY
    return Ledger(
        key,
        labelled,
        correct,
        severe,
        weeks=1,
        looks=1,
        first_week=None,
        counted_through=None,
        reset_reason="no ledger",
        reset_week=None,
        reset_from=None,
        from_mart=False,
        in_sample=policy is None,
    )


def scored_accepted(
    row: pd.Series | None, selective: pd.Series | None, policy: Replayed | None
) -> tuple[int, int]:
    """Scored and accepted at the policy this week: the ledger row, else the replay, else ``selective``."""
    if row is not None:
        return count_of(row, "scored"), count_of(row, "accepted")
    if policy is not None:
        return policy.count("scored"), policy.count("accepted")
    return count_of(selective, "scored"), count_of(selective, "accepted")

