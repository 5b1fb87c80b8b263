"""``semif-shadow audit sample``: strata from the records, known inclusion probabilities, never redrawn."""

from __future__ import annotations

import datetime as dt
import shutil
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from contracts.audit_samples import AUDIT_SAMPLES, sample_path
from contracts.records import OUTCOMES, RECORD_VERSION, SOURCE_AUDIT
from pipelines import synth
from pipelines.audit_sample import POPULATION_SQL, Design, draw, population
from pipelines.generate import Plan, generate, write_whole
from pipelines.storage import open_root
from semif_shadow.cli import main
from tests.pipelines.correctness_reference import units
from tests.pipelines.harness import AS_OF, run_window

if TYPE_CHECKING:
    from pathlib import Path

PLAN = Plan(decisions=6_000, weeks=1, drift_week=None, seed=4,
            knobs=synth.Knobs(challenger=synth.CHALLENGER, production_error_rate=0.1))
WEEK = "2026-W44"


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One generated week with two candidates, production 10% wrong."""
    root = tmp_path_factory.mktemp("records")
    generate(open_root(str(root)), PLAN)
    return root


def sample_cli(root: Path, *args: str) -> tuple[int, str]:
    """Run ``semif-shadow audit sample --root ROOT --week W ARGS``; exit code and output."""
    result = CliRunner().invoke(main, ["audit", "sample", "--root", str(root), "--week", WEEK, *args])
    return result.exit_code, result.output


def test_the_sample_holds_every_disagreement_up_to_the_cap_and_a_share_of_agreements(
        records: Path, tmp_path: Path) -> None:
    """Strata match the records; inclusion probability = sampled / stratum size; overlap share marked.

    With the cap above the disagreements, all are sampled (probability 1); agreements at the rate, rounded up.
    """
    root = tmp_path / "records"
    shutil.copytree(records, root)
    code, output = sample_cli(root, "--type", "ticket_routing", "--disagreements", "100000",
                              "--agreement-rate", "0.05", "--overlap", "0.2")
    assert code == 0, output
    table = pq.read_table(root / sample_path(WEEK, "ticket_routing"))
    assert table.schema.equals(AUDIT_SAMPLES)
    rows = table.to_pylist()
    ref = units(root, WEEK, "ticket_routing")  # recounts the strata from the raw records
    sizes = ref.population
    counts = {s: sum(r["stratum"] == s for r in rows) for s in sizes}
    assert counts["disagree"] == sizes["disagree"] > 100
    assert counts["agree"] == -(-sizes["agree"] * 5 // 100)
    for row in rows:
        assert row["stratum_decisions"] == sizes[row["stratum"]]
        assert row["inclusion_probability"] == pytest.approx(counts[row["stratum"]] / sizes[row["stratum"]])
    assert sum(r["double_audit"] for r in rows) == round(0.2 * len(rows))
    assert len({r["decision_id"] for r in rows}) == len(rows)
    assert len({r["sample_id"] for r in rows}) == 1
    assert f"{len(rows)} decisions sampled" in output


def test_the_same_records_and_seed_draw_the_same_sample_and_another_seed_another(records: Path) -> None:
    """Same inputs and seed: the same rows; another seed: another draw; another type: independent draw."""
    root = open_root(str(records))
    decisions = population(root, WEEK, "priority")
    design = Design(disagreements=50, agreement_rate=0.02, seed=9)
    first, again = draw(decisions, WEEK, "priority", design), draw(decisions, WEEK, "priority", design)
    assert first.equals(again)
    other = draw(decisions, WEEK, "priority", Design(disagreements=50, agreement_rate=0.02, seed=10))
    assert set(first.column("decision_id").to_pylist()) != set(other.column("decision_id").to_pylist())
    assert first.num_rows == other.num_rows


def test_rerunning_never_changes_an_existing_sample(records: Path, tmp_path: Path) -> None:
    """A second run, even with another seed, leaves the file as it was and says so in one line."""
    root = tmp_path / "records"
    shutil.copytree(records, root)
    assert sample_cli(root, "--seed", "1")[0] == 0
    path = root / sample_path(WEEK, "priority")
    before = path.read_bytes()
    code, output = sample_cli(root, "--seed", "2")
    assert code == 0
    assert path.read_bytes() == before
    assert f"{WEEK} priority: a sample exists already; left unchanged" in output
    assert (root / sample_path(WEEK, "ticket_routing")).exists()  # without --type: every type


@pytest.mark.parametrize(("args", "words"), [
    (("--week", "2026-48"), "--week: '2026-48' is not an ISO week"),
    (("--type", "nope"), "no proposals of nope"),
    (("--agreement-rate", "1.5"), "--agreement-rate"),
])
def test_bad_input_is_one_line_and_a_non_zero_exit(records: Path, args: tuple[str, ...], words: str) -> None:
    """A malformed week, an unknown type or an out-of-range rate: one clear line, exit code not 0."""
    code, output = sample_cli(records, *args)
    assert code != 0
    assert words in output
    assert "Traceback" not in output


def _second_reports(root: Path, decision_type: str, options: tuple[str, ...]) -> set[str]:
    """Add a second report to 90 of the week's outcomes; the ids whose production outcome changes.

    A later production report with another option (it replaces the first), one at the same instant (the
    greater option wins the tie) and a later audit that disagrees (never production's outcome).
    """
    table = pads.dataset(root / "outcomes" / f"decision_type={decision_type}", partitioning="hive").to_table()
    rows = sorted((r for r in table.select(["decision_id", "outcome", "outcome_at"]).to_pylist()
                   if r["outcome"] in options), key=lambda r: r["decision_id"])[:90]
    added, changed = [], set()
    for n, row in enumerate(rows):
        other = options[(options.index(row["outcome"]) + 1) % len(options)]
        late = row["outcome_at"] + dt.timedelta(hours=1)
        kind = ("correction", "tie", "audit")[n % 3]
        at = row["outcome_at"] if kind == "tie" else late
        added.append({"record_version": RECORD_VERSION, "decision_id": row["decision_id"],
                      "decision_type": decision_type, "outcome": other, "outcome_at": at,
                      "source": SOURCE_AUDIT if kind == "audit" else None, "writer_id": "test",
                      "in_options": True})
        if kind == "correction" or (kind == "tie" and other > row["outcome"]):
            changed.add(row["decision_id"])
    extra = pa.Table.from_pylist(added, schema=OUTCOMES)
    for day in sorted({r["outcome_at"].date() for r in added}):
        part = extra.filter(pc.equal(pc.cast(extra["outcome_at"], pa.date32()), day))
        write_whole(open_root(str(root)), str(root / "outcomes" / f"decision_type={decision_type}"
                                              / f"date={day.isoformat()}"), "second.parquet", part)
    return changed


def test_the_population_and_the_pipelines_read_one_outcome_rule(records: Path, tmp_path: Path) -> None:
    """The sample's strata compare proposals with the pipelines' own ``stg_outcomes``: the same outcome.

    With corrections, ties and audits added, each decision's stratum equals the one the pipelines' staging
    model gives, and the corrected decisions' strata did change. The population reads no raw outcome.
    """
    assert "raw_outcomes" not in POPULATION_SQL
    root = tmp_path / "records"
    shutil.copytree(records, root)
    before = population(open_root(str(root)), WEEK, "priority", as_of=AS_OF).to_pylist()
    changed = _second_reports(root, "priority", ("low", "normal", "high", "urgent"))
    after = population(open_root(str(root)), WEEK, "priority", as_of=AS_OF).to_pylist()
    computed = run_window(root, None, first=WEEK, last=WEEK)
    try:
        staged = computed.con.sql("""
            select decision_id, bool_or(p.proposal is distinct from o.outcome) as disagree
            from stg_proposals as p join stg_outcomes as o using (decision_id)
            where p.status = 'scored' and p.decision_type = 'priority' and p.week_start = $monday
            group by decision_id order by decision_id
        """, params={"monday": dt.date.fromisocalendar(2026, 44, 1)}).to_arrow_table().to_pylist()
    finally:
        computed.con.close()
    assert after == staged
    flipped = {r["decision_id"] for r, s in zip(before, after, strict=True) if r["disagree"] != s["disagree"]}
    assert flipped
    assert flipped <= changed
