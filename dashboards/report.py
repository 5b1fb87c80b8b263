"""The weekly review as one self-contained HTML file (inline SVG, styles and script) and a Markdown summary.

Phases: ``review`` gathers evidence and verdicts per decision type and candidate, then the charts;
``to_html`` and ``to_markdown`` only format what it returns. Nothing here reads the marts' columns
except through ``dashboards.marts`` and ``dashboards.evidence``.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards import charts
from dashboards.config import rules_applied
from dashboards.evidence import calibration_of, gather
from dashboards.marts import identity_of
from dashboards.verdict import decide

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from dashboards.config import ReviewConfig
    from dashboards.evidence import Calibration
    from dashboards.marts import Marts
    from dashboards.policies import Replayed
    from dashboards.rendering import Chart
    from dashboards.verdict import Verdict

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:12px}
.go{background:#c8f0c8}.wait{background:#fff1b8}.reject{background:#f8c8c8}
.changed{color:#a40}.verdict{font-weight:bold;text-transform:uppercase;padding:2px 8px}
.charts{display:flex;flex-wrap:wrap;gap:1em}figure.chart{margin:0;border:1px solid #eee;padding:.5em}
figcaption{font-size:12px;color:#555}details{font-size:12px}
"""
SCRIPT = """
document.querySelectorAll('figure.chart').forEach(function (f) {
  var svg = f.querySelector('svg');
  f.dataset.rendered = svg && svg.getBoundingClientRect().width > 0 ? 'yes' : 'no';
});
document.body.dataset.ready = 'yes';
"""


@dataclass(frozen=True)
class Section:
    """One decision type: the verdict per candidate and the charts."""

    decision_type: str
    verdicts: dict[str, Verdict]
    charts: list[Chart]
    identities: pd.DataFrame
    """The identities scored in the week (one grouping key each)."""
    changes: pd.DataFrame
    """Identity changes in the week, one row per changed field."""
    calibration: dict[str, Calibration]
    """Each candidate's calibration in the week (the ECE, and the one-hot rows it leaves out)."""

    def changed(self, candidate: str) -> list[str]:
        """Lines saying how ``candidate``'s identity changed this week (it is the old or the new one)."""
        sha = identity_of(candidate).sha256_prefix
        rows = self.changes[
            self.changes["from_identity_sha256"].str.startswith(sha)
            | self.changes["to_identity_sha256"].str.startswith(sha)
        ]
        return [
            f"{r.candidate_name}: {r.field} {r.before} → {r.after} at {r.changed_at} "
            f"({r.from_identity_sha256[:12]} → {r.to_identity_sha256[:12]}); "
            "reported per identity, not blended"
            for r in rows.itertuples()
        ]


@dataclass(frozen=True)
class Review:
    """Everything the report shows."""

    week: str
    source: str
    config: ReviewConfig
    sections: list[Section]


def review(marts: Marts, config: ReviewConfig, policies: Sequence[Replayed] = ()) -> Review:
    """Gather the verdicts and render the charts of every decision type in the review week.

    ``policies``: policies replayed on the week (``dashboards.policies``); each serves the go rule of its
    decision type and candidate identity.
    """
    replayed = {p.key: p for p in policies}
    sections = []
    for decision_type in marts.decision_types():
        candidates = marts.candidates(decision_type)
        verdicts = {
            c: decide(
                gather(marts, decision_type, c, config.min_coverage, replayed.get((decision_type, c))), config
            )
            for c in candidates
        }
        sections.append(
            Section(
                decision_type,
                verdicts,
                charts.build_all(marts, decision_type, policies),
                marts.identities(decision_type),
                marts.identity_changes(decision_type),
                {c: calibration_of(marts, decision_type, c) for c in candidates},
            )
        )
    return Review(marts.week, marts.source, config, sections)


def _table(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
        for row in frame.itertuples(index=False)
    )
    return f"<table><tr>{head}</tr>{rows}</table>"


def _fmt(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _identities(section: Section) -> str:
    changes = "".join(f"<li>{html.escape(line)}</li>" for line in section.changed(""))
    headline = (
        f"<p class='changed'>Identity changed this week:</p><ul>{changes}</ul>"
        if changes
        else "<p>No identity change this week.</p>"
    )
    table = _table(section.identities) if not section.identities.empty else ""
    return f"{headline}<details><summary>identities this week</summary>{table}</details>"


def _verdicts(section: Section) -> str:
    rows = []
    for candidate, v in section.verdicts.items():
        ident = identity_of(candidate)
        changed = "".join(
            f"<li class='changed'>{html.escape(line)}</li>" for line in section.changed(candidate)
        )
        reasons = changed + "".join(f"<li>{html.escape(r)}</li>" for r in v.reasons)
        checks = "".join(
            f"<tr><td>{'✔' if k.passed else '✘'}</td><td>{html.escape(k.rule)}</td>"
            f"<td>{html.escape(k.detail)}</td></tr>"
            for k in v.checks
        )
        rows.append(
            f"<div class='candidate'><h3><span class='verdict {v.decision}'>{v.decision}</span> "
            f"{html.escape(ident.label)}</h3><p>identity: model {html.escape(ident.model_name)}, sha256 "
            f"{html.escape(ident.sha256_prefix)}…, quantization {html.escape(ident.quantization)} "
            f"(key <code>{html.escape(candidate)}</code>)</p><p class='calibration'>"
            f"{html.escape(section.calibration[candidate].describe())}</p><ul>{reasons}</ul>"
            f"<details><summary>checks applied</summary><table>{checks}</table></details></div>"
        )
    return "".join(rows)


def _figure(chart: Chart) -> str:
    return (
        f"<figure class='chart' data-chart='{chart.name}'>{chart.svg}<figcaption>"
        f"{html.escape(chart.title)}: {html.escape(chart.sample)}</figcaption>"
        f"<details><summary>numbers</summary>{_table(chart.table)}</details></figure>"
    )


def to_html(result: Review) -> str:
    """The self-contained HTML report."""
    rules = "".join(
        f"<tr><td>{k}</td><td>{html.escape(v)}</td><td>{html.escape(d)}</td></tr>"
        for k, v, d in rules_applied(result.config)
    )
    body = "".join(
        f"<section id='{html.escape(s.decision_type)}'><h2>{html.escape(s.decision_type)}</h2>"
        f"{_identities(s)}{_verdicts(s)}"
        f"<div class='charts'>{''.join(_figure(c) for c in s.charts)}</div></section>"
        for s in result.sections
    )
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Rollout review "
        f"{result.week}</title><style>{STYLE}</style></head><body><h1>Rollout review {result.week}</h1>"
        f"<p>marts: <code>{html.escape(result.source)}</code>. Every number is per candidate identity "
        f"(<code>candidate model/quantization/device/normalization #sha256</code>); hover a mark for its "
        f"values.</p>{body}"
        f"<h2>Rules applied</h2><table><tr><th>rule</th><th>value</th><th>meaning</th></tr>{rules}</table>"
        f"<script>{SCRIPT}</script></body></html>"
    )


def to_markdown(result: Review) -> str:
    """A short summary for a ticket or chat message: one line per decision type and candidate.

    Each line: the verdict, its first reason, and the candidate's calibration (the ECE, and how many
    one-hot rows it leaves out).
    """
    lines = [f"# Rollout review {result.week}", ""]
    for s in result.sections:
        lines += [f"- identity change in {s.decision_type}: {line}" for line in s.changed("")]
        for candidate, v in s.verdicts.items():
            more = f" (+{len(v.reasons) - 1} more)" if len(v.reasons) > 1 else ""
            lines.append(
                f"- **{s.decision_type}** · {identity_of(candidate).label}: **{v.decision.upper()}**"
                f" — {v.reasons[0]}{more} · {s.calibration[candidate].describe()}"
            )
    lines += [
        "",
        (
            f"Marts: `{result.source}`; rules: precision target {result.config.precision_target}, "
            f"min labelled {result.config.min_labelled}, min coverage {result.config.min_coverage}."
        ),
    ]
    return "\n".join(lines) + "\n"
