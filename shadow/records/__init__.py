"""Durable shadow records (records-v1): the schema, the sink interface the sidecar writes through,
and (issue 5) the journal, Parquet roll-over, S3 upload and compaction behind it."""
