# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Scheduled DuckDB jobs over the shadow records: agreement, calibration, drift, thresholds, cost."""
