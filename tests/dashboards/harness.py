"""Plain helpers of the dashboards tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pipelines import synth
from pipelines.generate import Plan
from tests.pipelines.harness import run_window

if TYPE_CHECKING:
    from pathlib import Path


WEEK = "2026-W48"


PLAN = Plan(
    decisions=20_000,
    weeks=5,
    drift_week=4,
    seed=5,
    knobs=synth.Knobs(challenger=synth.CHALLENGER, identity_change=synth.IdentityChange(week=4)),
)
"""Two candidates (``default``, ``challenger``) on the same decisions; W48 drifted, and ``default``'s KV
type changes on its Thursday."""


TRIAL = Plan(
    decisions=6_000,
    weeks=3,
    drift_week=None,
    seed=11,
    knobs=synth.Knobs(
        types=(dataclasses.replace(synth.DEFAULT_TYPES[0], share=1.0),),
        fleets=(dataclasses.replace(synth.DEFAULT_FLEETS[0], share=1.0),),
        models=(dataclasses.replace(synth.DEFAULT_MODELS[0], share=1.0),),
        challenger=synth.CHALLENGER,
    ),
)
"""Records shaped like a trial's: one type, one fleet, ``default`` and ``challenger`` on the same
decisions, 2026-W44..W46."""
TRIAL_WEEK = "2026-W46"


def run_marts(records: Path, out: Path, first: str, last: str) -> Path:
    """Every mart of ``records`` over the weeks ``first..last``, written under ``out`` (one `run_window`)."""
    computed = run_window(records, out, first=first, last=last)
    computed.con.close()
    return out
