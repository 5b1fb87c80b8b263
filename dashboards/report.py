"""The weekly review as one self-contained HTML file (inline SVG, styles and script) and a Markdown summary.

Phases: ``review`` gathers evidence and verdicts per decision type and candidate, then the first screen
(trust strip, decision banner, scorecard, verdict trend: ``dashboards.screen``) and the charts;
``to_html`` and ``to_markdown`` only format what it returns. Nothing here reads the marts' columns
except through ``dashboards.marts``, ``dashboards.verdict.evidence`` and the first screen's modules.
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dashboards import charts, gallery
from dashboards.config import rules_applied
from dashboards.marts import CANDIDATE, Marts, identity_of, row_of
from dashboards.names import base_name, described, readable
from dashboards.screen import audits, banner, markup, trust
from dashboards.screen.calibration import calibration_of
from dashboards.screen.scorecard import adjust, representative, scorecards
from dashboards.verdict import correctness
from dashboards.verdict.decision import judge
from dashboards.verdict.evidence import gather

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

    from dashboards.charts.rendering import Chart
    from dashboards.config import ReviewConfig
    from dashboards.policies import Replayed
    from dashboards.screen.calibration import Calibration
    from dashboards.screen.scorecard import Scorecard
    from dashboards.verdict.decision import Verdict
    from dashboards.verdict.evidence import Evidence

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
    lines: list[banner.Line] = field(default_factory=list)
    """The decision banner's line of each candidate."""
    scorecards: list[Scorecard] = field(default_factory=list)
    """Champion against each challenger (p-values Holm-adjusted over the whole review)."""
    galleries: dict[str, list[gallery.Cell]] = field(default_factory=dict)
    """Each candidate's disagreement gallery, by confusion cell."""
    audited: list[correctness.Audited] = field(default_factory=list)
    """Audited correctness beside agreement with production (production first; empty without audits)."""

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
    facts: list[trust.Fact] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    family: int = 0
    """How many p-values the Holm adjustment ran over."""
    trend: dict[str, dict[str, str]] = field(default_factory=dict)
    """Readable candidate name -> week -> verdict."""
    weeks: list[str] = field(default_factory=list)


def review(marts: Marts, config: ReviewConfig, policies: Sequence[Replayed] = ()) -> Review:
    """Gather the verdicts, the first screen and the charts of every decision type in the review week.

    ``policies``: policies replayed on the week (``dashboards.policies``); each serves the go rule of its
    decision type and candidate identity.
    """
    replayed = {p.key: p for p in policies}
    sections: list[Section] = []
    cards: list[Scorecard] = []
    verdict_index: dict[tuple[str, str], Verdict] = {}
    keys: list[str] = []
    for decision_type in marts.decision_types():
        candidates = marts.candidates(decision_type)
        evidence = {
            c: gather(marts, decision_type, c, config.min_coverage, replayed.get((decision_type, c)))
            for c in candidates
        }
        verdicts = {c: judge(marts, decision_type, c, evidence[c], config) for c in candidates}
        verdict_index |= {(decision_type, c): v for c, v in verdicts.items()}
        keys += candidates
        cards += scorecards(marts, decision_type, evidence, config.champion)
        sections.append(
            Section(
                decision_type,
                verdicts,
                charts.build_all(marts, decision_type, policies),
                marts.identities(decision_type),
                marts.identity_changes(decision_type),
                {c: calibration_of(marts, decision_type, c) for c in candidates},
                _lines(marts, decision_type, verdicts, evidence, config),
                galleries={
                    c: gallery.gallery_of(marts, decision_type, c, config.gallery_max, config.audit_url)
                    for c in candidates
                },
                audited=correctness.audited(marts, decision_type),
            )
        )
    adjusted, family = adjust(cards, verdict_index)
    sections = [
        dataclasses.replace(s, scorecards=[c for c in adjusted if c.decision_type == s.decision_type])
        for s in sections
    ]
    facts, caveats = trust.strip(marts, policies, list(verdict_index.values()), keys)
    weeks = sorted(set(marts["funnel"]["week"]))
    return Review(
        marts.week, marts.source, config, sections, facts, caveats, family, trend(marts, config, weeks), weeks
    )


def _lines(
    marts: Marts,
    decision_type: str,
    verdicts: dict[str, Verdict],
    evidence: dict[str, Evidence],
    config: ReviewConfig,
) -> list[banner.Line]:
    """The banner's lines of a decision type: one per candidate name, the champion's first.

    Each name's line is its identity that scored most; its other identities are listed on it with their
    own verdicts.
    """
    names = readable(verdicts)
    frame = marts.of_week("agreement")
    frame = frame[frame["decision_type"] == decision_type]
    agreement = dict(zip(frame[CANDIDATE], frame["agreement"], strict=True))
    lines = []
    for name, key in sorted(
        representative(list(verdicts), evidence).items(), key=lambda i: (i[0] != config.champion, i[0])
    ):
        line = banner.line(
            key, names[key], verdicts[key], evidence[key], config, marts.week, agreement.get(key)
        )
        others = tuple(
            (names[k], str(v.decision))
            for k, v in sorted(verdicts.items())
            if k != key and base_name(k) == name
        )
        audited = marts.of_week_if_built("audited_difference")
        row = None if audited is None or audited.empty else row_of(audited, decision_type, key)
        lines.append(dataclasses.replace(
            line, others=others, audited=banner.audited_sentence(None if row is None else row.to_dict())))
    return lines


def trend(marts: Marts, config: ReviewConfig, weeks: Sequence[str]) -> dict[str, dict[str, str]]:
    """Each candidate's verdict in every week of the marts, each week judged on the marts up to it.

    The review week's policies are not replayed on earlier weeks: those verdicts are in-sample ones.
    """
    out: dict[tuple[str, str], dict[str, str]] = {}
    for week in weeks:
        frames = {k: f[f["week"] <= week] if "week" in f else f for k, f in marts.frames.items()}
        past = Marts(frames, week, marts.source)
        for decision_type in past.decision_types():
            for c in past.candidates(decision_type):
                v = judge(past, decision_type, c, gather(past, decision_type, c, config.min_coverage), config)
                out.setdefault((decision_type, c), {})[week] = str(v.decision)
    names = readable(c for _, c in out)
    several = len({t for t, _ in out}) > 1
    return {f"{t} · {names[c]}" if several else names[c]: by_week for (t, c), by_week in sorted(out.items())}


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
    names = readable(section.verdicts)
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
            f"{html.escape(names[candidate])}</h3><details><summary>identity: "
            f"{html.escape(described(candidate))}</summary><p>{html.escape(ident.label)}; model "
            f"{html.escape(ident.model_name)}, sha256 {html.escape(ident.sha256_prefix)}…, quantization "
            f"{html.escape(ident.quantization)} (key <code>{html.escape(candidate)}</code>)</p></details>"
            f"<p class='calibration'>"
            f"{html.escape(section.calibration[candidate].describe())}</p><ul>{reasons}</ul>"
            f"<details><summary>checks applied</summary><table>{checks}</table></details></div>"
        )
    return "".join(rows)


def _gallery(section: Section) -> str:
    names = readable(section.verdicts)
    blocks = "".join(gallery.to_html(names[c], cells) for c, cells in section.galleries.items())
    anchor = f"gallery-{html.escape(section.decision_type)}"
    return f"<h3 id='{anchor}'>Disagreement gallery</h3>{blocks}" if blocks else ""


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
        f"{_identities(s)}{audits.to_html(s.audited, readable(s.verdicts))}"
        f"{_verdicts(s)}{_gallery(s)}"
        f"<div class='charts'>{''.join(_figure(c) for c in s.charts)}</div></section>"
        for s in result.sections
    )
    title = f"<h1>Rollout review {html.escape(result.week)}</h1>"
    first = markup.banner_html([(s.decision_type, s.lines) for s in result.sections], title)
    cards = [c for s in result.sections for c in s.scorecards]
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>Rollout review "
        f"{result.week}</title><style>{STYLE}{markup.STYLE}</style></head><body>{first}"
        f"{markup.trust_html(result.facts, result.caveats)}{markup.scorecard_html(cards, result.family)}"
        f"{markup.trend_html(result.trend, result.weeks)}"
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
    strip = [f"{f.label}: {f.value}" for f in result.facts]
    lines = [f"# Rollout review {result.week}", "", " · ".join(strip), ""]
    lines += [f"> ⚠ {c}" for c in result.caveats] + [""]
    lines += markup.banner_markdown([(s.decision_type, s.lines) for s in result.sections])
    lines += markup.scorecard_markdown([c for s in result.sections for c in s.scorecards], result.family)
    lines += ["## Who was right (audits)", ""]
    for s in result.sections:
        lines += audits.to_markdown(s.decision_type, s.audited, readable(s.verdicts))
    lines += ["", "## Details", ""]
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
