"""The go rule on a real policy: chosen on W47 by `pipelines policy choose`, replayed by the review on W48."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

from dashboards.cli import review as review_command
from dashboards.marts import load_marts
from pipelines.ledger import policy_key
from pipelines.policy_cli import policy as policy_command
from tests.dashboards.harness import WEEK
from tests.pipelines.harness import AS_OF

if TYPE_CHECKING:
    from pathlib import Path

TYPE, CHOSEN_ON = "ticket_routing", "2026-W47"
TARGET = "0.6"
"""A precision target the generated challenger reaches on some options, so the policy accepts decisions."""


def challenger_cpu(marts_dir: Path) -> tuple[str, str]:
    """The challenger's CPU identity (it does not change over the weeks): its grouping key and sha256."""
    identities = load_marts(str(marts_dir), WEEK).identities(TYPE)
    row = identities[
        identities["candidate"].str.startswith("challenger ") & identities["candidate"].str.contains("/cpu/")
    ]
    return str(row["candidate"].iloc[0]), str(row["model_identity_sha256"].iloc[0])


@pytest.fixture(scope="module")
def policy_file(records_dir: Path, marts_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`pipelines policy choose` for the challenger's CPU identity on W47 (target 0.6)."""
    _, sha = challenger_cpu(marts_dir)
    out = tmp_path_factory.mktemp("policy") / "policy.json"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PIPELINES_PRECISION_TARGET", TARGET)
        chosen = CliRunner().invoke(
            policy_command,
            [
                "choose",
                "--root",
                str(records_dir),
                "--week",
                CHOSEN_ON,
                "--type",
                TYPE,
                "--candidate",
                "challenger",
                "--identity",
                sha[:12],
                "--as-of",
                AS_OF.isoformat(),
                "--out",
                str(out),
            ],
        )
    assert chosen.exit_code == 0, chosen.output
    return out


def test_the_verdict_uses_the_policy_replayed_on_the_review_week(
    records_dir: Path, marts_dir: Path, policy_file: Path, tmp_path: Path
) -> None:
    """`review --policy --records` judges that identity on the policy's replay on W48.

    Its go check reads the numbers `pipelines policy replay` prints, marked out of sample; the other
    identities stay in-sample and wait.
    """
    key, _ = challenger_cpu(marts_dir)
    as_of = AS_OF.isoformat()
    out = tmp_path / "review.html"
    replayed = CliRunner().invoke(
        policy_command,
        [
            "replay",
            "--root",
            str(records_dir),
            "--week",
            WEEK,
            "--policy",
            str(policy_file),
            "--as-of",
            as_of,
        ],
    )
    assert replayed.exit_code == 0, replayed.output
    expected = json.loads(replayed.output)
    assert expected["accepted_labelled"] > 0
    result = CliRunner().invoke(
        review_command,
        [
            "--marts",
            str(marts_dir),
            "--week",
            WEEK,
            "--out",
            str(out),
            "--policy",
            str(policy_file),
            "--records",
            str(records_dir),
            "--as-of",
            as_of,
        ],
    )
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    # the pipelines run was not given the policy: its ledger is the week's replay alone, and says so
    detail = (
        f"out of sample: policy chosen on {CHOSEN_ON}, policy {policy_key(policy_file)}, this week&#x27;s "
        "labels only (no evidence ledger for it: pass the policy to `pipelines run --policy` to accumulate): "
        f"{expected['accepted_correct']}/{expected['accepted_labelled']} accepted correct, "
        "anytime-valid lower bound"
    )
    assert detail in page
    assert f"coverage {expected['coverage']:.1%} of scored decisions accepted at the policy" in page
    assert "in-sample: ledger at the week&#x27;s own thresholds" in page
    assert "go needs a policy chosen on another week" in page
    assert key.split(" ")[1] in page


def test_a_policy_needs_records_and_its_own_identity(
    records_dir: Path, marts_dir: Path, policy_file: Path, tmp_path: Path
) -> None:
    """--policy without --records is a usage error; a policy of an identity absent that week is one line."""
    base = ["--marts", str(marts_dir), "--week", WEEK, "--out", str(tmp_path / "r.html")]
    alone = CliRunner().invoke(review_command, [*base, "--policy", str(policy_file)])
    assert alone.exit_code == 2
    assert "--policy needs --records" in alone.output
    other_file = tmp_path / "other.json"
    data = json.loads(policy_file.read_text())
    other_file.write_text(json.dumps(data | {"model_identity_sha256": "0" * 64}))
    other = CliRunner().invoke(
        review_command,
        [*base, "--policy", str(other_file), "--records", str(records_dir), "--as-of", AS_OF.isoformat()],
    )
    assert other.exit_code == 1
    assert "policy: the policy is valid for identity 000000000000" in other.output
    assert len(other.output.strip().splitlines()) == 1
