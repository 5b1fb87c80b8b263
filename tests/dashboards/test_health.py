"""Each health check, on records built to fail it: the verdict names it (and the unbroken records pass it)."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from dashboards.config import DEFAULTS
from dashboards.marts import identity_of, load_marts
from dashboards.report import review
from dashboards.verdict.rules import LABEL_SHIFT, OVERLAP, SRM
from tests.dashboards.harness import WEEK, run_marts

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from dashboards.verdict.decision import Verdict

pytestmark = pytest.mark.slow

W48_DAYS = [f"date=2026-11-{day}" for day in range(23, 30)]
Verdicts = dict[tuple[str, str], "Verdict"]


def verdicts(records: Path, out: Path) -> Verdicts:
    """Every verdict of W48 by (decision type, candidate name), from a pipelines run over ``records``."""
    result = review(load_marts(str(run_marts(records, out, WEEK, WEEK)), WEEK), DEFAULTS)
    return {(s.decision_type, identity_of(c).name): v for s in result.sections for c, v in s.verdicts.items()}


def failing(v: Verdict) -> set[str]:
    """The rules of the checks that fail and block."""
    return {k.rule for k in v.failing}


def rewrite(
    root: Path,
    decision_type: str,
    change: Callable[[pa.Table], pa.Table],
    kind: str = "proposals",
    days: list[str] | None = None,
) -> None:
    """Apply ``change`` to every file of ``kind`` of ``decision_type`` (W48's days, or ``days``; all: [])."""
    folder = root / kind / f"decision_type={decision_type}"
    for path in sorted(folder.glob("date=*/*.parquet")):
        if days is None and path.parent.name not in W48_DAYS:
            continue
        pq.write_table(change(pq.read_table(path)), path)


def every(table: pa.Table, n: int, mask: pa.ChunkedArray) -> pa.Array:
    """True on every ``n``-th row where ``mask`` holds."""
    picked = [False] * table.num_rows
    for count, index in enumerate(i for i, m in enumerate(mask.to_pylist()) if m):
        picked[index] = count % n == 0
    return pa.array(picked)


@pytest.fixture(scope="module")
def baseline(records_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Verdicts:
    """The verdicts of the records as generated."""
    return verdicts(records_dir, tmp_path_factory.mktemp("baseline"))


def broken(records_dir: Path, tmp_path: Path) -> Path:
    """A copy of the generated records to break."""
    root = tmp_path / "records"
    shutil.copytree(records_dir, root)
    return root


def test_the_generated_records_pass_every_health_check(baseline: Verdicts) -> None:
    """Two candidates on the same decisions, outcomes drawn independently of labelling: all three hold."""
    assert {name for _, name in baseline} == {"default", "challenger"}
    for v in baseline.values():
        assert not failing(v) & {SRM, OVERLAP, LABEL_SHIFT}, v.reasons


def _mark(table: pa.Table, hit: pa.Array, status: str, reason: str, *, sampled: bool) -> pa.Table:
    """``hit`` rows become ``status`` / ``reason`` (and unsampled where ``sampled`` is false)."""
    for name, value in (("status", status), ("reason", reason)):
        column = pc.if_else(hit, value, table[name])
        table = table.set_column(table.schema.get_field_index(name), name, column)
    if not sampled:
        table = table.set_column(table.schema.get_field_index("sampled"), "sampled",
                                 pc.if_else(hit, pa.scalar(value=False), table["sampled"]))
    return table


def challenger_verdict(
        records_dir: Path, tmp_path: Path, status: str, reason: str, *, sampled: bool) -> Verdict:
    """ticket_routing's challenger verdict with a quarter of its scored rows made ``status`` / ``reason``."""
    root = broken(records_dir, tmp_path)

    def mark(table: pa.Table) -> pa.Table:
        hit = every(
            table, 4, pc.and_(pc.equal(table["candidate"], "challenger"), pc.equal(table["status"], "scored"))
        )
        return _mark(table, hit, status, reason, sampled=sampled)

    rewrite(root, "ticket_routing", mark)
    return verdicts(root, tmp_path / "out")[("ticket_routing", "challenger")]


def test_a_sampler_drawing_fewer_of_the_offered_fails_the_sample_ratio(
        records_dir: Path, tmp_path: Path) -> None:
    """A quarter of the challenger's scored ticket_routing rows never sampled: the sample ratio fails."""
    v = challenger_verdict(records_dir, tmp_path, "dropped", "not_sampled", sampled=False)
    assert SRM in failing(v)
    assert any(r.startswith(f"failed: {SRM}") and "chi-square" in r for r in v.reasons)


def test_scorer_failures_of_sampled_decisions_are_not_a_sampling_fault(
        records_dir: Path, tmp_path: Path) -> None:
    """A quarter of the challenger's scored ticket_routing rows made timeouts: sampled as often, SRM holds."""
    v = challenger_verdict(records_dir, tmp_path, "timeout", "scorer_timeout", sampled=True)
    assert SRM not in failing(v)


def test_candidates_scoring_different_decisions_fail_the_overlap(records_dir: Path, tmp_path: Path) -> None:
    """Half the challenger's priority rows under other decision ids: scored as often, paired half as often.

    The overlap fails, the sample ratio holds.
    """
    root = broken(records_dir, tmp_path)

    def rename(table: pa.Table) -> pa.Table:
        hit = every(table, 2, pc.equal(table["candidate"], "challenger"))
        ids = pc.if_else(
            hit, pc.binary_join_element_wise("x-", table["decision_id"], ""), table["decision_id"]
        )
        return table.set_column(table.schema.get_field_index("decision_id"), "decision_id", ids)

    rewrite(root, "priority", rename)
    v = verdicts(root, tmp_path / "out")[("priority", "challenger")]
    assert OVERLAP in failing(v)
    assert SRM not in failing(v)
    assert any(r.startswith(f"failed: {OVERLAP}") for r in v.reasons)


def test_labels_only_on_confident_decisions_fail_the_label_shift(records_dir: Path, tmp_path: Path) -> None:
    """The outcomes of W48's ticket_routing decisions proposed at confidence < 0.7 deleted.

    The labelled decisions are the confident ones: the label-shift check fails, naming the difference.
    """
    root = broken(records_dir, tmp_path)
    unsure: set[str] = set()

    def collect(table: pa.Table) -> pa.Table:
        low = pc.less(table["proposal_probability"], 0.7)
        unsure.update(pc.filter(table["decision_id"], pc.fill_null(low, fill_value=False)).to_pylist())
        return table

    rewrite(root, "ticket_routing", collect)
    rewrite(
        root,
        "ticket_routing",
        lambda t: t.filter(pc.invert(pc.is_in(t["decision_id"], pa.array(sorted(unsure))))),
        kind="outcomes",
        days=[],
    )
    v = verdicts(root, tmp_path / "out")[("ticket_routing", "default")]
    assert LABEL_SHIFT in failing(v)
    assert any(r.startswith(f"failed: {LABEL_SHIFT}") and "standardized difference" in r for r in v.reasons)
