"""The records generator's audits: draw each week's audit sample of generated records and answer it.

The sample is drawn from the written records exactly as ``semif-shadow audit sample`` draws it
(``pipelines/audit_sample.py``); each sampled decision is answered by ``auditor-1`` with the truth the
generator kept (``Draws.right``), and a ``double_audit`` one also by ``auditor-2``; each answer is another
option with probability ``AuditKnobs.error_rate``. Answers are records v1.2 audits (outcomes rows with
``source`` audit), written two days after the week ends.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from contracts.records import OUTCOMES, RECORD_VERSION, audit_outcome
from pipelines.audit_sample import Design, draw, population
from pipelines.audit_sample import write as write_sample
from pipelines.generate import DAY_US, WRITER, Plan, generate, write_whole
from pipelines.weeks import week_label

if TYPE_CHECKING:
    from pipelines.storage import Root
    from pipelines.synth import AuditKnobs

AUDITORS = ("auditor-1", "auditor-2")
"""The simulated auditors' ids: the first answers every sampled decision, the second the double audits."""
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def generate_audited(root: Root, plan: Plan, knobs: AuditKnobs) -> dict[str, int]:
    """``generate`` the records, then sample and answer each week (``audits``: the rows written)."""
    truths: list[np.ndarray] = []
    counts = generate(root, plan, truths)
    counts["audits"] = audit(root, plan, knobs, np.concatenate(truths) if truths else np.zeros(0, np.int16))
    return counts


def audit(root: Root, plan: Plan, knobs: AuditKnobs, truth: np.ndarray) -> int:
    """Sample and answer every week and type of ``plan``; ``truth[i]`` is decision ``d-<i>``'s option index.

    Returns the number of audit rows written.
    """
    design = Design(knobs.disagreements, knobs.agreement_rate, knobs.seed, knobs.overlap)
    rows = 0
    for week in range(plan.weeks):
        monday = plan.first_monday + dt.timedelta(weeks=week)
        label = week_label(monday)
        for spec in plan.knobs.types:
            sample = draw(population(root, label, spec.name), label, spec.name, design)
            if write_sample(root, sample, label, spec.name) is None:
                continue  # answered when it was drawn
            rng = np.random.default_rng([plan.seed, knobs.seed, week, plan.knobs.types.index(spec)])
            answers = answer(rng, sample, truth, list(spec.options), knobs)
            at = dt.datetime.combine(monday + dt.timedelta(days=9), dt.time(), dt.UTC)
            folder = root.join("outcomes", f"decision_type={spec.name}", f"date={at.date().isoformat()}")
            table = audit_rows(answers, spec.name, list(spec.options), int(at.timestamp()) * 1_000_000)
            write_whole(root, folder, f"{WRITER}-audit-{week:04d}.parquet", table)
            rows += table.num_rows
    return rows


def answer(rng: np.random.Generator, sample: pa.Table, truth: np.ndarray, options: list[str],
           knobs: AuditKnobs) -> list[tuple[str, str, str, str]]:
    """``(sample_id, decision_id, auditor, answer)`` for every answer to the sample."""
    ids = sample.column("decision_id").to_pylist()
    index = np.array([int(i.removeprefix("d-")) for i in ids], dtype=np.int64)
    out = []
    for n, name in enumerate(AUDITORS):
        mine = np.ones(len(ids), dtype=bool) if n == 0 else np.asarray(sample.column("double_audit"))
        value = truth[index].astype(np.int64)
        wrong = rng.random(len(ids)) < knobs.error_rate
        value = np.where(wrong, (value + rng.integers(1, len(options), len(ids))) % len(options), value)
        out += [(sid, did, name, options[v]) for sid, did, v, keep
                in zip(sample.column("sample_id").to_pylist(), ids, value, mine, strict=True) if keep]
    return out


def audit_rows(answers: list[tuple[str, str, str, str]], decision_type: str, options: list[str],
               at_us: int) -> pa.Table:
    """The answers as outcomes rows (``contracts.records.audit_outcome``) over a day from ``at_us``."""
    step = DAY_US // max(len(answers), 1)
    return pa.Table.from_pylist([
        {"record_version": RECORD_VERSION, "writer_id": WRITER, **audit_outcome(
            sample_id=sample_id, decision_id=decision_id, decision_type=decision_type, auditor=auditor,
            answer=value, options=options, at=EPOCH + dt.timedelta(microseconds=at_us + i * step))}
        for i, (sample_id, decision_id, auditor, value) in enumerate(answers)
    ], schema=OUTCOMES)
