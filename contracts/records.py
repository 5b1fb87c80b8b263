"""Records v1.2 as Arrow schemas, the Parquet settings, and the model identity key.

The one definition that the sidecar's writer, the pipelines and the review read (``docs/records.md``).
Each version only adds columns: files written before v1.1 lack the `V1_1_PROPOSALS` / `V1_1_OUTCOMES`
columns and carry ``record_version`` 1; files written before v1.2 lack `V1_2_OUTCOMES` and carry 2.
Readers treat a missing added column (`ADDED_AFTER_V1`) as null. Files with every column carry 3.

v1.2 adds audits: an outcomes row with ``source = 'audit'`` (`SOURCE_AUDIT`) is a person's answer to
"what was right" for a decision of an audit sample, not production's outcome; its ``outcome`` is an
option id or `NONE_OF_THESE`.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Final

import pyarrow as pa

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Collection

RECORD_VERSION: Final = 3
"""What this writer puts in ``record_version``: 3 is records v1.2 (2: v1.1, 1: v1, lacking later columns)."""

COMPRESSION: Final = "zstd"
"""The Parquet codec of every records file (the sidecar's, compaction's and the generator's)."""

FORMAT_KEY: Final = b"semif.records"
FORMAT_VALUE: Final = b"v1.2"
"""Parquet footer key and value naming the records format of a file (older files say ``v1.1`` or ``v1``)."""

DEFAULT_CANDIDATE: Final = "default"
"""The candidate name of a decision type's only scorer, when the catalog names none."""

TS = pa.timestamp("us", tz="UTC")

PROPOSALS = pa.schema([
    ("record_version", pa.int16()),
    ("decision_id", pa.string()),
    ("decision_type", pa.string()),
    ("received_at", TS),
    ("sampled", pa.bool_()),
    ("status", pa.string()),
    ("reason", pa.string()),
    ("option_ids", pa.list_(pa.string())),
    ("probabilities", pa.list_(pa.float64())),
    ("logits", pa.list_(pa.float64())),
    ("proposal", pa.string()),
    ("proposal_probability", pa.float64()),
    ("backend", pa.string()),
    ("endpoint", pa.string()),
    ("model_name", pa.string()),
    ("model_sha256", pa.string()),
    ("quantization", pa.string()),
    ("runtime_version", pa.string()),
    ("device", pa.string()),
    ("instance_type", pa.string()),
    ("image_digest", pa.string()),
    ("prompt_builder", pa.string()),
    ("template_sha256", pa.string()),
    ("prompt_tokens", pa.int32()),
    ("cached_tokens", pa.int32()),
    ("truncated", pa.bool_()),
    ("queue_ms", pa.float64()),
    ("scorer_ms", pa.float64()),
    ("total_ms", pa.float64()),
    ("attempts", pa.int16()),
    ("state_sha256", pa.string()),
    ("state", pa.string()),
    ("writer_id", pa.string()),
    ("config_sha256", pa.string()),
    # v1.1
    ("candidate", pa.string()),
    ("normalization", pa.string()),
    ("model_identity", pa.string()),
    ("model_identity_sha256", pa.string()),
])

OUTCOMES = pa.schema([
    ("record_version", pa.int16()),
    ("decision_id", pa.string()),
    ("decision_type", pa.string()),
    ("outcome", pa.string()),
    ("outcome_at", TS),
    ("source", pa.string()),
    ("writer_id", pa.string()),
    # v1.1
    ("in_options", pa.bool_()),
    # v1.2
    ("auditor", pa.string()),
    ("audit_sample", pa.string()),
])

DROPS = pa.schema([
    ("record_version", pa.int16()),
    ("decision_type", pa.string()),
    ("candidate", pa.string()),
    ("minute", TS),
    ("reason", pa.string()),
    ("dropped", pa.int64()),
    ("writer_id", pa.string()),
])
"""v1.1 drop summaries: decisions dropped before they were accepted, counted per minute and reason."""

V1_1_PROPOSALS: Final = frozenset({"candidate", "normalization", "model_identity", "model_identity_sha256"})
V1_1_OUTCOMES: Final = frozenset({"in_options"})
ADDED_IN_V1_1: Final = {"proposals": V1_1_PROPOSALS, "outcomes": V1_1_OUTCOMES}
"""Columns that files written before v1.1 lack (read as null)."""
V1_2_OUTCOMES: Final = frozenset({"auditor", "audit_sample"})
ADDED_IN_V1_2: Final = {"proposals": frozenset[str](), "outcomes": V1_2_OUTCOMES}
"""Columns that files written before v1.2 lack (read as null)."""
ADDED_AFTER_V1: Final = {name: ADDED_IN_V1_1[name] | ADDED_IN_V1_2[name] for name in ADDED_IN_V1_1}
"""Every column a records file may lack (it was written by an older version): read as null."""

SOURCE_AUDIT: Final = "audit"
"""The ``source`` of an audit: an auditor's answer, kept apart from production's outcome by every reader."""
NONE_OF_THESE: Final = "(none of these)"
"""An auditor's answer when no option was right; the catalog refuses an option with this id."""



def audit_outcome(  # noqa: PLR0913  (every field of the answer, by name)
    *, sample_id: str, decision_id: str, decision_type: str, auditor: str, answer: str,
    options: Collection[str], at: dt.datetime,
) -> dict[str, Any]:
    """One auditor's answer to a sampled decision as an ``OUTCOMES`` row (``source`` audit).

    Every writer of audits builds its rows here (the workbench, the records generator's and the demo's
    simulated auditors); ``record_version`` and ``writer_id`` are the writer's (a record store adds its
    own).
    """
    return {"decision_id": decision_id, "decision_type": decision_type, "outcome": answer, "outcome_at": at,
            "source": SOURCE_AUDIT, "in_options": answer in options, "auditor": auditor,
            "audit_sample": sample_id}


SCHEMAS: Final = {"proposals": PROPOSALS, "outcomes": OUTCOMES}
"""The two row datasets by name (drops are summaries, written apart)."""

STATUSES = ("scored", "dropped", "timeout", "error", "invalid_response", "lost")


def model_identity(model: dict[str, Any], prompt_builder: str | None, template_sha256: str | None,
                   normalization: str | None) -> tuple[str, str]:
    """``(model_identity, model_identity_sha256)`` of a scored row.

    The identity is the response's whole ``model`` object, as returned, plus the prompt identity and
    the normalization, as canonical JSON (sorted keys, no spaces); its sha256 is the key the pipelines
    group quality metrics by. Anything that differs (device, runtime, threads, KV type, segmentation,
    template, normalization...) is a different model.
    """
    identity = {"model": model, "prompt": {"builder": prompt_builder, "template_sha256": template_sha256},
                "normalization": normalization}
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text, hashlib.sha256(text.encode()).hexdigest()
