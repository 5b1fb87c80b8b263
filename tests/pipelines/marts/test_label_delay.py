"""label_delay mart: each decision's first outcome report, counted once, against a pandas reference.

Generated decisions scored by one candidate, by two and by four (most decisions then have a row each),
with extra rows written beside the generated ones: an earlier report from the proxy for some decisions
(the first report and its source count, not the latest), the same instant from both sources for others
(the first by name) and an audit before any report (never counted); with several candidates also a
second, later row of some decisions (the earliest receipt counts). The reference reads the files with
pyarrow and computes every quantile with numpy (linear interpolation, as ``quantile_cont``).
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from contracts.records import OUTCOMES, PROPOSALS
from pipelines import synth
from pipelines.generate import Plan, generate
from pipelines.settings import PipelineSettings
from pipelines.storage import open_root
from pipelines.weeks import window
from tests.pipelines.harness import AS_OF, mart, run_window
from tests.pipelines.reference import read

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tests.pipelines.harness import Computed

PLANS = {
    "two candidates": Plan(
        decisions=6_000, weeks=2, drift_week=None, seed=21, knobs=synth.Knobs(challenger=synth.CHALLENGER)
    ),
    "one candidate": Plan(decisions=6_000, weeks=2, drift_week=None, seed=22),
    "four candidates": Plan(decisions=3_000, weeks=2, drift_week=None, seed=23, knobs=synth.Knobs(
        challenger=synth.CHALLENGER, more_challengers=synth.MORE_CHALLENGERS)),
}
FIRST, LAST = "2026-W44", "2026-W45"
WRITER = "gen-0009"


def write_by_date(root: Path, dataset: str, table: pa.Table, column: str) -> None:
    """Write ``table`` into ``dataset``'s partitions, each row under the date of its ``column``."""
    frame = table.to_pandas()
    schema = PROPOSALS if dataset == "proposals" else OUTCOMES
    for (decision_type, day), part in frame.groupby([frame.decision_type, frame[column].dt.date]):
        folder = root / dataset / f"decision_type={decision_type}" / f"date={day}"
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pandas(part, schema=schema, preserve_index=False),
                       folder / f"{WRITER}-{dataset}.parquet")


def add_rows(root: Path, *, later_rows: bool) -> None:
    """Earlier proxy reports, same-instant reports, audits (and ``later_rows``) beside the generated rows."""
    outcomes = read(root, "outcomes")
    if later_rows:
        later = read(root, "proposals").iloc[::40].copy()
        later["received_at"] += pd.Timedelta(minutes=30)
        write_by_date(root, "proposals", pa.Table.from_pandas(later, preserve_index=False), "received_at")
    extra = []
    for every, offset, source in ((7, pd.Timedelta(hours=-2), "proxy"), (11, pd.Timedelta(0), "proxy"),
                                  (13, pd.Timedelta(hours=-5), "audit")):
        rows = outcomes.iloc[::every].copy()
        rows["outcome_at"] += offset
        rows["source"] = source
        extra.append(rows)
    added = pd.concat(extra, ignore_index=True)
    write_by_date(root, "outcomes", pa.Table.from_pandas(added, preserve_index=False), "outcome_at")


@pytest.fixture(scope="module", params=sorted(PLANS))
def computed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Computed, Path]]:
    """The records with the added rows, and every mart over them."""
    root = tmp_path_factory.mktemp("label_delay_records")
    generate(open_root(str(root)), PLANS[request.param])
    add_rows(root, later_rows=request.param != "one candidate")
    run = run_window(root, None, first=FIRST, last=LAST)
    yield run, root
    run.con.close()


def reference(root: Path) -> pd.DataFrame:
    """The mart's rows computed from the files: first report per decision, earliest receipt, quantiles."""
    settings = PipelineSettings()
    span = window(FIRST, LAST, settings.reference_weeks, AS_OF, dt.timedelta(days=settings.maturity_lag_days))
    start, end = pd.Timestamp(span.read_start), pd.Timestamp(span.read_end)
    proposals = read(root, "proposals")
    proposals = proposals[(proposals.received_at >= start) & (proposals.received_at < end)]
    received = proposals.groupby(["decision_type", "decision_id"]).received_at.min().reset_index()
    outcomes = read(root, "outcomes")
    outcomes["source"] = outcomes.source.fillna("")
    outcomes = outcomes[(outcomes.source != "audit") & (outcomes.outcome_at >= start)
                        & (outcomes.outcome_at <= pd.Timestamp(AS_OF))]
    first = outcomes.sort_values(["outcome_at", "source"]).drop_duplicates(["decision_type", "decision_id"])
    both = received.merge(first[["decision_type", "decision_id", "outcome_at", "source"]],
                          on=["decision_type", "decision_id"])
    both["week_start"] = both.received_at.dt.tz_convert("UTC").dt.tz_localize(None).dt.to_period("W-SUN") \
        .dt.start_time.dt.date
    targets = {(start + pd.Timedelta(weeks=settings.reference_weeks + i)).date() for i in range(2)}
    both = both[both.week_start.isin(targets)]
    both["hours"] = (both.outcome_at - both.received_at).dt.total_seconds() / 3600
    rows = []
    for (decision_type, week_start, source), group in both.groupby(["decision_type", "week_start", "source"]):
        q = np.percentile(group.hours.to_numpy(), [50, 90, 99])
        rows.append({"decision_type": decision_type, "week_start": week_start, "source": source,
                     "outcomes": len(group), "p50_hours": q[0], "p90_hours": q[1], "p99_hours": q[2]})
    return pd.DataFrame(rows)


def test_label_delay_equals_the_pandas_reference(computed: tuple[Computed, Path]) -> None:
    """Every row's count and p50/p90/p99 hours equal the reference's; the same rows on both sides."""
    run, root = computed
    keys = ["decision_type", "week_start", "source"]
    expected = reference(root).set_index(keys).sort_index()
    got = pd.DataFrame(mart(run, "label_delay")).set_index(keys).sort_index()
    assert list(got.index) == list(expected.index)
    assert set(expected.index.get_level_values("source")) == {"api", "proxy"}
    assert (got.outcomes == expected.outcomes).all()
    for column in ("p50_hours", "p90_hours", "p99_hours"):
        np.testing.assert_allclose(got[column].to_numpy(), expected[column].to_numpy(), rtol=1e-9, atol=1e-9)
