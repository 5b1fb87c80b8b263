"""The evidence ledger across weekly runs, and the label_delay mart beside it.

The ledger accumulates mature weeks only, survives reruns, and resets (saying why) when the model identity
or the policy changes.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import boto3
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dashboards.marts import load_marts
from dashboards.policies import replay_policies
from dashboards.verdict.evidence import gather
from pipelines import synth
from pipelines.generate import Plan, generate
from pipelines.ledger import policy_key
from pipelines.policy import Policy, load_policy, replay
from pipelines.settings import PipelineSettings
from pipelines.storage import open_root
from pipelines.weeks import as_utc, parse_week
from semif_shadow.cli import main
from tests.pipelines.harness import run_window
from tests.pipelines.one_hot import add_one_hot_rows

if TYPE_CHECKING:
    from pathlib import Path

    from tests.harness import MotoServer

PLAN = Plan(
    decisions=30_000,
    weeks=4,
    drift_week=None,
    seed=3,
    knobs=synth.Knobs(identity_change=synth.IdentityChange(week=2)),
)
"""2026-W44..W47; ``default``'s KV type changes on W46's Thursday (a new identity from then on)."""
LATE = dt.datetime(2027, 1, 31, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated records."""
    folder = tmp_path_factory.mktemp("ledger_records")
    generate(open_root(str(folder)), PLAN)
    return folder


def read(out: Path, mart: str, week: str) -> list[dict[str, Any]]:
    """One written week of a mart."""
    table: list[dict[str, Any]] = pq.read_table(out / mart / f"week={week}" / "part-0.parquet").to_pylist()
    return table


def rows(out: Path, week: str, policy: str = "none") -> dict[tuple[str, str], dict[str, Any]]:
    """The written evidence rows of one week and policy, by (decision type, model key)."""
    table = read(out, "evidence", week)
    return {(r["decision_type"], r["model_key"]): r for r in table if r["policy"] == policy}


def run(root: Path, out: Path, week: str, as_of: dt.datetime = LATE, **settings: Any) -> None:
    """One weekly pipelines run written under ``out``."""
    run_window(
        root, out, first=week, last=week, as_of=as_of, settings=PipelineSettings(**settings)
    ).con.close()


def accept_all(
    out: Path, key: tuple[str, str], tmp: Path, name: str, grid_index: int = 0, week: str = "2026-W45",
    chosen_on: str = "2026-W43",
) -> Path:
    """A policy file accepting every option of ``key`` at ``grid_index`` (options: ``week``'s thresholds).

    ``chosen_on``: the week it says it was chosen on (its ledger counts the weeks after it); by default
    before every week these tests run.
    """
    table = read(out, "thresholds", week)
    options = sorted({r["option_id"] for r in table if (r["decision_type"], r["model_key"]) == key})
    (identity,) = [r for r in read(out, "identities", week) if (r["decision_type"], r["model_key"]) == key]
    policy = Policy(
        key[0],
        identity["candidate"],
        identity["model_identity_sha256"],
        key[1],
        chosen_on,
        "2027-01-31",
        0.95,
        0.05,
        100,
        "review",
        [{"option_id": o, "grid_index": grid_index} for o in options],
    )
    path = tmp / f"{name}.json"
    path.write_text(policy.dumps())
    return path


def test_weekly_runs_accumulate_the_mature_weeks_as_one_run_does(root: Path, tmp_path: Path) -> None:
    """W45, W46, W47 run one by one give the same ledger as one run over W45..W47.

    Each week's ledger is the previous one plus that week (W44, a reference week of the first run, once).
    """
    weekly, batch = tmp_path / "weekly", tmp_path / "batch"
    for week in ("2026-W45", "2026-W46", "2026-W47"):
        run(root, weekly, week)
    run_window(root, batch, first="2026-W45", last="2026-W47", as_of=LATE).con.close()
    last = rows(weekly, "2026-W47")
    assert last
    for key, row in last.items():
        assert row == rows(batch, "2026-W47")[key]
    for key, row in last.items():
        before = rows(weekly, "2026-W46").get(key)
        if before is None:
            continue
        assert (
            row["ledger_accepted_labelled"] == before["ledger_accepted_labelled"] + row["accepted_labelled"]
        )
        assert row["ledger_accepted_correct"] == before["ledger_accepted_correct"] + row["accepted_correct"]
        assert row["looks"] == before["looks"] + 1
        assert row["counted_through"] == "2026-W47"
    assert any(r["ledger_accepted_labelled"] > 0 for r in last.values())


def test_a_week_counts_only_once_it_is_mature_and_reruns_change_nothing(root: Path, tmp_path: Path) -> None:
    """W46 run (twice) before it matures: its labels are provisional, not in the ledger.

    W47 run later takes W46 in once, as runs that saw W46 mature do (policies accepting every option, so
    that the counts are large).
    """
    early = as_utc(parse_week("2026-W47")) + dt.timedelta(days=2, hours=23)  # W46 matures on day 3
    out, reference = tmp_path / "out", tmp_path / "reference"
    run(root, out, "2026-W45")
    keys = {(r["decision_type"], r["model_key"]) for r in read(out, "thresholds", "2026-W45")}
    policies = [accept_all(out, k, tmp_path, f"p{i}") for i, k in enumerate(sorted(keys)) if k[1] != "*"]
    run(root, out, "2026-W45", policies=policies)
    for _ in range(2):
        run(root, out, "2026-W46", as_of=early, policies=policies)
    provisional = [r for r in read(out, "evidence", "2026-W46") if r["policy"] != "none"]
    assert all(not r["mature"] and r["counted_through"] == "2026-W45" for r in provisional)
    assert sum(r["provisional_accepted_labelled"] for r in provisional) > 100
    w45 = {(r["model_key"], r["policy"]): r for r in read(out, "evidence", "2026-W45")}
    for r in provisional:
        before = w45.get((r["model_key"], r["policy"]), {"ledger_accepted_labelled": 0})
        assert r["ledger_accepted_labelled"] == before["ledger_accepted_labelled"]
    run(root, out, "2026-W47", policies=policies)
    for week in ("2026-W45", "2026-W46", "2026-W47"):
        run(root, reference, week, policies=policies)
    counts = ("ledger_accepted_labelled", "ledger_accepted_correct", "ledger_severe_errors", "weeks_covered")
    mine = read(out, "evidence", "2026-W47")
    theirs = read(reference, "evidence", "2026-W47")
    assert [{c: r[c] for c in counts} for r in mine] == [{c: r[c] for c in counts} for r in theirs]
    assert sum(r["ledger_accepted_labelled"] for r in mine) > sum(r["accepted_labelled"] for r in mine)


def test_late_labels_of_a_counted_week_enter_once_when_a_later_run_reads_it(
        root: Path, tmp_path: Path) -> None:
    """W45 counted just after it matured (its slowest outcomes not in); W46 run late reads W45 again.

    The ledger takes in W45's late labels once: it equals one late run over W45..W46, and a rerun of W46
    adds nothing more (policies accepting every option, so that the counts are large).
    """
    early = as_utc(parse_week("2026-W46")) + dt.timedelta(days=3, hours=1)  # W45 matured an hour ago
    seed, out, reference = tmp_path / "seed", tmp_path / "out", tmp_path / "reference"
    run(root, seed, "2026-W45")
    keys = {(r["decision_type"], r["model_key"]) for r in read(seed, "thresholds", "2026-W45")}
    policies = [accept_all(seed, k, tmp_path, f"p{i}") for i, k in enumerate(sorted(keys)) if k[1] != "*"]
    run(root, out, "2026-W45", as_of=early, policies=policies)
    run_window(root, reference, first="2026-W45", last="2026-W46", as_of=LATE,
               settings=PipelineSettings(policies=policies)).con.close()
    counts = ("ledger_accepted_labelled", "ledger_accepted_correct", "ledger_severe_errors")

    def ledgers(folder: Path, week: str) -> dict[tuple[str, str, str], list[int]]:
        return {(r["decision_type"], r["model_key"], r["policy"]): [r[c] for c in counts]
                for r in read(folder, "evidence", week) if r["policy"] != "none"}

    short = sum(v[0] for v in ledgers(out, "2026-W45").values())
    assert 0 < short < sum(v[0] for v in ledgers(reference, "2026-W45").values())  # W45 counted short
    run(root, out, "2026-W46", policies=policies)
    assert ledgers(out, "2026-W46") == ledgers(reference, "2026-W46")
    run(root, out, "2026-W46", policies=policies)
    assert ledgers(out, "2026-W46") == ledgers(reference, "2026-W46")


def test_a_policys_ledger_starts_the_week_after_it_was_chosen(root: Path, tmp_path: Path) -> None:
    """A policy chosen on W45, run on W46 (its window reads W42..W46): the ledger holds W46 alone.

    The same policy said to be chosen on W43 takes in the window's mature weeks from W44 on.
    """
    out = tmp_path / "out"
    run(root, out, "2026-W45")
    key = next(k for k, r in rows(out, "2026-W45").items() if k[1] != "*" and r["accepted_labelled"] == 0)
    late = accept_all(out, key, tmp_path, "late", chosen_on="2026-W45")
    early = accept_all(out, key, tmp_path, "early", chosen_on="2026-W43")
    out_late, out_early = tmp_path / "late", tmp_path / "early"
    run(root, out_late, "2026-W46", policies=[late])
    run(root, out_early, "2026-W46", policies=[early])
    (late_key,) = {r["policy"] for r in read(out_late, "evidence", "2026-W46")} - {"none"}
    (early_key,) = {r["policy"] for r in read(out_early, "evidence", "2026-W46")} - {"none"}
    only = rows(out_late, "2026-W46", late_key)[key]
    assert only["ledger_accepted_labelled"] == only["accepted_labelled"] > 0
    assert (only["ledger_first_week"], only["weeks_covered"]) == ("2026-W46", 1)
    wider = rows(out_early, "2026-W46", early_key)[key]
    assert wider["ledger_accepted_labelled"] > only["ledger_accepted_labelled"]
    assert wider["ledger_first_week"] == "2026-W44"


def test_a_new_identity_and_a_new_policy_reset_the_ledger_and_say_why(root: Path, tmp_path: Path) -> None:
    """The KV type change in W46 opens a ledger for the new key ('new model identity', from the old key).

    Swapping a key's policy file opens one for the new policy ('policy changed', from the old policy).
    """
    out = tmp_path / "out"
    run(root, out, "2026-W45")
    w45 = rows(out, "2026-W45")
    run(root, out, "2026-W46")
    w46 = rows(out, "2026-W46")
    new = [r for k, r in w46.items() if k not in w45]
    assert new
    assert {r["reset_reason"] for r in new} == {"new model identity"}
    assert all(r["reset_from"] in {k[1] for k in w45} for r in new)
    assert all(r["reset_week"] == "2026-W46" for r in new)
    assert all(r["reset_reason"] == "first look" for r in w46.values() if r not in new)

    key = next(k for k, r in w45.items() if r["accepted_labelled"] == 0)
    first = accept_all(out, key, tmp_path, "first")
    second = accept_all(out, key, tmp_path, "second", grid_index=50)
    run(root, out, "2026-W45", policies=[first])
    (first_key,) = {r["policy"] for r in read(out, "evidence", "2026-W45")} - {"none"}
    assert rows(out, "2026-W45", first_key)[key]["ledger_accepted_labelled"] > 0
    run(root, out, "2026-W46", policies=[second])
    keys = {r["policy"] for r in read(out, "evidence", "2026-W46")} - {"none", first_key}
    (second_key,) = keys
    row = rows(out, "2026-W46", second_key)[key]
    assert (row["reset_reason"], row["reset_from"]) == ("policy changed", first_key)
    assert rows(out, "2026-W46", first_key)[key]["looks"] == 2  # the old ledger is carried, not lost


def test_label_delay_gives_quantiles_per_source_and_the_configured_lag(root: Path, tmp_path: Path) -> None:
    """p50 <= p90 <= p99 hours per type, week and source, positive, beside the configured 3-day lag."""
    out = tmp_path / "out"
    run(root, out, "2026-W46")
    table = read(out, "label_delay", "2026-W46")
    assert table
    for r in table:
        assert 0 <= r["p50_hours"] <= r["p90_hours"] <= r["p99_hours"]
        assert r["maturity_lag_days"] == 3.0
        assert r["recommended_lag_days"] * 24 >= r["p99_hours"]
        assert r["outcomes"] > 0


def test_the_replay_and_the_evidence_mart_count_a_policy_alike_one_hot_rows_never_accepted(
    tmp_path: Path,
) -> None:
    """One-hot chat rows beside generated ones, a policy accepting every option from grid index 0.

    The week's replay and the evidence mart give the same scored, accepted, labelled, correct and severe
    counts, and neither accepts a one-hot row.
    """
    root = tmp_path / "records"
    generate(open_root(str(root)), Plan(decisions=4000, weeks=1, drift_week=None, seed=8))
    add_one_hot_rows(root)
    out = tmp_path / "out"
    week = "2026-W44"
    run(root, out, week)
    busiest = max(
        (r for r in read(out, "evidence", week) if r["candidate"] == "default"), key=lambda r: r["scored"]
    )
    path = accept_all(out, (busiest["decision_type"], busiest["model_key"]), tmp_path, "all", week=week)
    policy = load_policy(path)
    computed = run_window(
        root, out, first=week, last=week, as_of=LATE, settings=PipelineSettings(policies=[path])
    )
    try:
        replayed = replay(computed.con, policy, week)
        one_hot = computed.con.execute(
            "select count(*) from int_decisions join int_segments using (segment) "
            "where one_hot and int_decisions.is_scored and model_key = $k and decision_type = $t",
            {"k": policy.model_key, "t": policy.decision_type},
        ).fetchone()
    finally:
        computed.con.close()
    assert one_hot is not None
    assert one_hot[0] > 0
    (row,) = [
        r for r in read(out, "evidence", week) if r["policy"] != "none" and r["model_key"] == policy.model_key
    ]
    for count in ("scored", "accepted", "accepted_labelled", "accepted_correct", "severe_errors"):
        assert replayed[count] == row[count], count
    assert row["accepted"] == row["scored"] - one_hot[0]


def test_the_run_command_takes_policy_files(root: Path, tmp_path: Path) -> None:
    """`pipelines run --policy FILE` adds the policy's ledger rows; a file not a policy: one line, exit 1."""
    out = tmp_path / "out"
    run(root, out, "2026-W45")
    key = next((r["decision_type"], r["model_key"]) for r in read(out, "evidence", "2026-W45"))
    path = accept_all(out, key, tmp_path, "cli")
    common = [
        "pipelines",
        "run",
        "--root",
        str(root),
        "--week",
        "2026-W45",
        "--out",
        str(out),
        "--as-of",
        LATE.isoformat(),
    ]
    result = CliRunner().invoke(main, [*common, "--policy", str(path)])
    assert result.exit_code == 0, result.output
    policies = {r["policy"] for r in read(out, "evidence", "2026-W45") if r["model_key"] == key[1]}
    assert policies == {"none", policy_key(path)}
    (replayed,) = replay_policies([path], str(root), "2026-W45", as_of=LATE.isoformat())
    evidence = gather(load_marts(str(out), "2026-W45"), key[0], key[1], 0.2, replayed)
    assert evidence.ledger.from_mart
    assert evidence.ledger.policy == policy_key(path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "other"}')
    result = CliRunner().invoke(main, [*common, "--policy", str(bad)])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1] == f"Error: policy: {bad} is not a semif.policy/v1 policy"


def test_the_ledger_continues_when_the_marts_are_written_to_s3(
    root: Path,
    moto: MotoServer,
    tmp_path: Path,
) -> None:
    """`pipelines run --out s3://...` fetches the prior week from S3 into its scratch folder first.

    So W46 written there continues W45's ledger: one more look, the same counts as a local output.
    """
    boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1").create_bucket(Bucket="marts")
    local = tmp_path / "local"
    for week in ("2026-W45", "2026-W46"):
        args = ["pipelines", "run", "--root", str(root), "--week", week, "--as-of", LATE.isoformat()]
        result = CliRunner().invoke(main, [*args, "--out", "s3://marts/out", "--s3-endpoint", moto.endpoint])
        assert result.exit_code == 0, result.output
        run(root, local, week)
    fs = open_root("s3://marts/out", moto.endpoint).fs
    with fs.open_input_file("marts/out/evidence/week=2026-W46/part-0.parquet") as stream:
        remote = pq.read_table(stream).to_pylist()
    counts = ("looks", "weeks_covered", "ledger_accepted_labelled", "ledger_accepted_correct", "reset_reason")
    assert [{c: r[c] for c in counts} for r in remote] == [
        {c: r[c] for c in counts} for r in read(local, "evidence", "2026-W46")
    ]
    assert max(r["looks"] for r in remote) == 2  # W45's ledgers continued (new identities of W46 start at 1)
