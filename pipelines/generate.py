"""Write realistic records (v1.2) with known properties (``synth.py``); ``generate_audits.py`` audits them.

Hive-partitioned and compressed like the sidecar's files (``contracts.records.COMPRESSION``).

Layout: ``<root>/{proposals,outcomes}/decision_type=<t>/date=<YYYY-MM-DD>/<writer_id>-<seq>.parquet``;
each file is written aside and renamed (locally) or uploaded whole (S3). The same seed gives the same
files. Used by the tests, ``bench/pipelines.py`` and the demo.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from contracts.records import (
    COMPRESSION,
    DEFAULT_CANDIDATE,
    OUTCOMES,
    PROPOSALS,
    RECORD_VERSION,
    TS,
)
from pipelines import synth
from pipelines.synth_identity import TEMPLATE_SHA256, identity_columns

if TYPE_CHECKING:
    from collections.abc import Iterator

    from pipelines.storage import Root

CHALLENGER = "challenger"
DAY_US = 24 * synth.HOUR_US
WEEK_US = 7 * DAY_US
WRITER = "gen-0001"


@dataclass(frozen=True)
class Plan:
    """What to generate: ``decisions`` spread evenly over ``weeks`` weeks from the Monday ``first_monday``."""

    decisions: int
    weeks: int = 5
    first_monday: dt.date = dt.date(2026, 10, 26)
    drift_week: int | None = 4
    seed: int = 7
    knobs: synth.Knobs = field(default_factory=synth.Knobs)


@dataclass(frozen=True)
class Draws:
    """The random draws of one chunk that both tables use."""

    ids: pa.Array
    received: np.ndarray
    status_idx: np.ndarray
    scored: np.ndarray
    p: np.ndarray
    model_idx: np.ndarray
    truth: np.ndarray
    """Production's outcome (an option index): the truth unless production erred."""
    intended: np.ndarray
    right: np.ndarray
    """The truth (an option index): what an auditor answers."""


MAX_CHUNK = 1_000_000
"""Decisions drawn at once. A week of one type with more is drawn in parts, each over the whole week: one
Arrow string array holds at most 2 GiB, and a part's model identities (~450 bytes each) stay far below."""


@dataclass(frozen=True)
class Chunk:
    """One part of one week of one decision type: where its rows start and how to draw them."""

    week: int
    spec: synth.DecisionSpec
    n: int
    first_id: int
    start_us: int
    part: int = 0
    """Which part of its week and type (0 for the first and for a week of at most ``MAX_CHUNK``)."""


def chunks(plan: Plan) -> Iterator[Chunk]:
    """The (week, decision type, part) chunks, with the global decision-id offset of each."""
    start = int(dt.datetime.combine(plan.first_monday, dt.time(), dt.UTC).timestamp()) * 1_000_000
    next_id = 0
    for week in range(plan.weeks):
        for spec in plan.knobs.types:
            n = round(plan.decisions * spec.share / plan.weeks)
            parts = max(1, -(-n // MAX_CHUNK))
            for part in range(parts):
                size = n * (part + 1) // parts - n * part // parts
                yield Chunk(week, spec, size, next_id, start + week * WEEK_US, part)
                next_id += size


def generate(root: Root, plan: Plan, truths: list[np.ndarray] | None = None) -> dict[str, int]:
    """Write every chunk's proposals and outcomes under ``root``; return row counts.

    ``truths`` receives each chunk's true option indices in decision-id order (for ``generate_audits.py``).
    """
    counts = {"proposals": 0, "outcomes": 0, "files": 0}
    challengers = [*([] if plan.knobs.challenger is None else [plan.knobs.challenger]),
                   *plan.knobs.more_challengers]
    for chunk in chunks(plan):
        part = [chunk.part] if chunk.part else []  # a first part draws what the whole week did before parts
        seed = [plan.seed, chunk.week, plan.knobs.types.index(chunk.spec), *part]
        rng = np.random.default_rng(seed)
        drifted = chunk.week == plan.drift_week
        proposals, outcomes, draws = draw_chunk(rng, chunk, plan.knobs, drifted)
        counts["files"] += write_partitioned(root, "proposals", proposals, "received_at", chunk)
        for n, spec in enumerate(challengers):
            challenger = challenger_proposals(rng, chunk, plan.knobs, draws, spec,
                                              CHALLENGER if n == 0 else f"{CHALLENGER}-{n + 1}")
            counts["files"] += write_partitioned(root, "proposals", challenger, "received_at", chunk,
                                                 writer=f"gen-{n + 2:04d}")
            counts["proposals"] += challenger.num_rows
        counts["files"] += write_partitioned(root, "outcomes", outcomes, "outcome_at", chunk)
        counts["proposals"] += proposals.num_rows
        counts["outcomes"] += outcomes.num_rows
        if truths is not None:
            truths.append(draws.right.astype(np.int16))
    return counts


def draw_chunk(
    rng: np.random.Generator,
    chunk: Chunk,
    knobs: synth.Knobs,
    drifted: bool,
) -> tuple[pa.Table, pa.Table, Draws]:
    """The proposals and outcomes of one chunk, and the draws behind them."""
    n, spec = chunk.n, chunk.spec
    received = chunk.start_us + np.sort(rng.integers(0, WEEK_US, n))
    ids = pc.binary_join_element_wise(
        "d-", pa.array(np.arange(chunk.first_id, chunk.first_id + n)).cast(pa.string()), ""
    )
    status_idx, scored = draw_statuses_for(rng, n, knobs)
    mix = synth.week_mix(spec, drifted, knobs.drift_mix_shift)
    intended = rng.choice(len(spec.options), size=n, p=mix)
    model_idx = rng.choice(len(knobs.models), size=n, p=[m.share for m in knobs.models])
    signal = np.array([m.signal for m in knobs.models])[model_idx]
    p = synth.probabilities(rng, intended, len(spec.options), signal)
    temperature = knobs.drift_temperature if drifted else knobs.temperature
    truth = synth.draw_outcomes(rng, p, temperature)
    truth = np.where(scored, truth, intended)  # production decides every decision, scored or not
    right = truth
    if knobs.production_error_rate > 0:  # no draw otherwise: records without errors stay as they were
        wrong = rng.random(n) < knobs.production_error_rate
        truth = np.where(wrong, (right + rng.integers(1, len(spec.options), n)) % len(spec.options), right)
    draws = Draws(ids, received, status_idx, scored, p, model_idx, truth, intended, right)
    return proposals_table(rng, chunk, knobs, draws), outcomes_table(rng, chunk, knobs, draws), draws


def challenger_proposals(  # noqa: PLR0913, PLR0917  (one candidate's draws and names)
    rng: np.random.Generator, chunk: Chunk, knobs: synth.Knobs, draws: Draws, spec: synth.ModelSpec,
    candidate: str = CHALLENGER,
) -> pa.Table:
    """A challenger's rows for the same decisions: its own statuses, fleet draws and probabilities."""
    status_idx, scored = draw_statuses_for(rng, chunk.n, knobs)
    p = synth.probabilities(rng, draws.intended, len(chunk.spec.options), np.full(chunk.n, spec.signal))
    mine = Draws(draws.ids, draws.received, status_idx, scored, p, np.zeros(chunk.n, np.int64), draws.truth,
                 draws.intended, draws.right)
    alone = replace(knobs, models=(spec,), identity_change=None)
    return proposals_table(rng, chunk, alone, mine, candidate)


def draw_statuses_for(rng: np.random.Generator, n: int, knobs: synth.Knobs) -> tuple[np.ndarray, np.ndarray]:
    """Status index per row (``len(knobs.not_scored)`` = scored) and the scored mask."""
    return synth.draw_statuses(rng, n, knobs.not_scored)


def proposals_table(
    rng: np.random.Generator,
    chunk: Chunk,
    knobs: synth.Knobs,
    draws: Draws,
    candidate: str = DEFAULT_CANDIDATE,
) -> pa.Table:
    """Assemble one candidate's proposals rows of one chunk in the records schema."""
    n, k = chunk.n, len(chunk.spec.options)
    ids, received, status_idx, scored, p = draws.ids, draws.received, draws.status_idx, draws.scored, draws.p
    statuses = np.array([s for s, _, _ in knobs.not_scored] + ["scored"], dtype=object)
    reasons = np.array([r for _, r, _ in knobs.not_scored] + [None], dtype=object)
    fleet_idx = rng.choice(len(knobs.fleets), size=n, p=[f.share for f in knobs.fleets])
    scorer_ms, total_ms = synth.draw_latency(
        rng, np.array([f.scorer_median_ms for f in knobs.fleets])[fleet_idx]
    )
    top = p.argmax(axis=1)
    options = pa.array(chunk.spec.options)
    no_row = pa.array(~scored)
    cols = {
        "record_version": pa.array(np.full(n, RECORD_VERSION, np.int16)),
        "decision_id": ids,
        "decision_type": pa.array([chunk.spec.name] * n) if n else pa.array([], pa.string()),
        "received_at": pa.array(received).cast(TS),
        "sampled": pa.array(reasons[status_idx] != "not_sampled"),
        "status": pa.array(statuses[status_idx], pa.string()),
        "reason": pa.array(reasons[status_idx], pa.string()),
        "option_ids": pa.ListArray.from_arrays(
            np.arange(n + 1, dtype=np.int32) * k, options.take(pa.array(np.tile(np.arange(k), n)))
        ),
        "probabilities": list_column(p, scored),
        "logits": list_column(np.log(p), scored),
        "proposal": pc.if_else(no_row, pa.scalar(None, pa.string()), options.take(pa.array(top))),
        "proposal_probability": pa.array(p.max(axis=1), mask=~scored),
        "total_ms": pa.array(np.where(scored, total_ms, np.nan), mask=~scored),
        "scorer_ms": pa.array(scorer_ms, mask=~scored),
        "queue_ms": pa.array(total_ms - scorer_ms - 2.0, mask=~scored),
    }
    changed = changed_rows(chunk, knobs.identity_change, received)
    cols |= identity_columns(knobs, fleet_idx, draws.model_idx, scored, changed)
    cols["candidate"] = pa.array([candidate] * n, pa.string())
    cols |= constant_columns(rng, n, scored)
    return pa.Table.from_pydict({f.name: cols[f.name] for f in PROPOSALS}, schema=PROPOSALS)


def list_column(values: np.ndarray, present: np.ndarray) -> pa.Array:
    """A list<double> column: each present row's vector, null elsewhere."""
    lengths = np.where(present, values.shape[1], 0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(
        pa.array(offsets), pa.array(values[present].ravel()), mask=pa.array(~present)
    )


def changed_rows(chunk: Chunk, change: synth.IdentityChange | None, received: np.ndarray) -> np.ndarray:
    """Rows received after the identity change (from its week's Thursday 00:00 UTC; none without one)."""
    if change is None or change.week != chunk.week:
        return np.zeros(received.size, dtype=bool)
    return np.asarray(received >= chunk.start_us + 3 * DAY_US)


def constant_columns(rng: np.random.Generator, n: int, scored: np.ndarray) -> dict[str, pa.Array]:
    """Prompt identity, token counts and writer columns."""
    prompt = rng.poisson(320, n).astype(np.int32)
    return {
        "prompt_builder": pa.array(["semif-v1"] * n, pa.string()),
        "template_sha256": pa.array([TEMPLATE_SHA256] * n, pa.string()),
        "prompt_tokens": pa.array(prompt, mask=~scored),
        "cached_tokens": pa.array((prompt * 0.7).astype(np.int32), mask=~scored),
        "truncated": pa.array(rng.random(n) < 0.001),
        "attempts": pa.array(np.where(scored, 1, 2).astype(np.int16)),
        "state_sha256": pa.array(["0" * 64] * n, pa.string()),
        "state": pa.nulls(n, pa.string()),
        "writer_id": pa.array([WRITER] * n, pa.string()),
        "config_sha256": pa.array(["cf" * 32] * n, pa.string()),
    }


def outcomes_table(rng: np.random.Generator, chunk: Chunk, knobs: synth.Knobs, draws: Draws) -> pa.Table:
    """Outcomes for a ``label_rate`` share of decisions.

    Some are ``review``, some repeated with an earlier row.
    """
    n, options = chunk.n, [*chunk.spec.options, synth.REVIEW_OPTION]
    ids, received, truth = draws.ids, draws.received, draws.truth
    labelled = rng.random(n) < knobs.label_rate
    truth = np.where(rng.random(n) < knobs.review_rate, len(options) - 1, truth)  # review: not an option
    delay = synth.outcome_delay_us(rng, n)
    dup = labelled & (rng.random(n) < knobs.duplicate_outcome_rate)
    rows = np.concatenate([np.flatnonzero(labelled), np.flatnonzero(dup)])
    value = np.concatenate([truth[labelled], (truth[dup] + 1) % len(chunk.spec.options)])
    at = np.concatenate([(received + delay)[labelled], (received + delay // 2)[dup]])
    order = np.argsort(at, kind="stable")
    rows, value, at = rows[order], value[order], at[order]
    m = rows.size
    return pa.Table.from_pydict(
        {
            "record_version": pa.array(np.full(m, RECORD_VERSION, np.int16)),
            "decision_id": ids.take(pa.array(rows)),
            "decision_type": pa.array([chunk.spec.name] * m, pa.string()),
            "outcome": pa.array(options).take(pa.array(value)),
            "outcome_at": pa.array(at).cast(TS),
            "source": pa.array(["api"] * m, pa.string()),
            "writer_id": pa.array([WRITER] * m, pa.string()),
            "in_options": pa.array(value < len(chunk.spec.options)),  # review is not one of the options
            "auditor": pa.nulls(m, pa.string()),
            "audit_sample": pa.nulls(m, pa.string()),
        },
        schema=OUTCOMES,
    )


def write_partitioned(  # noqa: PLR0913  (one file set's where and what)
    root: Root, dataset: str, table: pa.Table, time_column: str, chunk: Chunk, *, writer: str = WRITER
) -> int:
    """Write ``table`` (sorted by ``time_column``) as one file per UTC date; return the number of files."""
    days = pc.cast(pc.divide(table[time_column].cast(pa.int64()), DAY_US), pa.int64()).to_numpy()
    if days.size == 0:
        return 0
    starts = np.flatnonzero(np.concatenate([[True], days[1:] != days[:-1]]))
    ends = np.append(starts[1:], days.size)
    for seq, (lo, hi) in enumerate(zip(starts, ends, strict=True)):
        date = (dt.date(1970, 1, 1) + dt.timedelta(days=int(days[lo]))).isoformat()
        folder = root.join(dataset, f"decision_type={chunk.spec.name}", f"date={date}")
        name = f"{writer}-{chunk.week * 100_000 + chunk.part * 100 + seq:08d}.parquet"  # seq: days, < 100
        write_whole(root, folder, name, table.slice(lo, hi - lo))
    return int(starts.size)


def write_whole(root: Root, folder: str, name: str, table: pa.Table) -> None:
    """Write one file so that readers never see it partial: aside then renamed locally, one upload on S3."""
    root.fs.create_dir(folder, recursive=True)
    if not root.is_local:
        pq.write_table(table, f"{folder}/{name}", filesystem=root.fs, compression=COMPRESSION)
        return
    tmp = f"{folder}/.{name}.tmp"
    pq.write_table(table, tmp, filesystem=root.fs, compression=COMPRESSION)
    root.fs.move(tmp, f"{folder}/{name}")
