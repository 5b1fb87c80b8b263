"""The demo's closing table: one line per candidate, from the review week's marts and the review.

| column | from |
|---|---|
| scored | ``funnel.scored`` (the candidate's scored decisions of the week) |
| agreement [95% CI] | ``agreement.agreement`` on ``agreement.labelled`` decisions, Wilson score interval |
| ECE [95% CI] | ``calibration.ece_debiased``, ``ece_low``..``ece_high`` |
| p95 ms | the 95th percentile of the week's ``scorer_ms`` in the candidate's proposals rows |
| $/accepted | ``paired.usd_per_1k`` / 1000 x ``selective.scored`` / ``selective.accepted`` |
| verdict | the review's summary (``review.md``): go / wait / reject |
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

from dashboards.intervals import proportion_interval
from dashboards.marts import identity_of
from semif_shadow.demo.catalog import CANDIDATES, DECISION_TYPE

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa

@dataclass(frozen=True)
class Line:
    """One candidate's numbers."""

    candidate: str
    model_key: str
    scored: int
    labelled: int
    agreement: float | None
    agreement_ci: tuple[float, float] | None
    ece: float | None
    ece_ci: tuple[float, float] | None
    p95_ms: float | None
    usd_per_accepted: float | None
    verdict: str


def mart(marts: Path, name: str, week: str) -> list[dict[str, Any]]:
    """The week's rows of one mart for the demo's decision type."""
    path = marts / name / f"week={week}" / "part-0.parquet"
    if not path.is_file():
        return []
    return [r for r in pq.read_table(path).to_pylist() if r["decision_type"] == DECISION_TYPE]


def read_proposals(root: str, s3_endpoint: str | None, aws: dict[str, str] | None = None) -> pa.Table:
    """The columns the table needs from every proposals file under ``root`` (on S3 with ``aws``'s keys)."""
    import pyarrow.dataset as ds  # noqa: PLC0415
    from pyarrow import fs  # noqa: PLC0415

    columns = ["candidate", "status", "scorer_ms", "received_at"]
    if root.startswith("s3://"):
        keys = aws or {}
        s3 = fs.S3FileSystem(endpoint_override=s3_endpoint, region="us-east-1",
                             access_key=keys.get("AWS_ACCESS_KEY_ID"),
                             secret_key=keys.get("AWS_SECRET_ACCESS_KEY"))
        return ds.dataset(f"{root[5:]}/proposals", filesystem=s3, format="parquet").to_table(columns=columns)
    return ds.dataset(f"{root}/proposals", format="parquet").to_table(columns=columns)


def p95_by_candidate(proposals: pa.Table, week: str) -> dict[str, float]:
    """The 95th percentile (linear, as the latency mart) of ``scorer_ms`` per candidate in ``week``."""
    scored = proposals.filter(pc.equal(proposals["status"], "scored"))
    scored = scored.filter(pc.equal(_weeks(scored), week))
    out = {}
    for candidate in CANDIDATES:
        rows = scored.filter(pc.equal(scored["candidate"], candidate))
        if rows.num_rows:
            out[candidate] = float(pc.quantile(rows["scorer_ms"], q=0.95, interpolation="linear")[0].as_py())
    return out


def _weeks(rows: pa.Table) -> pa.Array:
    years = pc.iso_year(rows["received_at"])
    weeks = pc.iso_week(rows["received_at"])
    return pc.binary_join_element_wise(pc.cast(years, "string"),
                                       pc.utf8_lpad(pc.cast(weeks, "string"), 2, "0"), "-W")


def verdicts(review_md: str, keys: dict[str, str]) -> dict[str, str]:
    """Each candidate's verdict from the review's Markdown summary (matched by its identity label)."""
    out = {}
    for candidate, key in keys.items():
        label = identity_of(key).label  # the review's own label of the key
        found = re.search(rf"\*\*{DECISION_TYPE}\*\* · {re.escape(label)}: \*\*(\w+)\*\*", review_md)
        out[candidate] = found.group(1).lower() if found else "see report"
    return out


def lines(marts: Path, week: str, review_md: str, p95: dict[str, float]) -> list[Line]:
    """One `Line` per candidate."""
    keys = {r["candidate"]: r["model_key"] for r in mart(marts, "identities", week)}
    funnel = {r["candidate"]: r for r in mart(marts, "funnel", week)}
    agreement = {r["model_key"]: r for r in mart(marts, "agreement", week)}
    calibration = {r["model_key"]: r for r in mart(marts, "calibration", week)}
    selective = {r["model_key"]: r for r in mart(marts, "selective", week)}
    usd = {}
    for r in mart(marts, "paired", week):
        if r["model_key_a"] == "*" and r["model_key_b"] == "*":
            usd[r["candidate_a"]], usd[r["candidate_b"]] = r["usd_per_1k_a"], r["usd_per_1k_b"]
    verdict = verdicts(review_md, keys)
    out = []
    for candidate in CANDIDATES:
        key = keys.get(candidate, "")
        a, c, s = agreement.get(key, {}), calibration.get(key, {}), selective.get(key, {})
        labelled = int(a.get("labelled") or 0)
        agrees = a.get("agreement")
        ece = c.get("ece_debiased")
        per_1k, accepted = usd.get(candidate), int(s.get("accepted") or 0)
        scored = int(s.get("scored") or 0)
        cost = per_1k / 1000 * scored / accepted if per_1k is not None and accepted else None
        out.append(Line(
            candidate, key, int(funnel.get(candidate, {}).get("scored") or 0), labelled, agrees,
            proportion_interval(agrees * labelled, labelled) if agrees is not None else None, ece,
            (c["ece_low"], c["ece_high"]) if ece is not None else None, p95.get(candidate), cost,
            verdict.get(candidate, "see report")))
    return out


def _ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None or ci is None:
        return "-"
    return f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def table(rows: list[Line]) -> str:
    """The terminal table."""
    header = ("candidate", "scored", "agreement [95% CI]", "ECE [95% CI]", "p95 ms", "$/accepted", "verdict")
    body = [(r.candidate, str(r.scored), _ci(r.agreement, r.agreement_ci), _ci(r.ece, r.ece_ci),
             "-" if r.p95_ms is None else f"{r.p95_ms:.0f}",
             "-" if r.usd_per_accepted is None else f"{r.usd_per_accepted:.5f}", r.verdict) for r in rows]
    widths = [max(len(x[i]) for x in (header, *body)) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" if i in {0, 6} else f"{{:>{w}}}" for i, w in enumerate(widths))
    rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
    return "\n".join(line.rstrip() for line in [fmt.format(*header), rule, *(fmt.format(*b) for b in body)])


def policy_line(policy: dict[str, Any]) -> str:
    """The out-of-sample policy in one line (``pipelines policy replay``'s JSON)."""
    head = (f"\nOut of sample: {policy['candidate']}'s thresholds chosen on {policy['chosen_on']}, "
            f"replayed on {policy.get('week')}: ")
    if "error" in policy:
        return head + f"not available ({policy['error']})"
    if not policy.get("accepted"):
        return head + f"no decision accepted, all go to {policy.get('abstain_action')} (too few labels yet)"
    coverage, precision = policy.get("coverage") or 0, policy.get("precision") or 0
    low, high = policy.get("precision_low") or 0, policy.get("precision_high") or 1
    return head + (f"coverage {coverage:.0%}, precision {precision:.2f} [{low:.2f}, {high:.2f}] "
                   f"on {policy.get('accepted_labelled')} accepted, labelled decisions")
