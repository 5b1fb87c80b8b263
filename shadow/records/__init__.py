# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Durable shadow records (records-v1).

The schema, the sink interface the sidecar writes through, and (issue 5) the journal,
Parquet roll-over, S3 upload and compaction behind it.
"""
