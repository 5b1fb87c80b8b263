"""Latency mart: exact percentiles against numpy, throughput, and CPU and GPU side by side."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from tests.pipelines.harness import Computed, mart
from tests.pipelines.reference import matching

if TYPE_CHECKING:
    from tests.pipelines.reference import Records


def test_latency_percentiles_match_numpy(computed: Computed, records: Records) -> None:
    """p50/p95/p99 of scorer and end-to-end time per fleet equal numpy.percentile (linear) of scored rows."""
    scored = records.decisions[records.decisions.status == "scored"]
    rows = mart(computed, "latency")
    assert len(rows) == 20  # 2 types x 5 weeks x (CPU, GPU)
    for row in rows:
        ref = matching(scored, row, "decision_type", "week", "instance_type", "device")
        assert row["decisions"] == len(ref)
        np.testing.assert_allclose(
            [row["scorer_p50_ms"], row["scorer_p95_ms"], row["scorer_p99_ms"]],
            np.percentile(ref.scorer_ms, [50, 95, 99]),
            rtol=1e-12,
        )
        np.testing.assert_allclose(
            [row["total_p50_ms"], row["total_p95_ms"], row["total_p99_ms"]],
            np.percentile(ref.total_ms, [50, 95, 99]),
            rtol=1e-12,
        )
        assert row["decisions_per_hour"] == pytest.approx(len(ref) / 168)
        assert row["peak_per_hour"] == ref.received_at.dt.floor("h").value_counts().max()


def test_cpu_and_gpu_latency_have_the_generated_medians(computed: Computed) -> None:
    """The generator's lognormal medians (180 ms on ml.c6i.8xlarge.

    25 ms on ml.g6e.xlarge) come back, and end-to-end time is never below scorer time.
    """
    for row in mart(computed, "latency"):
        median = {"cpu": 180.0, "cuda": 25.0}[row["device"]]
        assert row["scorer_p50_ms"] == pytest.approx(median, rel=0.1)
        assert row["scorer_p50_ms"] <= row["scorer_p95_ms"] <= row["scorer_p99_ms"]
        assert row["total_p50_ms"] >= row["scorer_p50_ms"]
