"""One-hot rows (the chat backend without log-probabilities) are left out of every calibration metric.

The same generated records are run twice: alone, and with one-hot copies of a third of the scored rows
beside them (``tests/pipelines/one_hot.py``): half under the originals' ``model_key``, half as candidate
``chat``, whose rows are all one-hot. The calibration figures of the normal model keys and of '*' must be
those of the normal rows alone, the count of rows left out is reported, the counting marts (agreement,
selective) include the one-hot rows, and a ``chat`` key has counts but no calibration figure.
"""

from __future__ import annotations

import math
import shutil
from typing import TYPE_CHECKING

import pandas as pd
import pytest

from pipelines.generate import Plan, generate
from pipelines.storage import open_root
from tests.pipelines.harness import Computed, mart, run_window
from tests.pipelines.one_hot import CHAT, add_one_hot_rows

if TYPE_CHECKING:
    from collections.abc import Iterator

PLAN = Plan(decisions=6_000, weeks=2, drift_week=None, seed=17)
FIRST, LAST = "2026-W44", "2026-W45"
CALIBRATION = [
    "ece", "ece_debiased", "ece_low", "ece_high", "mce", "bins", "classwise_ece", "brier", "brier_baseline",
    "log_loss", "log_loss_baseline", "outside_options",
]
"""The calibration mart's figures (its `labelled` and `label_rate` count every labelled decision)."""
UNCHANGED = {
    "reliability": None,
    "ece_bootstrap": None,
    "classwise_calibration": None,
    "risk_coverage": None,
    "drift_confidence": None,
    "thresholds": ["grid_index", "threshold", "accepted", "accepted_correct", "precision", "precision_lower"],
}
"""Marts (and their columns; None: all) that read probabilities and must not see the one-hot rows."""
SCOPE = ["decision_type", "week", "model_key"]
KEYS = {*SCOPE, "week_start", "bin", "option_id", "threshold", "grid_index"}


Runs = tuple[Computed, Computed, int]
"""The normal rows' marts, the marts with one-hot rows beside, the number of labelled one-hot rows."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    """The marts of the normal rows alone and with one-hot rows beside; how many of those are labelled."""
    normal = tmp_path_factory.mktemp("normal")
    generate(open_root(str(normal)), PLAN)
    mixed = tmp_path_factory.mktemp("mixed") / "records"
    shutil.copytree(normal, mixed)
    labelled = add_one_hot_rows(mixed)
    alone = run_window(normal, None, first=FIRST, last=LAST)
    beside = run_window(mixed, None, first=FIRST, last=LAST)
    yield alone, beside, labelled
    alone.con.close()
    beside.con.close()


def frame(run: Computed, name: str, columns: list[str] | None = None) -> pd.DataFrame:
    """A mart's rows of the normal model keys and '*' in a total order (key columns first), as a DataFrame."""
    rows = pd.DataFrame(mart(run, name))
    rows = rows[~rows.model_key.str.startswith(f"{CHAT} ")]
    keys = [c for c in rows.columns if c in KEYS]
    rows = rows[keys + [c for c in (columns or rows.columns) if c not in keys]]
    return rows.sort_values(keys, na_position="first").reset_index(drop=True)


def test_calibration_figures_are_those_of_the_normal_rows_alone(runs: Runs) -> None:
    """ECE and its interval, MCE, classwise ECE, Brier and log-loss are unchanged by the one-hot rows."""
    alone, beside, labelled = runs
    assert labelled > 500  # the one-hot rows are there, and labelled
    pd.testing.assert_frame_equal(
        frame(beside, "calibration", CALIBRATION), frame(alone, "calibration", CALIBRATION),
        check_exact=False, rtol=1e-12, check_dtype=False,  # `bins` is float beside: null on the chat keys
    )


@pytest.mark.parametrize("name", sorted(UNCHANGED))
def test_probability_marts_do_not_see_the_one_hot_rows(runs: Runs, name: str) -> None:
    """Reliability, ECE bootstrap, classwise calibration, risk-coverage, confidence drift, thresholds.

    Each equals the mart of the normal rows alone.
    """
    alone, beside, _ = runs
    pd.testing.assert_frame_equal(
        frame(beside, name, UNCHANGED[name]), frame(alone, name, UNCHANGED[name]),
        check_exact=False, rtol=1e-12,
    )


def test_the_calibration_mart_counts_what_it_left_out(runs: Runs) -> None:
    """`one_hot_excluded`: 0 without one-hot rows, else the labelled decisions agreement gained.

    Per scope; over all models ('*') it sums to every labelled one-hot row.
    """
    alone, beside, labelled = runs
    assert {row["one_hot_excluded"] for row in mart(alone, "calibration")} == {0}
    gained = frame(beside, "agreement", ["labelled"]).merge(frame(alone, "agreement", ["labelled"]), on=SCOPE)
    excluded = frame(beside, "calibration", ["one_hot_excluded", "labelled"]).merge(gained, on=SCOPE)
    assert (excluded.one_hot_excluded == excluded.labelled_x - excluded.labelled_y).all()
    assert (excluded.labelled == excluded.labelled_x).all()
    assert excluded[excluded.model_key == "*"].one_hot_excluded.sum() == labelled


def test_counting_marts_keep_the_one_hot_rows(runs: Runs) -> None:
    """Agreement counts them as labelled, selective as scored and routed to review, never accepted."""
    alone, beside, labelled = runs
    agreement = frame(beside, "agreement", ["labelled"]).merge(
        frame(alone, "agreement", ["labelled"]), on=SCOPE)
    everything = agreement[agreement.model_key == "*"]
    assert (everything.labelled_x - everything.labelled_y).sum() == labelled
    columns = ["scored", "accepted", "routed_to_review"]
    selective = frame(beside, "selective", columns).merge(frame(alone, "selective", columns), on=SCOPE)
    assert (selective.accepted_x == selective.accepted_y).all()
    gained = selective.scored_x - selective.scored_y
    assert (gained == selective.routed_to_review_x - selective.routed_to_review_y).all()
    assert (selective.scored_x > selective.scored_y).all()


def test_a_model_whose_rows_are_all_one_hot_has_counts_and_no_figures(runs: Runs) -> None:
    """The ``chat`` keys: a calibration row with counts and null figures, and nothing to accept.

    `labelled` = `one_hot_excluded`; no threshold, risk-coverage, reliability or classwise row; every
    scored decision is routed to review.
    """
    _, beside, _ = runs
    calibration = [r for r in mart(beside, "calibration") if str(r["model_key"]).startswith(f"{CHAT} ")]
    assert calibration
    for row in calibration:
        assert row["labelled"] == row["one_hot_excluded"] > 0
        figures = [row[name] for name in CALIBRATION if name != "outside_options"]
        assert all(value is None or math.isnan(value) for value in figures), row
    for name in ("thresholds", "risk_coverage", "reliability", "classwise_calibration"):
        assert not [r for r in mart(beside, name) if str(r["model_key"]).startswith(f"{CHAT} ")], name
    selective = [r for r in mart(beside, "selective") if str(r["model_key"]).startswith(f"{CHAT} ")]
    assert selective
    assert all(r["accepted"] == 0 and r["routed_to_review"] == r["scored"] > 0 for r in selective)
