"""The review's audits table: audited correctness beside agreement with production, in HTML and Markdown.

It draws the rows ``dashboards.verdict.correctness.audited`` reads from the marts; where the week has no
audit sample it says that agreement is with production, not with the truth.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dashboards.verdict.correctness import Audited


def _share_text(share: tuple[float, float, float] | None) -> str:
    return "" if share is None else f"{share[0]:.3f} [{share[1]:.3f}, {share[2]:.3f}]"


def _agreement_text(row: Audited) -> str:
    return "" if row.agreement is None else f"{row.agreement:.3f}"


def table_rows(rows: list[Audited], names: dict[str, str]) -> list[tuple[str, ...]]:
    """The section's rows as text: name, agreement with production, audited correctness, paired shares."""
    return [(names.get(r.key, r.key), _agreement_text(r), r.interval(), f"{r.audited:,}",
             _share_text(r.right_vs_wrong), _share_text(r.wrong_vs_right)) for r in rows]


HEADER = ("", "agreement with production", "audited correctness [95%]", "audited",
          "right where production was wrong", "wrong where production was right")


def to_html(rows: list[Audited], names: dict[str, str]) -> str:
    """The section: correctness beside agreement, or the sentence that there are no audits."""
    if not rows:
        return ("<p class='audits'>No audited sample this week: agreement is with production, not with the "
                "truth (<code>semif-shadow audit sample</code>).</p>")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                   for row in table_rows(rows, names))
    title = "Who was right: audited correctness beside agreement with production"
    return f"<div class='audits'><h3>{title}</h3><table><tr>{head}</tr>{body}</table></div>"


def to_markdown(decision_type: str, rows: list[Audited], names: dict[str, str]) -> list[str]:
    """The section's Markdown lines (one per candidate and production)."""
    if not rows:
        return [f"- {decision_type}: no audited sample this week (agreement is with production, not truth)"]
    return [f"- {decision_type} · {name}: audited correctness {correct} ({audits} audits) · agreement with "
            f"production {agree or 'n/a'}" for name, agree, correct, audits, _, _ in table_rows(rows, names)]
