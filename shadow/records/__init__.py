# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Durable shadow records (records v1.1, ``docs/records.md``).

The sink interface the sidecar writes through (``sink.py``) and the `RecordStore` behind it: the
journal, Parquet roll-over, S3 upload, recovery and compaction. The schema lives in
``contracts.records``.
"""
