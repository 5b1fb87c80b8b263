"""Records v1.1 as Arrow schemas, the Parquet settings, and the model identity key.

The one definition that the sidecar's writer, the pipelines and the review read (``docs/records.md``).
v1.1 is additive: files written before it lack the `V1_1_PROPOSALS` / `V1_1_OUTCOMES` columns and carry
``record_version`` 1; readers treat the missing columns as null. Files with them carry 2.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

import pyarrow as pa

RECORD_VERSION: Final = 2
"""What this writer puts in ``record_version``: 2 is records v1.1 (1: v1, without the new columns)."""

COMPRESSION: Final = "zstd"
"""The Parquet codec of every records file (the sidecar's, compaction's and the generator's)."""

FORMAT_KEY: Final = b"semif.records"
FORMAT_VALUE: Final = b"v1.1"
"""Parquet footer key and value naming the records format of a file (files before v1.1 say ``v1``)."""

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
