"""The audited gate's error rates on the shipped path: records, ``audit sample``, answers, ``pipelines run``.

Each of ``TYPES`` decision types is one replicate (``bench/audited_sim.py``): 1,000 decisions, production
wrong on 10%, the candidate exactly at the margin (12%), copying production's answer on half the
decisions. A pass is false; at look 1 the gate tests at alpha_1 = 0.025 * 6 / pi^2 = 1.52%, so the
false-pass share must stay under 2.5% + 2 standard errors (3.2% at 2,000 replicates): a rule twice too
loose (5%) fails it with near certainty. The mart's 95% intervals must hold the process's rates in at least
94% of the replicates.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pytest

from bench.audited_sim import FLAGS, Result, Setup, simulate

if TYPE_CHECKING:
    from pathlib import Path

TYPES = 2000
ALPHA = 0.025


@pytest.fixture(scope="module")
def at_margin(tmp_path_factory: pytest.TempPathFactory) -> Result:
    """One look at 2,000 types with the candidate exactly at the margin."""
    folder: Path = tmp_path_factory.mktemp("audited_sim")
    return simulate(Setup(types=TYPES, weeks=1, decide_types=20), folder)


@pytest.mark.slow
def test_the_gate_passes_a_candidate_at_the_margin_at_most_alpha(at_margin: Result) -> None:
    """False pass <= 2.5% + 2 standard errors over 2,000 replicates (one look)."""
    share = float(at_margin.passed[:, 0].mean())
    assert share <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / TYPES), share


@pytest.mark.slow
def test_the_intervals_hold_the_rates_in_the_typical_week(at_margin: Result) -> None:
    """Production's, the candidate's and the difference's 95% intervals hold the truth in >= 94% of types.

    The typical week: every disagreement audited (about 110 of 1,000), 2% of agreements (about 18, with
    0-3 errors among them), a perfect auditor.
    """
    for name in ("production", "candidate", "diff"):
        held = at_margin.covered[name]
        assert len(held) == TYPES
        assert np.mean(held) >= 0.94, (name, np.mean(held))


@pytest.mark.slow
def test_decide_waits_on_the_audited_gate_and_names_it(at_margin: Result) -> None:
    """``decide()`` on the first types: never GO, and each failing audited gate is among the reasons."""
    assert at_margin.decided
    assert "go" not in at_margin.decided
    failed = int((~at_margin.passed[:20, 0]).sum())
    assert len(at_margin.reasons) == failed > 0


def test_the_command_has_a_flag_for_every_setting() -> None:
    """``bench/audited_sim.py``'s flags are the ``Setup`` fields, each once."""
    assert sorted(f.removeprefix("--").replace("-", "_") for f in FLAGS) == sorted(vars(Setup()))
