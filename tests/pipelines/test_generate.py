"""The generator writes records exactly.

Hive partitions, the schema from shadow.records, known properties.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from contracts.records import OUTCOMES, PROPOSALS, STATUSES
from pipelines import generate as generate_module
from pipelines.generate import Plan, chunks, generate
from pipelines.storage import open_root

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

    from tests.pipelines.reference import Records

LAYOUT = re.compile(
    r"^(proposals|outcomes)/decision_type=([a-z_]+)/date=(\d{4}-\d{2}-\d{2})/gen-0001-\d{8}\.parquet$"
)


def test_files_follow_the_records_v1_layout_and_schema(records_root: Path) -> None:
    """Every file sits at <dataset>/decision_type=<t>/date=<d>/<writer>-<seq>.parquet.

    Has the records schema, and holds only rows of its partition's type and UTC date; no temporary file is
    left behind.
    """
    files = sorted(p for p in records_root.rglob("*") if p.is_file())
    assert len(files) > 100
    for path in files:
        match = LAYOUT.match(path.relative_to(records_root).as_posix())
        assert match is not None, path
        dataset, decision_type, date = match.groups()
        table = pq.read_table(path)
        assert table.schema.equals(PROPOSALS if dataset == "proposals" else OUTCOMES)
        time_column = "received_at" if dataset == "proposals" else "outcome_at"
        assert {d.date().isoformat() for d in table[time_column].to_pylist()} == {date}
        assert set(table["decision_type"].to_pylist()) == {decision_type}


def test_the_same_seed_writes_the_same_records(tmp_path: Path) -> None:
    """Generation is deterministic: two roots from one plan hold equal tables."""
    plan = Plan(decisions=2_000, weeks=2, seed=5)
    for name in ("a", "b"):
        generate(open_root(str(tmp_path / name)), plan)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.parquet"))
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.parquet"))
    for rel in files:
        assert pq.read_table(tmp_path / "a" / rel).equals(pq.read_table(tmp_path / "b" / rel))


def test_a_week_over_the_chunk_size_is_drawn_in_parts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A week of one type larger than ``MAX_CHUNK`` is drawn in parts (one Arrow string array holds 2 GiB).

    Every decision once, ids contiguous, no file overwritten by another part's file of the same day, and
    each part spread over the whole week.
    """
    monkeypatch.setattr(generate_module, "MAX_CHUNK", 300)
    plan = Plan(decisions=2_000, weeks=1, seed=5)
    parts = [c for c in chunks(plan) if c.spec == plan.knobs.types[0]]
    assert len(parts) > 1
    assert {c.part for c in parts} == set(range(len(parts)))
    counts = generate(open_root(str(tmp_path)), plan)
    files = sorted((tmp_path / "proposals").rglob("*.parquet"))
    proposals = pa.concat_tables(pq.read_table(f) for f in files)
    assert proposals.num_rows == counts["proposals"] == sum(c.n for c in chunks(plan))
    ids = [int(i[2:]) for i in proposals["decision_id"].to_pylist()]
    assert sorted(ids) == list(range(len(ids)))
    last = parts[-1]
    in_last = [t.date() for i, t in zip(ids, proposals["received_at"].to_pylist(), strict=True)
               if last.first_id <= i < last.first_id + last.n]
    assert len(in_last) == last.n
    assert len(set(in_last)) == 7


def test_known_properties_of_the_generated_records(records: Records) -> None:
    """Unique decision ids.

    Statuses from records, probabilities summing to 1 with the proposal as argmax, ~85% of decisions with
    an outcome, ~1% of outcomes outside the options, some repeated outcomes.
    """
    d = records.decisions
    assert d.decision_id.is_unique
    assert set(d.status) <= set(STATUSES)
    scored = d[d.status == "scored"]
    assert scored.probabilities.map(sum).between(1 - 1e-9, 1 + 1e-9).all()
    argmax = [
        ids[list(p).index(max(p))] for ids, p in zip(scored.option_ids, scored.probabilities, strict=True)
    ]
    assert (scored.proposal == argmax).all()
    assert d[d.status != "scored"].probabilities.isna().all()
    assert 0.83 < d.outcome.notna().mean() < 0.87
    assert 0.005 < (d.outcome == "review").sum() / d.outcome.notna().sum() < 0.015
    assert records.outcomes.decision_id.duplicated().sum() > 0


def test_more_challengers_score_every_decision_the_default_candidate_is_offered(tmp_path: Path) -> None:
    """Four candidates: each decision has one proposal per candidate, and the first two are as with two."""
    from pipelines import synth  # noqa: PLC0415

    two = synth.Knobs(challenger=synth.CHALLENGER)
    four = synth.Knobs(challenger=synth.CHALLENGER, more_challengers=synth.MORE_CHALLENGERS)
    for name, knobs in (("two", two), ("four", four)):
        generate(open_root(str(tmp_path / name)), Plan(decisions=2_000, weeks=1, seed=5, knobs=knobs))
    def proposals(name: str) -> pa.Table:
        return pa.concat_tables(pq.read_table(f) for f in sorted((tmp_path / name).rglob("*.parquet"))
                                if f.relative_to(tmp_path / name).parts[0] == "proposals")

    rows = proposals("four").to_pylist()
    by_candidate: dict[str, set[str]] = {}
    for row in rows:
        by_candidate.setdefault(row["candidate"], set()).add(row["decision_id"])
    assert set(by_candidate) == {"default", "challenger", "challenger-2", "challenger-3"}
    assert len({frozenset(ids) for ids in by_candidate.values()}) == 1
    order = [("decision_id", "ascending"), ("candidate", "ascending")]
    mine = proposals("four")
    mine = mine.filter(pc.is_in(mine["candidate"], pa.array(["default", "challenger"])))
    assert mine.sort_by(order).equals(proposals("two").sort_by(order))
