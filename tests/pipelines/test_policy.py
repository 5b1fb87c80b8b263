"""A policy chosen on one week and replayed on the next, against numpy, statsmodels and scipy."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np
import pytest
from click.testing import CliRunner
from statsmodels.stats.proportion import proportion_confint

from pipelines.errors import PolicyMismatch
from pipelines.policy import POLICY_FORMAT, Policy, choose, load_policy, replay
from pipelines.settings import PipelineSettings
from semif_shadow.cli import main
from tests.pipelines.harness import AS_OF, run_window
from tests.pipelines.reference import expected_threshold

if TYPE_CHECKING:
    from pathlib import Path

    from tests.pipelines.reference import Records

W, NEXT = "2026-W47", "2026-W48"
TYPE = "ticket_routing"
SETTINGS = PipelineSettings(precision_target=0.8)
"""A target that the busiest identity's options can meet on one week of the test data."""


@pytest.fixture(scope="module")
def chosen(records_root: Path) -> Policy:
    """The default candidate's busiest identity's policy, chosen on W47 alone."""
    run = run_window(records_root, None, settings=SETTINGS, first=W, last=W)
    try:
        keys = run.con.execute(
            "select model_identity_sha256 from identities where decision_type = $t and week = $w "
            "order by scored desc limit 1", {"t": TYPE, "w": W}).fetchall()
        return choose(run.con, TYPE, week=W, candidate="default", identity=keys[0][0][:12],
                      abstain_action="review")
    finally:
        run.con.close()


def test_the_policy_holds_the_fixed_sequence_thresholds_of_its_week(chosen: Policy, records: Records) -> None:
    """Each option's grid index and evidence equal the numpy fixed-sequence search on W47's rows.

    Those of that identity only; the file names its identity, target and abstain action.
    """
    rows = records.labelled[(records.labelled.decision_type == TYPE) & (records.labelled.week == W)
                            & (records.labelled.model_identity_sha256 == chosen.model_identity_sha256)]
    k = len(rows.option_ids.iloc[0])
    assert len(chosen.options) == k
    accepting = 0
    for option in chosen.options:
        mine = rows[rows.proposal == option["option_id"]]
        expected = expected_threshold(mine, SETTINGS.alpha / k, 0.8, 100)
        if expected is None:
            assert option["grid_index"] is None
            continue
        accepting += 1
        assert option["grid_index"] == expected["grid_index"]
        assert option["accepted"] == expected["accepted"]
        assert option["precision_lower"] == pytest.approx(expected["precision_lower"], rel=1e-9)
    assert accepting >= 2
    data = json.loads(chosen.dumps())
    assert data["format"] == POLICY_FORMAT
    assert (data["chosen_on"], data["precision_target"], data["abstain_action"]) == (W, 0.8, "review")
    assert len(data["model_identity_sha256"]) == 64


def test_replaying_on_the_next_week_matches_a_reference(
    chosen: Policy, records: Records, records_root: Path, tmp_path: Path
) -> None:
    """On W48 (out of sample) the replay equals a direct computation on W48's rows of the same identity.

    Coverage, precision and its Clopper-Pearson interval (statsmodels), severe errors, decisions sent to
    review, cost per accepted decision.
    """
    path = tmp_path / "policy.json"
    path.write_text(chosen.dumps())
    policy = load_policy(path)
    run = run_window(records_root, None, settings=SETTINGS, first=NEXT, last=NEXT)
    try:
        got = replay(run.con, policy, NEXT)
        high = {o for (o,) in run.con.execute(
            "select option_id from cfg_high_consequence where decision_type = $t", {"t": TYPE}).fetchall()}
    finally:
        run.con.close()
    d = records.decisions
    rows = d[(d.decision_type == TYPE) & (d.week == NEXT) & (d.status == "scored")
             & (d.model_identity_sha256 == policy.model_identity_sha256)]
    index = {o["option_id"]: o["grid_index"] for o in policy.options}
    cell = np.floor(rows.proposal_probability.to_numpy() * 100)
    grid = rows.proposal.map(index).to_numpy(dtype=float)  # NaN: no threshold, never accepted
    accepted = cell >= grid
    labelled = rows.outcome.notna().to_numpy()
    correct = (rows.proposal == rows.outcome).to_numpy()
    x, n = int((accepted & labelled & correct).sum()), int((accepted & labelled).sum())
    assert got["scored"] == len(rows)
    assert got["accepted"] == int(accepted.sum()) > 0
    assert got["sent_to_review"] == len(rows) - int(accepted.sum())
    assert got["coverage"] == pytest.approx(accepted.mean(), rel=1e-12)
    assert got["precision"] == pytest.approx(x / n, rel=1e-12)
    low, high_ = proportion_confint(x, n, alpha=0.05, method="beta")
    assert (got["precision_low"], got["precision_high"]) == (pytest.approx(low), pytest.approx(high_))
    severe = accepted & labelled & ~correct & rows.proposal.isin(high).to_numpy()
    assert got["severe_errors"] == int(severe.sum())
    assert got["cost_usd"] > 0
    assert got["cost_per_accepted"] == pytest.approx(got["cost_usd"] / got["accepted"])


def test_a_policy_for_another_identity_is_refused(chosen: Policy, records_root: Path) -> None:
    """Replaying a policy on a week with no decision under its identity fails, naming both identities."""
    other = Policy(**{**chosen.__dict__, "model_identity_sha256": "f" * 64})
    run = run_window(records_root, None, settings=SETTINGS, first=NEXT, last=NEXT)
    try:
        refused = r"valid for identity ffffffffffff .* was scored under .*refused"
        with pytest.raises(PolicyMismatch, match=refused):
            replay(run.con, other, NEXT)
    finally:
        run.con.close()


def test_the_commands_choose_replay_and_refuse(chosen: Policy, records_root: Path, tmp_path: Path) -> None:
    """`policy choose` writes the same policy as `choose`; `policy replay` prints the replay as JSON.

    A policy edited to another identity exits non-zero with the refusal on one line.
    """
    path = tmp_path / "p.json"
    common = ["--root", str(records_root), "--as-of", AS_OF.isoformat()]
    env = {"PIPELINES_PRECISION_TARGET": "0.8"}
    result = CliRunner().invoke(main, ["pipelines", "policy", "choose", *common, "--week", W, "--type", TYPE,
                                       "--identity", chosen.model_identity_sha256[:12], "--out", str(path)],
                                env=env)
    assert result.exit_code == 0, result.output
    assert load_policy(path).options == chosen.options
    result = CliRunner().invoke(main, ["pipelines", "policy", "replay", *common, "--week", NEXT,
                                       "--policy", str(path)], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["accepted"] > 0
    path.write_text(json.dumps(json.loads(path.read_text()) | {"model_identity_sha256": "0" * 64}))
    result = CliRunner().invoke(main, ["pipelines", "policy", "replay", *common, "--week", NEXT,
                                       "--policy", str(path)], env=env)
    assert result.exit_code != 0
    assert "valid for identity 000000000000" in result.output
