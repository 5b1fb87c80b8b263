"""The `evidence` mart against pandas on the records.

The week's counts at the week's own thresholds and at a policy accepting every option, the labelled and
unlabelled confidence, and the ledger's cumulative mature counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pytest

from pipelines.ledger import policy_key
from pipelines.policy import Policy
from pipelines.settings import PipelineSettings, high_consequence_options
from tests.pipelines.harness import Computed, mart, run_window
from tests.pipelines.reference import Records, reference_accepted, scope

if TYPE_CHECKING:
    from pathlib import Path

    import pandas as pd


def rows_of(run: Computed, name: str) -> list[dict[str, Any]]:
    """A mart's rows (``mart``), typed for reading."""
    return cast("list[dict[str, Any]]", mart(run, name))


@pytest.fixture(scope="module")
def accept_all(
    computed: Computed, records_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> tuple[list[dict[str, Any]], set[str]]:
    """The evidence rows of a run given a policy accepting every option (grid index 0) for every identity.

    And the policies' keys.
    """
    folder = tmp_path_factory.mktemp("policies")
    identities = {(r["decision_type"], r["model_key"]): r for r in rows_of(computed, "identities")}
    options: dict[tuple[str, str], set[str]] = {}
    for r in rows_of(computed, "thresholds"):
        options.setdefault((r["decision_type"], r["model_key"]), set()).add(r["option_id"])
    paths = []
    for i, (key, identity) in enumerate(sorted(identities.items())):
        policy = Policy(
            key[0],
            identity["candidate"],
            identity["model_identity_sha256"],
            key[1],
            "2026-W44",
            "2027-01-31",
            0.95,
            0.05,
            100,
            "review",
            [{"option_id": o, "grid_index": 0} for o in sorted(options[key])],
        )
        paths.append(folder / f"{i}.json")
        paths[-1].write_text(policy.dumps())
    run = run_window(
        records_root, tmp_path_factory.mktemp("marts"), settings=PipelineSettings(policies=paths)
    )
    try:
        return rows_of(run, "evidence"), {policy_key(p) for p in paths}
    finally:
        run.con.close()


@pytest.fixture(scope="module")
def scored(computed: Computed, records: Records) -> pd.DataFrame:
    """Scored decisions with the reference's acceptance, correctness and severity, and grid confidence."""
    settings = computed.settings
    frame = records.decisions[records.decisions.status == "scored"].copy()
    frame["accepted"] = reference_accepted(records, settings.alpha, settings.precision_target)
    frame["labelled"] = frame.outcome.notna()
    frame["correct"] = frame.proposal == frame.outcome
    marked = high_consequence_options(settings)
    frame["high"] = [p in marked.get(t, []) for t, p in zip(frame.decision_type, frame.proposal, strict=True)]
    frame["grid"] = np.floor(frame.proposal_probability * 100) / 100
    return frame


@pytest.mark.parametrize("policy", ["none", "accept every option"])
def test_week_counts_at_the_policy(
    computed: Computed, scored: pd.DataFrame, accept_all: tuple[list[dict[str, Any]], set[str]], policy: str
) -> None:
    """Scored, accepted, labelled, accepted labelled and correct, severe as pandas counts them.

    Severe: accepted, labelled, wrong, high-consequence proposal; per type, week and model key. At the
    week's own thresholds (policy `none`) and at policies accepting every option from grid index 0.
    """
    if policy == "none":
        rows = [r for r in rows_of(computed, "evidence") if r["policy"] == "none" and r["scored"]]
    else:
        rows = [r for r in accept_all[0] if r["policy"] in accept_all[1] and r["scored"]]
        scored = scored.assign(accepted=True)
        assert sum(r["severe_errors"] for r in rows) > 0  # not vacuous: severe and other errors both
        assert sum(r["accepted_labelled"] - r["accepted_correct"] for r in rows) > sum(
            r["severe_errors"] for r in rows
        )
    assert sum(r["accepted_labelled"] for r in rows) > 0
    for row in rows:
        ref = scope(scored, row["decision_type"], row["week"], row["model_key"])
        taken = ref[ref.accepted & ref.labelled]
        assert (row["scored"], row["accepted"], row["labelled"], row["unlabelled"]) == (
            len(ref),
            int(ref.accepted.sum()),
            int(ref.labelled.sum()),
            int((~ref.labelled).sum()),
        ), row
        assert (row["accepted_labelled"], row["accepted_correct"]) == (len(taken), int(taken.correct.sum()))
        assert row["severe_errors"] == int((~taken.correct & taken.high).sum())


def test_labelled_and_unlabelled_confidence_on_the_grid(computed: Computed, scored: pd.DataFrame) -> None:
    """Mean and (population) sd of floor(confidence x 100) / 100, labelled and unlabelled apart."""
    for row in rows_of(computed, "evidence"):
        if row["policy"] != "none" or not row["scored"]:
            continue
        ref = scope(scored, row["decision_type"], row["week"], row["model_key"])
        for flag, prefix in ((True, "labelled"), (False, "unlabelled")):
            values = ref[ref.labelled == flag].grid.to_numpy()
            if len(values) == 0:
                assert row[f"{prefix}_confidence_mean"] is None
                continue
            assert row[f"{prefix}_confidence_mean"] == pytest.approx(values.mean(), rel=1e-9)
            assert row[f"{prefix}_confidence_sd"] == pytest.approx(values.std(), rel=1e-6, abs=1e-9)


def test_the_ledger_sums_every_mature_week_since_it_opened(computed: Computed, scored: pd.DataFrame) -> None:
    """One run over W44..W48, every week mature: each W48 ledger holds the sum of its key's weeks."""
    rows = [r for r in rows_of(computed, "evidence") if r["policy"] == "none" and r["week"] == "2026-W48"]
    assert rows
    for row in rows:
        ref = scored[(scored.decision_type == row["decision_type"]) & (scored.model_key == row["model_key"])]
        taken = ref[ref.accepted & ref.labelled]
        assert row["ledger_accepted_labelled"] == len(taken)
        assert row["ledger_accepted_correct"] == int(taken.correct.sum())
        assert row["ledger_severe_errors"] == int((~taken.correct & taken.high).sum())
        assert row["weeks_covered"] == ref.week.nunique()
        assert row["counted_through"] == "2026-W48"
        assert row["provisional_accepted_labelled"] == 0
