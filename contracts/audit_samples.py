"""Audit samples: which decisions of a week people are asked to judge, with their inclusion probabilities.

``semif-shadow audit sample`` writes one file per week and decision type, under the records root:

    <root>/audit_samples/week=<YYYY-Www>/decision_type=<t>/part-0.parquet

The workbench shows its rows to auditors; the pipelines' ``correctness`` marts weight each audited row by
its stratum (``docs/pipelines.md``). A sample is drawn once and never rewritten.
"""

from __future__ import annotations

from typing import Final

import pyarrow as pa

FOLDER: Final = "audit_samples"
FILE_NAME: Final = "part-0.parquet"

STRATUM_DISAGREE: Final = "disagree"
"""Some candidate's proposal differs from production's outcome."""
STRATUM_AGREE: Final = "agree"
"""Every candidate that scored the decision proposed production's outcome."""

AUDIT_SAMPLES = pa.schema([
    ("sample_id", pa.string()),
    ("decision_id", pa.string()),
    ("decision_type", pa.string()),
    ("week", pa.string()),
    ("stratum", pa.string()),
    ("inclusion_probability", pa.float64()),
    ("double_audit", pa.bool_()),
    ("stratum_decisions", pa.int64()),
])
"""One row per sampled decision. ``sample_id`` names the sample (the same on every row of a file; audits
carry it as ``audit_sample``); ``inclusion_probability`` = sampled / ``stratum_decisions`` (the labelled
decisions of the stratum when the sample was drawn, a simple random sample without replacement within
each stratum); ``double_audit`` marks the rows meant to be answered by two auditors."""


def sample_path(week: str, decision_type: str) -> str:
    """The sample file's path relative to the records root."""
    return f"{FOLDER}/week={week}/decision_type={decision_type}/{FILE_NAME}"
