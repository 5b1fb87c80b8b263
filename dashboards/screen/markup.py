"""The review's first screen as HTML and Markdown: trust strip, decision banner, scorecard, verdict trend.

Plain HTML and text only (no chart, no script): what a rollout meeting reads first must not depend on a
chart having rendered. ``dashboards.report`` places it first in the page and in ``review.md``.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dashboards.screen.banner import Line
    from dashboards.screen.scorecard import Scorecard
    from dashboards.screen.trust import Fact

STYLE = """
#trust{display:flex;flex-wrap:wrap;gap:.2em 1.2em;font-size:12px;color:#444;margin:.2em 0 .6em}
#trust .warn b{color:#a40}#trust .caveat{color:#a40}
#decision{border:2px solid #333;padding:.4em .8em;margin-bottom:.6em}
#decision h2{margin:.2em 0;font-size:16px}#decision p.line{margin:.15em 0;font-size:13px}
#decision .failing,#decision .eta,#decision .others,#decision .audited{font-size:11px;color:#555}
#decision h1{font-size:20px;margin:.1em 0}
.badge{display:inline-block;min-width:4.5em;text-align:center;font-weight:bold;padding:0 .4em;
margin-right:.4em}
#scorecard table{font-size:12px}#scorecard caption{text-align:left;font-weight:bold;font-size:13px}
#scorecard p.recommend{font-weight:bold;margin:.2em 0}#scorecard p.holm{font-size:11px;color:#555}
"""
BADGE = {"go": "go", "wait": "wait", "reject": "reject"}


def _e(text: object) -> str:
    return html.escape(str(text))


def trust_html(facts: Sequence[Fact], caveats: Sequence[str]) -> str:
    """The strip: one span per fact (its detail as the tooltip), then the caveats."""
    items = "".join(
        f"<span class='fact{' warn' if f.warn else ''}' title='{_e(f.detail)}'>"
        f"<b>{_e(f.label)}</b>: {_e(f.value)}</span>"
        for f in facts
    )
    notes = "".join(f"<span class='caveat'>⚠ {_e(c)}</span>" for c in caveats)
    return f"<div id='trust'>{items}{notes}</div>"


def banner_html(types: Sequence[tuple[str, Sequence[Line]]], title: str = "") -> str:
    """Per decision type, a paragraph per candidate: badge, sentence, failing gates, ETA (``title`` first)."""
    parts = []
    for decision_type, lines in types:
        rows = "".join(
            f"<p class='line' data-candidate='{_e(ln.candidate)}'><span class='badge {BADGE[ln.decision]}'>"
            f"{_e(ln.decision.upper())}</span><span class='sentence'>{_e(ln.sentence)}</span>"
            + (
                f" <span class='failing'>Failing ({len(ln.failing)}): "
                + ", ".join(f"<span title='{_e(gap)}'>{_e(rule)}</span>" for rule, gap in ln.failing)
                + ".</span>"
                if ln.failing
                else ""
            )
            + f" <span class='eta'>Decision: {_e(ln.eta)}.</span>"
            + (f" <span class='audited'>{_e(ln.audited)}.</span>" if ln.audited else "")
            + (
                f" <span class='others'>Other identities of {_e(ln.name.split(' #')[0])} this week, "
                "judged apart: " + ", ".join(f"{_e(n)} {_e(d.upper())}" for n, d in ln.others) + ".</span>"
                if ln.others
                else ""
            )
            + "</p>"
            for ln in lines
        )
        parts.append(f"<h2>{_e(decision_type)}</h2>{rows}")
    return f"<div id='decision'>{title}{''.join(parts)}</div>"


def scorecard_html(cards: Sequence[Scorecard], family: int) -> str:
    """A table per challenger: champion, challenger, difference with interval, Holm p; the recommendation."""
    if not cards:
        return "<div id='scorecard'><p>One candidate per decision type: nothing to compare.</p></div>"
    tables = []
    for card in cards:
        champ, chall = card.names[card.champion], card.names[card.challenger]
        head = (
            f"<tr><th>{_e(card.decision_type)}</th><th>champion: {_e(champ)}</th>"
            f"<th>challenger: {_e(chall)}</th>"
            "<th>difference (challenger - champion) [95%]</th><th>Holm p</th></tr>"
        )
        body = "".join(
            f"<tr><td>{_e(r.metric)}</td><td>{_e(r.champion)}</td><td>{_e(r.challenger)}</td>"
            f"<td>{_e(r.shown_difference())}</td><td>{_e(r.shown_p())}</td></tr>"
            for r in card.rows
        )
        tables.append(
            f"<p class='recommend'>{_e(card.recommendation)}</p><table>{head}{body}</table>"
            f"<details><summary>identities compared</summary><span class='key'>{_e(card.champion)}</span> vs "
            f"<span class='key'>{_e(card.challenger)}</span>; {card.paired:,} decisions scored by both "
            "with an outcome</details>"
        )
    return f"<div id='scorecard'>{''.join(tables)}<p class='holm'>{_e(holm_note(family))}</p></div>"


def holm_note(family: int) -> str:
    """What the p-values are adjusted for."""
    return (
        f"p-values are Holm-adjusted over the {family} comparisons of this review (every challenger, "
        "decision type and compared quantity); a difference is called shown below 0.05. Agreement: paired "
        "Wald interval and McNemar's exact test; rates: Newcombe's interval and the two-proportion z-test; "
        "cost: delta method."
    )


def trend_html(trend: dict[str, dict[str, str]], weeks: Sequence[str]) -> str:
    """Verdict per candidate and week (earlier weeks without the policy: in-sample)."""
    if not trend:
        return ""
    head = "".join(f"<th>{_e(w)}</th>" for w in weeks)
    rows = "".join(
        f"<tr><td>{_e(name)}</td>"
        + "".join(
            f"<td class='{_e(by_week.get(w, ''))}'>{_e(by_week.get(w, '').upper() or '-')}</td>"
            for w in weeks
        )
        + "</tr>"
        for name, by_week in trend.items()
    )
    return (
        f"<details class='trend' open><summary>Verdict trend (earlier weeks judged on their own marts, "
        f"without the policy)</summary><table><tr><th>candidate</th>{head}</tr>{rows}</table></details>"
    )


def banner_markdown(types: Sequence[tuple[str, Sequence[Line]]]) -> list[str]:
    """The banner as Markdown lines."""
    out = ["## Decision", ""]
    for decision_type, lines in types:
        for ln in lines:
            gates = "; ".join(f"{rule} ({gap})" for rule, gap in ln.failing)
            failing = f" Failing ({len(ln.failing)}): {gates}." if ln.failing else ""
            out.append(
                f"- **{decision_type}** · {ln.name}: **{ln.decision.upper()}** — {ln.sentence}{failing} "
                f"Decision: {ln.eta}."
                + (f" {ln.audited}." if ln.audited else "")
                + (
                    f" Other identities, judged apart: {', '.join(f'{n} {d.upper()}' for n, d in ln.others)}."
                    if ln.others
                    else ""
                )
            )
    return [*out, ""]


def scorecard_markdown(cards: Sequence[Scorecard], family: int) -> list[str]:
    """The scorecards as Markdown tables."""
    if not cards:
        return []
    out = ["## Scorecard", ""]
    for card in cards:
        champ, chall = card.names[card.champion], card.names[card.challenger]
        out += [
            f"**{card.decision_type}**: {card.recommendation}",
            "",
            f"| quantity | champion: {champ} | challenger: {chall} | difference [95%] | Holm p |",
            "|---|---|---|---|---|",
            *(
                f"| {r.metric} | {r.champion} | {r.challenger} | {r.shown_difference()} | {r.shown_p()} |"
                for r in card.rows
            ),
            "",
        ]
    return [*out, holm_note(family), ""]
