"""The trust strip: what the numbers rest on, in a few facts a meeting can check at a glance.

``as_of`` and maturity (the marts' own ``as_of`` and ``mature`` columns), the label rate, the audits (the
``correctness`` mart, where it exists), where each policy came from (file, sha256, the week it was chosen
on), the health checks the verdicts applied, and caveats: quantities the marts cannot split between
candidates (one scorer serving several candidates shares its p99 and cost), in-sample precision.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dashboards.marts import CANDIDATE_NAME, identity_of
from dashboards.names import base_name
from pipelines.sqlmodels import PRODUCTION

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dashboards.marts import Marts
    from dashboards.policies import Replayed
    from dashboards.verdict.decision import Verdict


@dataclass(frozen=True)
class Fact:
    """One item of the strip: a short label, its value, and a longer explanation (the tooltip)."""

    label: str
    value: str
    detail: str = ""
    warn: bool = False


def maturity(marts: Marts) -> Fact:
    """Final when every mart row of the week is mature, else provisional."""
    funnel = marts.of_week("funnel")
    if "mature" not in funnel:
        return Fact("maturity", "unknown", "these marts carry no maturity flag")
    mature = bool(funnel["mature"].all())
    return Fact(
        "maturity",
        "final" if mature else "provisional",
        "every outcome of the week had time to arrive"
        if mature
        else "outcomes of the week are still arriving: late outcomes are the hard cases; no GO on it",
        warn=not mature,
    )


def as_of(marts: Marts) -> Fact:
    """The instant the marts' outcomes were cut at."""
    funnel = marts.of_week("funnel")
    value = str(funnel["as_of"].max())[:16] if "as_of" in funnel and not funnel.empty else "unknown"
    return Fact("as of", value, "outcomes known at this instant")


def label_rate(marts: Marts) -> Fact:
    """Labelled / scored over the week, per candidate name."""
    funnel = marts.of_week("funnel")
    per = funnel.groupby(CANDIDATE_NAME)[["labelled", "scored"]].sum()
    text = ", ".join(f"{name} {r.labelled / r.scored:.0%}" for name, r in per.iterrows() if r.scored)
    return Fact("label rate", text or "n/a", "scored decisions with a production outcome this week")


def audits(marts: Marts) -> Fact:
    """How many decisions were audited this week (the ``correctness`` mart)."""
    frame = marts.frames.get("correctness")
    if frame is None or frame.empty or "audited" not in frame:
        return Fact("audits", "none", "no audited sample this week: agreement is with production, not truth")
    week = frame[frame["week"] == marts.week]
    key = "candidate" if "candidate" in week else None
    rows = week[week[key] == PRODUCTION] if key else week
    audited = int(rows["audited"].max()) if not rows.empty else 0
    return Fact(
        "audits", f"{audited:,} decisions" if audited else "none", "audited correctness beside agreement"
    )


def provenance(policies: Sequence[Replayed]) -> Fact:
    """Each policy's file, sha256 and the week it was chosen on."""
    if not policies:
        return Fact(
            "policy",
            "none given",
            "precision and coverage are the week's own (in-sample); go needs --policy",
            warn=True,
        )
    text = "; ".join(
        f"{base_name(p.policy.model_key)}: {p.path or 'policy'} sha256 {p.sha256[:12]} "
        f"chosen on {p.policy.chosen_on}"
        for p in policies
    )
    return Fact("policy", text, "semif.policy/v1 files replayed on the review week")


def health(verdicts: Sequence[Verdict]) -> Fact:
    """The health checks the verdicts applied, and which failed."""
    checks = [k for v in verdicts for k in v.checks if k.kind == "health"]
    if not checks:
        return Fact("health checks", "none applied by these rules")
    failed = sorted({k.rule for k in checks if not k.passed})
    return Fact(
        "health checks",
        f"{len(failed)} failing: {', '.join(failed)}" if failed else f"{len({k.rule for k in checks})} pass",
        "; ".join(sorted({f"{k.rule}: {k.detail}" for k in checks})),
        warn=bool(failed),
    )


def shared_scorers(candidates: Sequence[str]) -> list[str]:
    """Caveats for candidates whose model, quantization and device are the same: one scorer serves them."""
    groups: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for key in candidates:
        ident = identity_of(key)
        groups[ident.model_name, ident.quantization, ident.device].add(base_name(key))
    return [
        f"p99 and cost are shared by {' and '.join(sorted(names))} "
        f"(one scorer: {'/'.join(p for p in spec if p)})"
        for spec, names in sorted(groups.items())
        if len(names) > 1
    ]


def strip(
    marts: Marts, policies: Sequence[Replayed], verdicts: Sequence[Verdict], candidates: Sequence[str]
) -> tuple[list[Fact], list[str]]:
    """The strip's facts and caveats."""
    facts = [
        as_of(marts),
        maturity(marts),
        label_rate(marts),
        audits(marts),
        provenance(policies),
        health(verdicts),
    ]
    caveats = shared_scorers(candidates)
    caveats += sorted({k.detail for v in verdicts for k in v.warnings})
    caveats.append(
        "p99 is the decision type's slowest fleet: the marts keep latency per fleet, not per candidate"
    )
    return facts, caveats
