"""What the simulations on the shipped path share: weeks, the fleet, one type-week of records, the CLI.

``bench/audited_sim.py`` and ``bench/verdict_sim.py`` write records as the sidecar does (the records
contract), one decision type per replicate, then drive the real commands on them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from click.testing import CliRunner

from contracts.records import OUTCOMES, RECORD_VERSION, TS
from pipelines import synth
from pipelines.generate import DAY_US, WRITER, Chunk, Draws, proposals_table, write_whole
from pipelines.storage import open_root
from semif_shadow.cli import main as cli

OPTIONS = ("a", "b", "c", "d", "e")
FIRST_MONDAY = dt.date(2026, 10, 5)
FLEET = (synth.Fleet("sagemaker", "cpu", "ml.c6i.8xlarge", 40.0, 1.0),)
MODEL = (synth.ModelSpec("gemma-3-270m", "a5fd3b62" + "0" * 56, "Q4_K_M", 3.2, 1.0),)
OUTCOME_DELAY_US = 3_600_000_000
"""Production's outcome arrives an hour after the decision."""


def week_label(week: int) -> str:
    """The ISO label of simulated week ``week`` (0-based)."""
    monday = FIRST_MONDAY + dt.timedelta(weeks=week)
    return f"{monday.isocalendar().year}-W{monday.isocalendar().week:02d}"


def invoke(args: list[str]) -> None:
    """``semif-shadow ARGS`` in this process; a non-zero exit raises with the command's output."""
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if result.exit_code:
        raise RuntimeError(f"semif-shadow {' '.join(args)}: {result.output}")


@dataclass(frozen=True)
class TypeWeek:
    """One decision type's decisions of one week, as option indices, with the probabilities scored."""

    name: str
    week: int
    first_id: int
    truth: np.ndarray
    production: np.ndarray
    """Production's outcome."""
    p: np.ndarray
    """Probabilities per decision and option; the proposal is the row's argmax."""


def write_type_week(root: str, tw: TypeWeek, rng: np.random.Generator) -> None:
    """Write the proposals and production's outcomes of ``tw`` (all received on the week's Wednesday)."""
    store = open_root(root)
    monday = FIRST_MONDAY + dt.timedelta(weeks=tw.week)
    start = int(dt.datetime.combine(monday + dt.timedelta(days=2), dt.time(), dt.UTC).timestamp()) * 10**6
    n = len(tw.truth)
    spec = synth.DecisionSpec(tw.name, OPTIONS, (0.2,) * len(OPTIONS), 1.0)
    knobs = synth.Knobs(types=(spec,), fleets=FLEET, models=MODEL, not_scored=())
    received = start + np.sort(rng.integers(0, DAY_US // 2, n))
    ids = pc.binary_join_element_wise(
        "d-", pa.array(np.arange(tw.first_id, tw.first_id + n)).cast(pa.string()), "")
    draws = Draws(ids, received, np.zeros(n, np.int64), np.ones(n, bool), tw.p, np.zeros(n, np.int64),
                  tw.production, tw.p.argmax(axis=1), tw.truth)
    table = proposals_table(rng, Chunk(tw.week, spec, n, tw.first_id, start), knobs, draws)
    date = (monday + dt.timedelta(days=2)).isoformat()
    write_whole(store, store.join("proposals", f"decision_type={tw.name}", f"date={date}"),
                f"{WRITER}-{tw.week:04d}.parquet", table)
    outcomes = pa.Table.from_pydict({
        "record_version": pa.array(np.full(n, RECORD_VERSION, np.int16)), "decision_id": ids,
        "decision_type": pa.array([tw.name] * n), "outcome": pa.array(OPTIONS).take(pa.array(tw.production)),
        "outcome_at": pa.array(received + OUTCOME_DELAY_US).cast(TS), "source": pa.array(["api"] * n),
        "writer_id": pa.array([WRITER] * n), "in_options": pa.array(np.ones(n, bool)),
        "auditor": pa.nulls(n, pa.string()), "audit_sample": pa.nulls(n, pa.string())}, schema=OUTCOMES)
    write_whole(store, store.join("outcomes", f"decision_type={tw.name}", f"date={date}"),
                f"{WRITER}-{tw.week:04d}.parquet", outcomes)
