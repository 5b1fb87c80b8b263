# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""records-v1 as Arrow schemas (``../shared/spec/records-v1.md``).

The one definition both the writer and the pipelines read.
"""

from __future__ import annotations

import pyarrow as pa

RECORD_VERSION = 1

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
])

OUTCOMES = pa.schema([
    ("record_version", pa.int16()),
    ("decision_id", pa.string()),
    ("decision_type", pa.string()),
    ("outcome", pa.string()),
    ("outcome_at", TS),
    ("source", pa.string()),
    ("writer_id", pa.string()),
])

STATUSES = ("scored", "dropped", "timeout", "error", "invalid_response", "lost")
