"""The demo's audits: a simulated auditor draws the last week's audit sample and answers it.

Run as ``python -m semif_shadow.demo.audits`` (in the demo's environment, so an S3 root reads its keys):
the sample is drawn as ``semif-shadow audit sample`` draws it (``pipelines/audit_sample.py``, every
disagreement and a share of agreements); ``auditor-1`` answers every sampled ticket, ``auditor-2`` the
double audits, each with the ticket's truth (``Ticket.truth``; an out-of-scope action is "none of these")
except for a share ``--error-rate`` of answers, another team. Answers are records v1.2 audits written to the
records root.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from contracts.catalog import load_catalog
from contracts.records import NONE_OF_THESE, OUTCOMES, RECORD_VERSION, audit_outcome
from pipelines.audit_sample import Design, draw, population, week_bounds
from pipelines.audit_sample import write as write_sample
from pipelines.generate import write_whole
from pipelines.generate_audits import AUDITORS
from pipelines.storage import open_root

DESIGN = Design(disagreements=200, agreement_rate=0.25, seed=0, overlap=0.2)
"""The demo's weeks are small: a quarter of the agreements, so production's own errors are seen."""


def answers(sample: pa.Table, truth: dict[str, str], options: list[str], error_rate: float,
            seed: int) -> list[dict[str, object]]:
    """The audit rows (records v1.2) for every sampled decision, one per auditor."""
    rng = random.Random(seed)  # noqa: S311  (reproducible answers, not a secret)
    _, end = week_bounds(str(sample.column("week")[0]))
    at = min(end + dt.timedelta(days=1), dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    rows = []
    for r in sample.to_pylist():
        for auditor in AUDITORS[: 2 if r["double_audit"] else 1]:
            right = truth[r["decision_id"]]
            answer = right if right in options else NONE_OF_THESE
            if rng.random() < error_rate:
                answer = rng.choice([o for o in options if o != answer])
            rows.append({"record_version": RECORD_VERSION, "writer_id": "demo-auditor", **audit_outcome(
                sample_id=r["sample_id"], decision_id=r["decision_id"], decision_type=r["decision_type"],
                auditor=auditor, answer=answer, options=options, at=at)})
            at += dt.timedelta(seconds=30)
    return rows


def main() -> None:
    """Draw, answer and write; print how many answers were written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--s3-endpoint", default=None)
    parser.add_argument("--week", required=True)
    parser.add_argument("--type", dest="decision_type", required=True)
    parser.add_argument("--truth", type=Path, required=True, help="JSON: ticket id -> true outcome")
    parser.add_argument("--catalog", type=Path, required=True, help="the demo's catalog (the type's options)")
    parser.add_argument("--error-rate", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    root = open_root(args.root, args.s3_endpoint)
    sample = draw(population(root, args.week, args.decision_type), args.week, args.decision_type, DESIGN)
    if write_sample(root, sample, args.week, args.decision_type) is None:
        print(f"{args.week}: the sample exists already; not audited again")  # noqa: T201
        return
    truth = json.loads(args.truth.read_text(encoding="utf-8"))
    options = load_catalog(args.catalog).decision_types[args.decision_type].option_ids
    table = pa.Table.from_pylist(answers(sample, truth, options, args.error_rate, args.seed), schema=OUTCOMES)
    for day in sorted({at.date() for at in table.column("outcome_at").to_pylist()}):
        folder = root.join("outcomes", f"decision_type={args.decision_type}", f"date={day.isoformat()}")
        dates = pc.equal(pc.cast(table.column("outcome_at"), pa.date32()), pa.scalar(day))
        write_whole(root, folder, f"demo-auditor-{args.week}.parquet", table.filter(dates))
    rows = table.to_pylist()
    print(f"{args.week}: {len(rows)} audit answers to {sample.num_rows} sampled tickets")  # noqa: T201


if __name__ == "__main__":
    main()
