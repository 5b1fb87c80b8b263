"""Scheduled DuckDB jobs over the shadow records: agreement, calibration, drift, thresholds, cost."""
