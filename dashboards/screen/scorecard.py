"""Champion against each challenger, per decision type: differences with intervals and a recommendation.

The champion is ``champion`` in ``review.yaml`` (a candidate name), else the candidate that scored most
decisions in the week; each candidate is represented by its identity that scored most (the others keep
their own verdicts in the banner). Rows (challenger - champion; estimators in ``dashboards.screen.stats``):

- agreement with production, on the decisions both scored that have an outcome (``paired`` mart);
- audited correctness, where the ``correctness`` mart has both (audits exist);
- precision and coverage at each candidate's policy (its replay, else the week's own thresholds);
- severe errors per labelled decision (``agreement`` mart);
- cost per accepted decision (``paired`` mart's cost per scored over the coverage);
- scorer p99: the marts keep it per fleet, so it is shown, not compared.

Every p-value of the review is Holm-adjusted over all its scorecards (candidates and decision types)
before the recommendation reads it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards.intervals import proportion_interval
from dashboards.marts import ALL, CANDIDATE
from dashboards.names import base_name, readable
from dashboards.screen.stats import (
    Difference,
    holm,
    independent_difference,
    paired_difference,
    per_accepted,
    ratio_difference,
    se_difference,
)
from dashboards.verdict.decision import COST, COST_HARD, P99, P99_HARD, Decision, accepted_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from dashboards.marts import Marts
    from dashboards.verdict.decision import Verdict
    from dashboards.verdict.evidence import Evidence

SIGNIFICANT = 0.05
"""Holm-adjusted p-value below which a difference is called shown."""
SHARED_GATES = frozenset({P99, P99_HARD, COST, COST_HARD})
"""Gates the scorer's fleet decides (the marts keep latency per fleet): shared by its candidates."""


@dataclass(frozen=True)
class Row:
    """One compared quantity: each side's value (and interval), the difference and its adjusted p."""

    metric: str
    champion: str
    challenger: str
    difference: Difference | None
    scale: float
    """Multiplier of the difference for display (100: percentage points)."""
    unit: str
    note: str = ""
    holm_p: float | None = None

    def shown_difference(self) -> str:
        """``+27.0 pts [+22.1, +31.9]``, or the note when nothing is compared."""
        d = self.difference
        if d is None or math.isnan(d.value):
            return self.note or "n/a"
        digits = 1 if self.scale == 100 else 4 if self.unit == "USD" else 0
        f = f"{{:+.{digits}f}}"
        return (
            f"{f.format(d.value * self.scale)} {self.unit} "
            f"[{f.format(d.low * self.scale)}, {f.format(d.high * self.scale)}]"
        )

    def shown_p(self) -> str:
        """The Holm-adjusted p-value (``< 0.001`` below that)."""
        if self.holm_p is None:
            return "-"
        return "< 0.001" if self.holm_p < 0.001 else f"{self.holm_p:.3f}"


@dataclass(frozen=True)
class Scorecard:
    """One challenger against the champion in one decision type."""

    decision_type: str
    champion: str
    challenger: str
    names: dict[str, str]
    paired: int
    rows: tuple[Row, ...]
    recommendation: str = ""


def representative(keys: Sequence[str], evidence: dict[str, Evidence]) -> dict[str, str]:
    """Candidate name -> its identity that scored most this week."""
    best: dict[str, str] = {}
    for key in sorted(keys):
        name = base_name(key)
        if name not in best or evidence[key].scored > evidence[best[name]].scored:
            best[name] = key
    return best


def champion_of(names: dict[str, str], evidence: dict[str, Evidence], configured: str | None) -> str:
    """The champion's identity: the configured name's, else the name whose identities scored most.

    Ties: the first name in alphabetical order.
    """
    if configured in names:
        return names[configured]
    scored: dict[str, int] = {}
    for key, e in evidence.items():
        scored[base_name(key)] = scored.get(base_name(key), 0) + e.scored
    best = min(names, key=lambda name: (-scored[name], name))
    return names[best]


def _pct(x: float, n: float) -> str:
    if n <= 0:
        return "n/a"
    low, high = proportion_interval(x, n)
    return f"{x / n:.1%} [{low:.1%}, {high:.1%}] of {int(n):,}"


def _pair_row(marts: Marts, decision_type: str, a: str, b: str) -> pd.Series | None:
    """The ``paired`` mart's row of identities ``a`` (champion) and ``b``, oriented b - a."""
    frame = marts.of_week("paired")
    if frame.empty:
        return None
    rows = frame[(frame["decision_type"] == decision_type) & (frame["model_key_a"] != ALL)]
    for first, second, flip in ((a, b, False), (b, a, True)):
        hit = rows[(rows["model_key_a"] == first) & (rows["model_key_b"] == second)]
        if not hit.empty:
            row = hit.iloc[0].copy()
            if flip:
                for left, right in (
                    ("only_a", "only_b"),
                    ("correct_a", "correct_b"),
                    ("usd_per_1k_a", "usd_per_1k_b"),
                ):
                    row[left], row[right] = row[right], row[left]
            return row
    return None


def _correctness(marts: Marts, decision_type: str, key: str) -> tuple[float, float, float, float] | None:
    """``(estimate, low, high, se)`` of audited correctness, where the ``correctness`` mart has audits."""
    frame = marts.frames.get("correctness")
    if frame is None or frame.empty or "correctness" not in frame:
        return None
    week = frame[(frame["week"] == marts.week) & (frame["decision_type"] == decision_type)]
    rows = week[week[CANDIDATE] == key] if CANDIDATE in week else week.iloc[0:0]
    if rows.empty or not int(rows.iloc[0].get("audited") or 0):
        return None
    row = rows.iloc[0]
    estimate, low, high, se = (
        float(row[c]) for c in ("correctness", "correctness_low", "correctness_high", "correctness_se")
    )
    return estimate, low, high, se


def _rows(
    marts: Marts, decision_type: str, a: str, b: str, evidence: dict[str, Evidence]
) -> tuple[int, list[Row]]:
    """The rows comparing challenger ``b`` with champion ``a``; the number of paired decisions."""
    ea, eb = evidence[a], evidence[b]
    pair = _pair_row(marts, decision_type, a, b)
    n = 0 if pair is None else int(pair["paired"])
    rows = [
        Row(
            "agreement with production (paired)",
            "n/a" if pair is None else _pct(int(pair["correct_a"]), n),
            "n/a" if pair is None else _pct(int(pair["correct_b"]), n),
            None if pair is None else paired_difference(int(pair["only_a"]), int(pair["only_b"]), n),
            100,
            "pts",
            "no decisions scored by both with an outcome" if pair is None else "",
        )
    ]
    ca, cb = _correctness(marts, decision_type, a), _correctness(marts, decision_type, b)
    if ca is not None and cb is not None:
        rows.append(
            Row(
                "audited correctness",
                f"{ca[0]:.1%} [{ca[1]:.1%}, {ca[2]:.1%}]",
                f"{cb[0]:.1%} [{cb[1]:.1%}, {cb[2]:.1%}]",
                se_difference((cb[0], cb[3]), (ca[0], ca[3])),
                100,
                "pts",
            )
        )
    pa, pb = accepted_of(ea), accepted_of(eb)
    source = "policy" if pa.out_of_sample and pb.out_of_sample else "in-sample thresholds for some"
    rows.append(
        Row(
            f"precision at the policy ({source})",
            _pct(pa.correct, pa.labelled),
            _pct(pb.correct, pb.labelled),
            independent_difference(pb.correct, pb.labelled, pa.correct, pa.labelled),
            100,
            "pts",
        )
    )
    xa, xb = round(pa.coverage * ea.scored), round(pb.coverage * eb.scored)
    rows.append(
        Row(
            "coverage at the policy",
            _pct(xa, ea.scored),
            _pct(xb, eb.scored),
            independent_difference(xb, eb.scored, xa, ea.scored),
            100,
            "pts",
        )
    )
    rows.append(
        Row(
            "severe errors per labelled",
            _pct(ea.severe_errors, ea.labelled),
            _pct(eb.severe_errors, eb.labelled),
            independent_difference(eb.severe_errors, eb.labelled, ea.severe_errors, ea.labelled),
            100,
            "pts",
        )
    )
    cost_a = cost_b = (math.nan, math.nan)
    if pair is not None:
        cost_a = per_accepted(_float(pair["usd_per_1k_a"]) / 1000, pa.coverage, ea.scored)
        cost_b = per_accepted(_float(pair["usd_per_1k_b"]) / 1000, pb.coverage, eb.scored)
    rows.append(
        Row(
            "cost per accepted decision (USD)",
            _usd(cost_a),
            _usd(cost_b),
            ratio_difference(cost_b, cost_a),
            1,
            "USD",
            "nothing accepted by one of them: no cost per accepted decision",
        )
    )
    same = ea.p99_ms == eb.p99_ms or (math.isnan(ea.p99_ms) and math.isnan(eb.p99_ms))
    rows.append(
        Row(
            "scorer p99 (ms)",
            f"{ea.p99_ms:.0f}",
            f"{eb.p99_ms:.0f}",
            None,
            1,
            "ms",
            "not compared: the marts keep p99 per fleet, shared by both" if same else "not compared",
        )
    )
    return n, rows


def _float(value: object) -> float:
    return math.nan if value is None else float(value)  # type: ignore[arg-type]


def _usd(estimate: tuple[float, float]) -> str:
    value, var = estimate
    if math.isnan(value):
        return "n/a"
    half = 1.959964 * math.sqrt(var)
    return f"${value:.5f} [{max(value - half, 0):.5f}, {value + half:.5f}]"


def scorecards(
    marts: Marts, decision_type: str, evidence: dict[str, Evidence], configured: str | None
) -> list[Scorecard]:
    """One scorecard per challenger of ``decision_type`` (none with a single candidate); p not adjusted."""
    names = representative(list(evidence), evidence)
    if len(names) < 2:
        return []
    champion = champion_of(names, evidence, configured)
    labels = readable(evidence)
    cards = []
    for key in sorted(names.values()):
        if key == champion:
            continue
        n, rows = _rows(marts, decision_type, champion, key, evidence)
        cards.append(Scorecard(decision_type, champion, key, labels, n, tuple(rows)))
    return cards


def adjust(
    cards: Sequence[Scorecard], verdicts: dict[tuple[str, str], Verdict]
) -> tuple[list[Scorecard], int]:
    """Holm-adjust every p-value of ``cards`` together, and write each card's recommendation.

    ``verdicts``: ``(decision_type, candidate) -> Verdict``. Returns the cards and the family's size.
    """
    where = [
        (i, j)
        for i, card in enumerate(cards)
        for j, row in enumerate(card.rows)
        if row.difference is not None and row.difference.p is not None
    ]
    adjusted = holm([cards[i].rows[j].difference.p for i, j in where])  # type: ignore[union-attr,misc]
    rows = [list(card.rows) for card in cards]
    for (i, j), p in zip(where, adjusted, strict=True):
        rows[i][j] = dataclasses.replace(rows[i][j], holm_p=p)
    out = []
    for card, new in zip(cards, rows, strict=True):
        replaced = dataclasses.replace(card, rows=tuple(new))
        out.append(dataclasses.replace(replaced, recommendation=recommend(replaced, verdicts)))
    return out, len(where)


def _not_yet(better: Verdict, other: Verdict) -> str:
    """Why the better one is not go yet, naming a gate both fail on a shared scorer as such."""
    rule = better.binding.rule if better.binding is not None else ""
    if other.binding is not None and other.binding.rule == rule and rule in SHARED_GATES:
        return f"both fail '{rule}', which their one scorer sets, not the model"
    return f"it is not ready for go yet ({rule})" if rule else "it is not ready for go yet"


def recommend(card: Scorecard, verdicts: dict[tuple[str, str], Verdict]) -> str:
    """Which of the two to carry forward, and why, in one sentence."""
    champ, chall = card.names[card.champion], card.names[card.challenger]
    vc = verdicts[card.decision_type, card.champion]
    vx = verdicts[card.decision_type, card.challenger]
    go = [name for name, v in ((chall, vx), (champ, vc)) if v.decision == Decision.GO]
    if go:
        return f"Carry forward {go[0]}: it passes every gate (GO)."
    audited = next((r for r in card.rows if r.metric == "audited correctness"), None)
    lead = audited or card.rows[0]
    d = lead.difference
    what = "audited correctness" if audited else "agreement with production"
    if d is None or math.isnan(d.value) or lead.holm_p is None:
        return f"Keep {champ}: {chall} has no {what} on the same decisions to compare yet."
    shown = f"{what} {lead.shown_difference()}, Holm p {lead.shown_p()}"
    if lead.holm_p < SIGNIFICANT and d.value > 0:
        return f"Carry forward {chall} over {champ}: {shown}; {_not_yet(vx, vc)}."
    if lead.holm_p < SIGNIFICANT:
        return f"Keep {champ}: {chall} is worse, {shown}; {_not_yet(vc, vx)}."
    return f"Keep {champ} for now: no difference shown yet ({shown}); more labels will tell."
