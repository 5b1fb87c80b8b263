"""The disagreement gallery: the week's severe errors and most confident disagreements, to look at.

From the ``gallery`` mart (per decision type, week and candidate identity, the 25 most confident severe
errors and the 25 most confident other disagreements): per candidate, up to ``gallery_max``
(``review.yaml``; half severe errors, half others, where there are both), grouped
by confusion cell (production's outcome x the candidate's proposal), each with its stored state and a
link to the audit workbench, ``{audit_url}/decisions/{decision_id}``. The state is shown as stored: the
sidecar redacted it as the catalog says before persisting it (removed fields are not there to show;
hashed ones show their ``hmac-sha256:`` form); nothing here can add back what was removed.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from dashboards.marts import CANDIDATE

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dashboards.marts import Marts


@dataclass(frozen=True)
class Item:
    """One decision of the gallery."""

    decision_id: str
    proposal: str
    outcome: str
    confidence: float
    severe: bool
    state: str | None
    link: str


@dataclass(frozen=True)
class Cell:
    """One confusion cell's decisions: production said ``outcome``, the candidate ``proposal``."""

    outcome: str
    proposal: str
    items: tuple[Item, ...]


def gallery_of(marts: Marts, decision_type: str, candidate: str, cap: int, audit_url: str) -> list[Cell]:
    """Up to ``cap`` decisions of one candidate in the review week, grouped by confusion cell."""
    frame = marts.frames.get("gallery")
    if frame is None or frame.empty or cap == 0:
        return []
    rows = frame[
        (frame["week"] == marts.week)
        & (frame["decision_type"] == decision_type)
        & (frame[CANDIDATE] == candidate)
    ]
    rows = rows.sort_values("rank")
    severe, other = rows[rows["severe"]], rows[~rows["severe"]]
    # severe errors and the most confident other disagreements, half the cap each (one fills the other's)
    n_severe = min(len(severe), max(cap - len(other), math.ceil(cap / 2)))
    rows = pd.concat([severe.head(n_severe), other.head(cap - n_severe)])
    base = audit_url.rstrip("/")
    cells: dict[tuple[str, str], list[Item]] = {}
    for r in rows.itertuples():
        state = r.state if isinstance(r.state, str) else None  # a missing state reads as None or NaN
        item = Item(
            str(r.decision_id),
            str(r.proposal),
            str(r.outcome),
            float(r.confidence),
            bool(r.severe),
            state,
            f"{base}/decisions/{r.decision_id}",
        )
        cells.setdefault((item.outcome, item.proposal), []).append(item)
    ordered = sorted(cells.items(), key=lambda kv: (-sum(i.severe for i in kv[1]), -len(kv[1]), kv[0]))
    return [Cell(outcome, proposal, tuple(items)) for (outcome, proposal), items in ordered]


def _state(state: str | None) -> str:
    if state is None:
        return "<p class='nostate'>no stored state (the catalog does not store states of this type)</p>"
    try:
        text = json.dumps(json.loads(state), indent=1, ensure_ascii=False)
    except ValueError:
        text = state
    return f"<pre>{html.escape(text)}</pre>"


def to_html(name: str, cells: Sequence[Cell]) -> str:
    """One candidate's gallery: a folded block per confusion cell, each decision with state and link."""
    if not cells:
        return ""
    count = sum(len(c.items) for c in cells)
    severe = sum(i.severe for c in cells for i in c.items)
    blocks = "".join(
        f"<details class='cell'><summary>production said <b>{html.escape(c.outcome)}</b>, "
        f"{html.escape(name)} proposed <b>{html.escape(c.proposal)}</b>: {len(c.items)}"
        f"{' (severe)' if any(i.severe for i in c.items) else ''}</summary>"
        + "".join(
            f"<div class='decision'><a href='{html.escape(i.link)}'>{html.escape(i.decision_id)}</a> "
            f"confidence {i.confidence:.3f}{' · severe error' if i.severe else ''}{_state(i.state)}</div>"
            for i in c.items
        )
        + "</details>"
        for c in cells
    )
    return (
        f"<div class='gallery'><h4>{html.escape(name)}: {count} disagreement(s) to look at, {severe} severe "
        f"(most confident first; open in the audit workbench)</h4>{blocks}</div>"
    )
